"""Storage options: which schemes each engine reads, options refused before the engine sees them, the values that
are secrets, and the mapping of delta-rs and pyiceberg FileIO options to obstore (conditional PUTs)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlparse

from attest.errors import AttestError, Code, UnsupportedStorageError
from attest.numbers import is_digits

# The schemes each engine can read a table from (delta-rs: object_store's schemes; pyiceberg: its FileIO registry).
ENGINE_SCHEMES = {
    "delta-rs": frozenset({"file", "s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "adl", "memory", "lakefs"}),
    "pyiceberg": frozenset({"file", "s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "hdfs",
                            "viewfs", "oss", "hf"}),
}


def scheme_of(uri: str) -> str:
    scheme = urlparse(uri).scheme.lower()
    return scheme if len(scheme) > 1 else "file"


def check_supported(engine: str, uri: str) -> None:
    """Refuse, with one coded line, a table on a store ``engine`` cannot read (``unsupported_storage``)."""
    scheme = scheme_of(uri)
    if scheme not in ENGINE_SCHEMES[engine]:
        known = ", ".join(f"{s}://" for s in sorted(ENGINE_SCHEMES[engine] - {"file", "memory"}))
        hint = ("; an Iceberg table is named iceberg://<catalog>/<namespace>.<table>, its catalog (a SQL database, a "
                "REST server) configured for pyiceberg" if engine == "delta-rs" else "")
        raise UnsupportedStorageError(f"{engine} cannot read tables on {scheme}:// storage ({uri.split('://')[0]}://"
                                      f"…); it reads local paths and {known}{hint}")


def check_options(options: Mapping[str, str]) -> None:
    """Options the engine would choke on, refused before it sees them: an endpoint that is not an http(s) URL makes
    delta-rs (object_store) panic on a worker thread and print a Rust backtrace."""
    for key, value in options.items():
        low = key.lower()
        if "endpoint" in low or (low.endswith("_url") and "proxy" not in low):
            parsed = urlparse(value)
            try:
                port_ok = parsed.port is None or 0 < parsed.port < 65536
            except ValueError:
                port_ok = False
            if parsed.scheme not in ("http", "https") or not parsed.hostname or not port_ok or \
                    any(c.isspace() for c in value):
                raise AttestError(f"storage option {key} is not an http(s) URL with a host (value not shown)",
                                  code=Code.INVALID_ARGUMENT)


def option_secrets(options: Mapping[str, str]) -> list[str]:
    """The values of ``options`` that may be credentials: every value except switches, numbers, and endpoints,
    regions and account names that look like one (a mistyped switch holding a secret is still masked)."""
    out = []
    for key, value in options.items():
        low = key.lower()
        if value.lower() in ("true", "false") or is_digits(value):
            continue
        parsed = urlparse(value)
        if ("endpoint" in low or low.endswith("url")) and parsed.scheme in ("http", "https") and \
                "@" not in parsed.netloc and not parsed.query:
            continue
        if ("region" in low or "account_name" in low) and re.fullmatch(r"[a-z0-9-]{1,40}", value):
            continue
        out.append(value)
    return out


# delta-rs option names -> obstore (object_store) configuration: the same Rust crate, so the same keys, except the
# client options (which object_store nests) and delta-rs's own keys (locking, unsafe rename), which obstore refuses.
_CLIENT_KEYS = frozenset({"allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
                          "http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
                          "http2_keep_alive_while_idle", "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url",
                          "proxy_ca_certificate", "proxy_excludes", "timeout", "user_agent"})
_DELTA_ONLY = ("aws_s3_allow_unsafe_rename", "aws_s3_locking_provider", "dynamo", "aws_force_credential_load",
               "aws_profile", "max_retries", "retry_timeout")
_STORE_PREFIX = {"s3": "aws_", "s3a": "aws_", "gs": "google_", "az": "azure_", "abfs": "azure_", "abfss": "azure_",
                 "azure": "azure_", "adl": "azure_"}


def obstore_config(scheme: str, options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]] | None:
    """(config, client options) for obstore from delta-rs-style options; None when the scheme has no mapping."""
    prefix = _STORE_PREFIX.get(scheme)
    if prefix is None:
        return None
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        if any(low.startswith(d) or d in low for d in _DELTA_ONLY):
            continue
        bare = low.removeprefix(prefix)
        if bare in _CLIENT_KEYS or low in _CLIENT_KEYS:
            client[bare] = value
        elif low.startswith(prefix):
            config[low] = value
        elif scheme in ("s3", "s3a") and low in ("endpoint_url", "endpoint", "region", "access_key_id",
                                                 "secret_access_key", "session_token"):
            config[prefix + low] = value
    if scheme in ("s3", "s3a") and "aws_endpoint_url" in config:
        config["aws_endpoint"] = config.pop("aws_endpoint_url")
    # obstore reads its store keys (endpoint, credentials) from the environment itself but not its client keys,
    # which delta-rs does read there: without this, AWS_ALLOW_HTTP in the environment (a job's only settings, as
    # in a Spark job's hook) reaches delta-rs but not our writes ("builder error" on an http:// endpoint).
    for switch in ("allow_http", "allow_invalid_certificates"):
        found = os.environ.get(f"{prefix}{switch}".upper())
        if switch not in client and found is not None:
            client[switch] = found
    return config, client


def environment_options(uri: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The store settings delta-rs takes from the environment for ``uri`` (``AWS_*`` for S3, ``GOOGLE_*`` for GCS,
    ``AZURE_*`` for Azure), as storage options: what another process (a Spark executor) needs to read the store the
    way this one does. Local tables: none."""
    prefix = _STORE_PREFIX.get(scheme_of(uri))  # the store's own option prefix, as its variables spell it upper-case
    if prefix is None:
        return {}
    env = os.environ if environ is None else environ
    return {key: value for key, value in env.items() if key.startswith(prefix.upper())}


_S3_FILEIO_NAMES = (
    ("s3.endpoint", "aws_endpoint"), ("s3.access-key-id", "aws_access_key_id"),
    ("s3.secret-access-key", "aws_secret_access_key"), ("s3.session-token", "aws_session_token"),
    ("s3.region", "aws_region"), ("client.region", "aws_region"), ("client.access-key-id", "aws_access_key_id"),
    ("client.secret-access-key", "aws_secret_access_key"), ("client.session-token", "aws_session_token"),
)
_ADLS_FILEIO_NAMES = {"adls.account-name": "azure_storage_account_name",
                      "adls.account-key": "azure_storage_account_key", "adls.sas-token": "azure_storage_sas_key"}
# FileIO properties that change no object a read reaches (timeouts, retries, write-side encryption).
_FILEIO_READ_NEUTRAL = frozenset({"s3.connect-timeout", "s3.request-timeout", "s3.retry-strategy-impl",
                                  "s3.server-side-encryption", "s3.sse-kms-key-id", "s3.sse-type", "s3.sse-key",
                                  "s3.sse-md5"})


def fileio_reads_mapped(scheme: str, props: Mapping[str, str]) -> bool:
    """Whether every FileIO property of ``scheme``'s family (``s3.*`` and ``client.*``; ``adls.*``) that is set is
    one :func:`fileio_obstore_config` maps or one that changes no object a read reaches: only then does a store
    built from them read, for a location, the object the FileIO reads. A property it does not map (a proxy, a role
    to assume, virtual-host addressing, anonymous access, a profile, a remote signer, another storage authority:
    settings a table's own metadata may carry) leaves the data objects to the FileIO (security.md, round 21)."""
    if scheme in ("s3", "s3a", "s3n"):
        known = {name for name, _ in _S3_FILEIO_NAMES} | _FILEIO_READ_NEUTRAL
        family: tuple[str, ...] = ("s3.", "client.")
    elif scheme in ("abfs", "abfss", "wasb", "wasbs"):
        known = {*_ADLS_FILEIO_NAMES, "adls.blob-storage-authority", "adls.blob-storage-scheme"}
        family = ("adls.",)
    else:
        return False
    return not any(str(k).startswith(family) and k not in known and v not in (None, "") for k, v in props.items())


def fileio_obstore_config(scheme: str, props: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]] | None:
    """obstore configuration from pyiceberg FileIO properties (S3 and Azure; GCS emulators and others: None, and
    the FileIO's own single PUT is used)."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    if scheme in ("s3", "s3a", "s3n"):
        # pyiceberg's precedence (get_first_property_value): an s3.* property over its client.* twin, whatever
        # their order in the properties (a table's own properties are merged over the catalog's).
        for name, key in _S3_FILEIO_NAMES:
            if key not in config and props.get(name):
                config[key] = str(props[name])
        if config.get("aws_endpoint", "").startswith("http://"):
            client["allow_http"] = "true"
        return config, client
    if scheme in ("abfs", "abfss", "wasb", "wasbs"):
        config = {_ADLS_FILEIO_NAMES[k]: str(v) for k, v in props.items() if k in _ADLS_FILEIO_NAMES}
        authority = props.get("adls.blob-storage-authority")
        if authority:
            scheme_ = props.get("adls.blob-storage-scheme", "https")
            account = config.get("azure_storage_account_name", "")
            # A custom authority (an emulator, a private endpoint) serves the account path-style.
            config["azure_storage_endpoint"] = f"{scheme_}://{authority}/{account}"
            if scheme_ == "http":
                client["allow_http"] = "true"
        return config, client
    return None
