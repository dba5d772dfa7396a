"""Trust policies: whom a verifier trusts to attest what, and the judgement of one envelope under them.

A policy is an object (loaded from TOML, or built from one public key) and ``TrustPolicy.evaluate`` returns a
``SignatureResult`` — data with a code and the signer's key id — never a bare bool. The file format is in
docs/signing.md.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import posixpath
import re
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from attest.errors import Code, Problem
from attest.signing.dsse import verify_envelope
from attest.signing.errors import KeyInvalidError, PolicyInvalidError, SigningError
from attest.signing.keys import PublicKey
from attest.signing.statement import Target, parse_statement

POLICY_VERSION = 1
_TOP_FIELDS = {"version", "require_signed", "keys"}
_KEY_FIELDS = {"id", "public_key", "public_key_pem", "tables", "models", "not_before", "not_after", "revoked"}


@dataclass(frozen=True)
class SignatureResult:
    """The judgement of one attestation's signature under a policy.

    ``passed`` with ``signer`` set: a trusted, current, allowed key signed exactly this subject. ``passed`` with
    ``signer`` None: unsigned, and the policy does not require a signature here. Otherwise ``code`` says why.
    """

    passed: bool
    code: Code | None
    message: str
    signer: str | None = None
    signed: bool = False
    required: bool = True
    verified_keys: tuple[str, ...] = ()
    # The require_signed globs that cover the table (a table's judgement; None: not known). An audit says which globs
    # covered none of its tables: a glob naming a table that is not there, or spelt otherwise, requires nothing.
    required_by: tuple[str, ...] | None = field(default=None, compare=False)

    @classmethod
    def failure(cls, code: Code, message: str, **kwargs: Any) -> SignatureResult:
        return cls(passed=False, code=code, message=message, **kwargs)

    def problem(self, path: str = "") -> Problem | None:
        return None if self.code is None else Problem(self.code, self.message, path)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "passed": self.passed, "code": None if self.code is None else self.code.value, "message": self.message,
            "signer": self.signer, "signed": self.signed, "required": self.required,
            "verified_keys": list(self.verified_keys)}
        if self.required_by is not None:
            out["required_by"] = list(self.required_by)
        return out


@dataclass(frozen=True)
class TrustedKey:
    """One key of a policy: what it may attest (globs on table URI and on model) and when it is valid."""

    public_key: PublicKey
    tables: tuple[str, ...] = ("*",)
    models: tuple[str, ...] = ("*",)
    not_before: dt.datetime | None = None
    not_after: dt.datetime | None = None
    revoked: bool = False

    @property
    def key_id(self) -> str:
        return self.public_key.key_id

    def refusal(self, target: Target, now: dt.datetime) -> tuple[int, Code, str] | None:
        """None when this key may sign ``target`` at ``now``; else (how far it got, code, reason).

        Checked in order: revoked, validity window, scope — the rank lets a verdict name the furthest any key got.
        """
        if self.revoked:
            return 0, Code.KEY_REVOKED, f"key {self.key_id} is revoked"
        if self.not_before is not None and now < self.not_before:
            return 1, Code.KEY_EXPIRED, f"key {self.key_id} is not valid before {self.not_before.isoformat()}"
        if self.not_after is not None and now > self.not_after:
            return 1, Code.KEY_EXPIRED, f"key {self.key_id} expired at {self.not_after.isoformat()}"
        for name, how in _key_names(target):
            if not any(fnmatchcase(name, glob) for glob in self.tables):
                return 2, Code.SIGNER_NOT_ALLOWED, (f"key {self.key_id} may not attest {name}{how} "
                                                    f"(its tables: {', '.join(self.tables) or 'none'})")
        if not any(fnmatchcase(target.model, glob) for glob in self.models):
            return 2, Code.SIGNER_NOT_ALLOWED, (f"key {self.key_id} may not attest model {target.model!r} "
                                                f"(its models: {', '.join(self.models) or 'none'})")
        return None


@dataclass(frozen=True)
class TrustPolicy:
    """Trusted keys, and the table globs whose attestations must be signed (standalone manifests always must)."""

    keys: tuple[TrustedKey, ...]
    require_signed: tuple[str, ...] = ("*",)
    source: str = field(default="<memory>", compare=False)
    # Each require_signed glob's forms (``_glob_forms``: brace readings, spellings, where its folders' links resolve),
    # computed once for this policy object, when first matched: an audit judges every table against every glob, and
    # recomputing them (a few system calls each) per table cost an audit of 3,000 tables ~15 s. Kept with the object,
    # never process-wide: a link changed after this policy was loaded is seen by the next one loaded.
    _matchers: dict[str, _GlobMatcher] = field(default_factory=dict, init=False, compare=False, repr=False)

    # ---- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_public_key(cls, source: str | os.PathLike[str] | bytes | PublicKey) -> TrustPolicy:
        """``--key PUB.pem``: trust this one key for every table and model, and require a signature everywhere."""
        key = source if isinstance(source, PublicKey) else PublicKey.load(source)
        label = "<PEM bytes>" if isinstance(source, (bytes, PublicKey)) else str(source)
        return cls(keys=(TrustedKey(public_key=key),), source=label)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrustPolicy:
        """A policy from a TOML file; relative ``public_key`` paths are resolved against the file's directory."""
        file = Path(path)
        try:
            text = file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise PolicyInvalidError(f"{file}: cannot read the trust policy ({why or exc})") from exc
        return cls.from_toml(text, base_dir=file.parent, source=str(file))

    @classmethod
    def from_toml(cls, text: str, *, base_dir: str | os.PathLike[str] = ".", source: str = "<toml>") -> TrustPolicy:
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PolicyInvalidError(f"{source}: not valid TOML ({exc})") from exc
        return cls.from_dict(document, base_dir=base_dir, source=source)

    @classmethod
    def from_dict(cls, document: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".",
                  source: str = "<dict>") -> TrustPolicy:
        def bad(message: str, path: str) -> PolicyInvalidError:
            return PolicyInvalidError(f"{source}: {path}: {message}", path=path)

        # Unknown fields are refused: a misspelt "revokd = true" must not silently leave a key trusted.
        unknown = set(document) - _TOP_FIELDS
        if unknown:
            raise bad(f"unknown field(s) {', '.join(sorted(unknown))}", "$")
        version = document.get("version", POLICY_VERSION)
        if type(version) is not int or version != POLICY_VERSION:  # true and 1.0 equal 1 in Python, not in TOML
            raise bad(f"policy version {document.get('version')!r} is not {POLICY_VERSION}", "version")
        require = _globs(document.get("require_signed", ["*"]), "require_signed", bad)
        for index, glob in enumerate(require):
            if len(_hadoop_forms(glob)) >= MAX_GLOB_ALTERNATIVES:  # never a glob read in part
                raise bad(f"the glob {glob!r} has {MAX_GLOB_ALTERNATIVES} or more brace alternatives; split it",
                          f"require_signed[{index}]")
        raw_keys = document.get("keys")
        if not isinstance(raw_keys, list) or not raw_keys:
            raise bad("a trust policy needs at least one [[keys]] entry", "keys")
        keys: list[TrustedKey] = []
        for index, entry in enumerate(raw_keys):
            keys.append(_trusted_key(entry, f"keys[{index}]", Path(base_dir), bad))
        seen: set[str] = set()
        for key in keys:
            if key.key_id in seen:
                raise bad(f"key {key.key_id} is listed twice", "keys")
            seen.add(key.key_id)
        return cls(keys=tuple(keys), require_signed=require, source=source)

    # ---- judgement ------------------------------------------------------------------------------------------------
    def requires_signature(self, target: Target, names: _TableNames | None = None) -> bool:
        """Standalone manifests always (asking for a signature check is asking for a signature); tables by glob,
        matched against every spelling of every name of the table (``table_spellings``), also ignoring case: a table
        reached through a link, by a relative path or another URI spelling is never outside a policy that covers one
        of its names. ``names``: the table's spellings, computed once for a judgement (``evaluate``)."""
        if target.kind == "manifest":
            return True
        names = names or _TableNames(target)
        # The names known without a search decide it when a glob covers one (more names only ever add a need).
        known = names.known
        if any(self._matcher(glob).covers(known) for glob in self.require_signed):
            return True
        return self._required_by(target, names) is not None

    def requiring(self, name: str) -> tuple[str, str] | None:
        """The first (glob, spelling) of ``require_signed`` covering a table known by ``name`` alone (a path or URI an
        audit found but did not judge: a table in a hidden folder), matched as a judged table's names are; None: no
        glob covers it."""
        return self._first_cover(sorted(name_spellings(name)))

    def naming(self, name: str) -> tuple[str, str] | None:
        """``requiring`` by the globs without a wildcard (``*``, ``?``, ``[``; brace alternatives enumerate names, so
        count as naming them): the policy names this table itself, never only a pattern that happens to match it."""
        spellings = sorted(name_spellings(name))
        for glob in self.require_signed:
            if _WILDCARDS.search(glob) is None:
                matcher = self._matcher(glob)
                hit = next((s for s in spellings if matcher.covers([s])), None)
                if hit is not None:
                    return glob, hit
        return None

    def requiring_under(self, folder: str) -> tuple[str, str] | None:
        """``requiring`` for a folder not searched: the first (glob, spelling) covering the folder, any name below it
        (``<folder>/*``), or naming a table below it (a glob whose fixed part starts with the folder's path)."""
        found = self.requiring(folder) or self.requiring(folder.rstrip("/") + "/*")
        if found is not None:
            return found
        prefixes = {_folded(s.rstrip("/")) + "/" for s in name_spellings(folder)}
        for glob in self.require_signed:
            for form in self._matcher(glob).forms:
                fixed = _folded(_WILDCARDS.split(form, 1)[0])
                hit = next((p for p in prefixes if fixed.startswith(p)), None)
                if hit is not None:
                    return glob, hit.rstrip("/")
        return None

    def _matcher(self, glob: str) -> _GlobMatcher:
        matcher = self._matchers.get(glob)
        if matcher is None:
            matcher = self._matchers[glob] = _GlobMatcher.of(glob)
        return matcher

    def _required_by(self, target: Target, names: _TableNames | None = None) -> tuple[str, str] | None:
        """The first (glob, spelling) of ``require_signed`` that covers the table, matched case-sensitively and then
        ignoring case (a case-insensitive file system or store reaches one table by either case); None: none does."""
        if not self.require_signed:  # nothing to match: the table's names are not looked for (a catalog search)
            return None
        return self._first_cover((names or _TableNames(target)).every)

    def _first_cover(self, spellings: list[str]) -> tuple[str, str] | None:
        for glob in self.require_signed:
            matcher = self._matcher(glob)
            for spelling in spellings:
                if matcher.covers([spelling]):
                    return glob, spelling
        return None

    def key(self, key_id: str) -> TrustedKey | None:
        return next((k for k in self.keys if k.key_id == key_id), None)

    def evaluate(self, envelope: bytes | str | Mapping[str, Any] | None, target: Target,
                 *, now: dt.datetime | None = None) -> SignatureResult:
        """Judge ``envelope`` (None: there is none) as the signature of ``target``.

        Passes when some key of the policy verifies a signature over a Statement that attests exactly
        ``target``, and that key is not revoked, is inside its validity window at ``now`` (default: the current
        time) and its globs allow the target's table and model. Otherwise the result names the first failure:
        envelope (signature_missing / signature_invalid), statement (statement_mismatch), then the furthest any
        verifying key got (key_revoked, key_expired, signer_not_allowed). A table's result says which
        ``require_signed`` globs cover it (``required_by``).
        """
        # The table's spellings once for the whole judgement: they were computed four times (a realpath for each
        # name each time), most of an audit's policy work (round 20: 3,000 tables under five globs, 3.2 s → 1.0 s).
        names = _TableNames(target)
        result = self._evaluate(envelope, target, now=now, names=names)
        if target.kind != "table":
            return result
        known = names.known
        # A glob covering a name known without a search covers the table; only the others need every name found
        # (``Target.all_locations``: a catalog search for an Iceberg table's other catalog names).
        rest = [g for g in self.require_signed if not self._matcher(g).covers(known)]
        spellings = names.every if rest else []
        covered = {g for g in rest if self._matcher(g).covers(spellings)}
        return replace(result, required_by=tuple(g for g in self.require_signed if g not in rest or g in covered))

    def _evaluate(self, envelope: bytes | str | Mapping[str, Any] | None, target: Target,
                  *, now: dt.datetime | None = None, names: _TableNames | None = None) -> SignatureResult:
        now = now or dt.datetime.now(dt.UTC)
        if now.tzinfo is None:  # a naive instant is taken as UTC, as the policy file's instants all carry offsets
            now = now.replace(tzinfo=dt.UTC)
        names = names or _TableNames(target)
        required = self.requires_signature(target, names)
        if envelope is None:
            if not required:
                return SignatureResult(passed=True, code=None, required=False,
                                       message=f"unsigned; the policy does not require a signature for "
                                               f"{_described(target)}")
            matched = self._required_by(target, names)
            why = "" if matched is None or matched[1] in (target.scope, target.subject_name) else \
                f" (its glob {matched[0]!r} covers the name {matched[1]!r})"
            return SignatureResult.failure(
                Code.SIGNATURE_MISSING, f"{target.subject_name} carries no signature and the policy requires one{why}",
                required=required)
        try:
            verified = verify_envelope(envelope, [k.public_key for k in self.keys])
            statement = parse_statement(verified.payload)
            reason = target.mismatch(statement)
        except SigningError as err:
            return SignatureResult.failure(err.code, err.message, signed=True, required=required)
        if reason is not None:
            return SignatureResult.failure(Code.STATEMENT_MISMATCH, reason, signed=True, required=required,
                         verified_keys=verified.signers)
        refusals: list[tuple[int, Code, str]] = []
        for key_id in verified.signers:
            key = self.key(key_id)
            assert key is not None  # verify_envelope only names keys it was given
            refusal = key.refusal(target, now)
            if refusal is None:
                return SignatureResult(passed=True, code=None, message=f"signed by {key_id}", signer=key_id,
                                       signed=True, required=required, verified_keys=verified.signers)
            refusals.append(refusal)
        _, code, message = max(refusals, key=lambda r: r[0])
        return SignatureResult.failure(code, message, signed=True, required=required, verified_keys=verified.signers)


def load_policy(source: TrustPolicy | PublicKey | str | os.PathLike[str]) -> TrustPolicy:
    """A trust policy from what an API caller hands over: a ``TrustPolicy``, a ``PublicKey`` (``--key``), or a file —
    a PEM public key (``-----BEGIN``) is trusted alone like ``--key``, anything else is read as a TOML policy."""
    if isinstance(source, TrustPolicy):
        return source
    if isinstance(source, PublicKey):
        return TrustPolicy.from_public_key(source)
    path = Path(source)
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
    except OSError as exc:
        raise PolicyInvalidError(f"{path}: cannot read the trust policy or key ({exc.strerror or exc})") from exc
    if head.lstrip().startswith(b"-----BEGIN"):
        return TrustPolicy.from_public_key(path)
    return TrustPolicy.load(path)


# ---- the names of a table (issue 29.4) ---------------------------------------------------------------------------
# A policy names tables by URI globs; a verifier reaches a table by whatever the user typed. Matching only the resolved
# URI let a table folder replaced by a symlink to an unsigned table elsewhere leave the policy ("the policy does not
# require a signature for <elsewhere>"). So: require_signed applies when any spelling of any name matches, and a key
# must be allowed for the table under every name it was reached by (its canonical spelling) and where that resolves.
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "abfss": "abfs", "wasbs": "wasb", "gcs": "gs"}
# One Azure store to object_store (delta-rs) and pyiceberg's FileIOs, whatever the scheme: the container is the host
# (``az://c/p``, ``adl://``, ``azure://``, ``abfs[s]://c/p``) or the user part of ``abfs[s]://c@<account>.dfs.core.
# windows.net/p`` (``wasb[s]://c@<account>.blob.core.windows.net/p``).
_AZURE_SCHEMES = frozenset({"az", "adl", "azure", "abfs", "abfss", "wasb", "wasbs"})
_AZURE_HOSTS = (".dfs.core.windows.net", ".blob.core.windows.net", ".dfs.fabric.microsoft.com")


def _is_uri(text: str) -> bool:
    head, colon, _ = text.partition(":")
    return bool(colon) and len(head) > 1 and head[0].isascii() and head[0].isalpha() and \
        all(c.isascii() and (c.isalnum() or c in "+-.") for c in head)


def _local_absolute(name: str) -> str | None:
    """The absolute, lexically normal local path a local name (path or ``file:`` URI) spells; None: not local."""
    if _is_uri(name):
        parts = urlsplit(name)
        if parts.scheme.lower() != "file":
            return None
        path = unquote(parts.path)
        if parts.netloc not in ("", "localhost"):  # file://a/b: the path a/b (carriers.storage.local_path_of)
            path = f"{parts.netloc}{path}"
    else:
        path = name
    path = posixpath.normpath(os.path.join(os.getcwd(), path)) if path else os.getcwd()
    return re.sub(r"^/+", "/", path)


def canonical_name(name: str) -> str:
    """The one spelling of a table name a key's ``tables`` globs must cover: ``file:///abs/path`` for a local name
    (absolute, ``.``/``..`` and repeated slashes folded lexically, percent-encoded as ``Path.as_uri``, symlinks not
    resolved); a URI with its scheme lowercased and folded (s3a → s3, abfss → abfs, ...), repeated slashes folded and a
    trailing ``/`` removed."""
    local = _local_absolute(name)
    if local is not None:
        return Path(local).as_uri()
    parts = urlsplit(name)
    scheme = parts.scheme.lower()
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")
    return f"{scheme}://{parts.netloc}{path}"


def _opened(uri: str, *, decode: bool, glob: bool = False) -> set[str]:
    """The names an object store opens for ``uri``, as the engines parse it (Rust's ``url``, WHATWG: object_store and
    delta-rs): ``.`` and ``..`` segments removed (``%2e`` too), the bucket the host alone — a user part and a port are
    dropped — and an Azure location in every scheme naming its container (``az://c/p``). ``s3://b/lake/x/../finance/t``,
    ``s3://u@b/lake/finance/t``, ``azure://c/…`` and ``abfss://c@acct.dfs.core.windows.net/…`` open the table
    ``s3://b/lake/finance/t`` / ``az://c/…`` opens, and a ``require_signed`` glob on that name missed them: the table
    passed unsigned (exit 0). ``decode`` (names, globs): every percent-escape decoded; else (keys) the name with only
    its ``.``/``..`` segments (``%2e`` too) resolved, its scheme folded, its host part as written. ``glob``: ``uri`` is
    a glob, whose ``?`` and ``[`` are wildcards, never a query or an IPv6 host."""
    if glob:
        head, _, rest = uri.partition("://")
        netloc, slash, raw_path = rest.partition("/")
        user, at, hostport = netloc.rpartition("@")
        parts = urlsplit(f"{head}://")._replace(netloc=netloc, path=slash + raw_path)
        host, username = re.sub(r":[0-9]*$", "", hostport).lower(), (user if at else None)
    else:
        try:
            parts = urlsplit(uri)
            host, username = parts.hostname or "", parts.username
        except ValueError:  # a netloc Python cannot split (an unclosed '['): its other forms still apply
            return set()
    scheme = parts.scheme.lower()
    path = unquote(parts.path) if decode else re.sub("%2[eE]", ".", parts.path)
    path = re.sub("^/+", "/", posixpath.normpath("/" + path)).rstrip("/")  # (normpath keeps a leading '//')
    folded = _SCHEME_ALIASES.get(scheme, scheme)
    if not decode:
        return {f"{folded}://{parts.netloc}{path}"}
    out = {f"{s}://{host}{path}" for s in {scheme, folded}}
    if scheme in _AZURE_SCHEMES:
        user = unquote(username or "")
        container = user if user and host.endswith(_AZURE_HOSTS) else host
        out |= {f"{s}://{container}{path}" for s in ("az", "abfs")}
    return out


def name_spellings(name: str, real: dict[str, str] | None = None) -> set[str]:
    """Every spelling of one table name a ``require_signed`` glob may be written in: as given, without a trailing
    ``/``, canonical (``canonical_name``), percent-decoded and percent-encoded; for a local name also the bare path,
    ``file:/p``, ``file://p`` and where its symlinks resolve (``real``: the paths resolved so far in one judgement —
    a table's names are mostly one path spelt three ways)."""
    out = {name, name.rstrip("/") or name}
    local = _local_absolute(name)
    if local is not None:
        resolved = None if real is None else real.get(local)
        if resolved is None:
            resolved = os.path.realpath(local)
            if real is not None:
                real[local] = resolved
        for path in {local, resolved}:
            out.update({path, f"file:{path}", f"file://{path}", Path(path).as_uri(), f"file://{quote(path)}"})
        return out
    canonical = canonical_name(name)
    parts = urlsplit(name)
    decoded = re.sub(r"/{2,}", "/", unquote(parts.path)).rstrip("/")
    for scheme in {parts.scheme, parts.scheme.lower(), canonical.partition(":")[0]}:
        out.update({f"{scheme}://{parts.netloc}{decoded}", f"{scheme}://{parts.netloc.lower()}{decoded}"})
    out.add(canonical)
    return out | _opened(name, decode=True)


def table_spellings(target: Target) -> set[str]:
    """Every spelling of every name of a table target: its scope, the names it was reached by, its locations."""
    out: set[str] = set()
    for name in (target.scope, *target.names, *target.all_locations):
        out |= name_spellings(name)
    return out


class _TableNames:
    """The spellings of one table target's names for one judgement (``evaluate``): each name spelt once, each local
    path resolved once, the names found by a search (``Target.all_locations``) only when asked. Never kept beyond the
    judgement: a link changed between two judgements is seen by the second."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._real: dict[str, str] = {}
        self._spelt: dict[str, set[str]] = {}
        self._known: list[str] | None = None
        self._every: list[str] | None = None

    def _spellings(self, names: tuple[str, ...]) -> set[str]:
        out: set[str] = set()
        for name in names:
            spelt = self._spelt.get(name)
            if spelt is None:
                spelt = self._spelt[name] = name_spellings(name, self._real)
            out |= spelt
        return out

    @property
    def known(self) -> list[str]:
        """The spellings of the names known without a search (``table_spellings`` but for the locations
        ``Target.more_locations`` finds): a subset, so a glob covering one covers the table."""
        if self._known is None:
            t = self.target
            self._known = sorted(self._spellings((t.scope, *t.names, *t.locations)))
        return self._known

    @property
    def every(self) -> list[str]:
        """``table_spellings``, sorted: every name, the searched ones too."""
        if self._every is None:
            t = self.target
            self._every = sorted(self._spellings((t.scope, *t.names, *t.all_locations)))
        return self._every


@dataclass(frozen=True)
class _GlobMatcher:
    """One ``require_signed`` glob, ready to match table names: its forms (``_glob_forms``) compiled once.

    A name is covered when a form matches it (fnmatch), case-sensitively or ignoring case, or equals it ignoring case
    — a name holding '[' (a folder ``orders[1]``) is no match for itself as a glob (fnmatch reads a class there): the
    glob is also taken as the name it spells, so a policy naming that table literally covers it — and the same with
    both sides in Unicode form NFC: a normalization-insensitive file system (APFS) opens ``café`` (NFC, as a policy is
    typed) as the folder ``café`` (NFD) a writer made, whose name the NFC glob never matched. A glob ending in '/'
    (``file:///lake/hr/people/``) names the table as a folder: its forms hold it without the '/' too."""

    forms: frozenset[str]
    _exact: re.Pattern[str]
    _caseless: re.Pattern[str]
    _folded: re.Pattern[str]
    _literal: frozenset[str]
    _literal_folded: frozenset[str]

    @classmethod
    def of(cls, glob: str) -> _GlobMatcher:
        forms = frozenset(_glob_forms(glob))
        folded = {_folded(g) for g in forms}
        return cls(forms=forms, _exact=_alternation(forms), _caseless=_alternation({g.casefold() for g in forms}),
                   _folded=_alternation(folded), _literal=frozenset(g.casefold() for g in forms),
                   _literal_folded=frozenset(folded))

    def covers(self, spellings: list[str]) -> bool:
        for s in spellings:
            caseless, folded = s.casefold(), _folded(s)
            if self._exact.match(s) or self._caseless.match(caseless) or caseless in self._literal:
                return True
            if self._folded.match(folded) or folded in self._literal_folded:
                return True
        return False


def _alternation(globs: set[str] | frozenset[str]) -> re.Pattern[str]:
    """One pattern matching what any of ``globs`` matches with ``fnmatchcase``."""
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in sorted(globs)) or "(?!)")


def _normal_local(path: str) -> str:
    """A local glob's path folded as names are (``_local_absolute``): ``.``, ``..`` and repeated slashes, a leading
    ``//`` too — ``posixpath.normpath`` keeps it (POSIX leaves its meaning open; Linux and macOS read it as ``/``), and
    ``//lake/finance/*`` or ``file:////lake/finance/*`` (a root joined to an absolute path) covered no table, which
    passed unsigned, exit 0 (round 17)."""
    return re.sub("^/+", "/", posixpath.normpath(path))


_WILDCARDS = re.compile(r"[*?\[]")


def _resolved_glob(local: str) -> set[str]:
    """A local glob's folders resolved as the kernel resolves them: the part before its first wildcard (the whole
    glob when it has none) through ``os.path.realpath``, the rest kept. A policy naming the lake by a link
    (``/data`` → ``/mnt/vol1``; macOS's ``/tmp`` → ``/private/tmp``) covered none of its tables: a table is named
    by the path it was reached by and where that resolves, never by the link the policy author typed, and it passed
    unsigned, exit 0 (round 17). Only ever more names covered: the glob as written is kept."""
    match = _WILDCARDS.search(local)
    if match is None:
        head, rest = local, ""
    else:
        cut = local.rfind("/", 0, match.start())  # the last whole folder before the wildcard
        head, rest = local[:cut] or "/", local[cut:]
    real = os.path.realpath(head)
    if real == head:
        return set()
    forms = {re.sub("^/+", "/", real.rstrip("/") + rest)}
    return forms | {f"file://{f}" for f in forms}


# A glob's brace alternatives are expanded to at most this many globs (``{a,b}{c,d}`` is four).
MAX_GLOB_ALTERNATIVES = 256


def _hadoop_forms(glob: str) -> set[str]:
    """A glob as Hadoop's ``GlobPattern`` (Spark's paths, ``spark.read.load("s3a://b/lake/{finance,hr}/*")``) reads
    it, beside fnmatch's reading: ``{a,b}`` alternatives (nested too) and ``[^a]`` a negated class (fnmatch's
    ``[!a]``; to fnmatch ``[^a]`` is the class of ``^`` and ``a``). ``require_signed = [".../{finance,hr}/*"]`` or
    ``[".../[^t]*/*"]`` covered no table (fnmatch reads braces literally), which passed unsigned, exit 0 (round 18).
    The glob as written is kept: only ever more names covered; so is each reading without white space at its ends."""
    out = {glob}
    pending = [glob]
    while pending and len(out) < MAX_GLOB_ALTERNATIVES:
        text = pending.pop()
        alternatives = _braces(text)
        for form in alternatives:
            if form not in out and len(out) < MAX_GLOB_ALTERNATIVES:
                out.add(form)
                pending.append(form)
    out |= {f.replace("[^", "[!") for f in out}
    # And without white space at either end (a glob pasted as ``" /lake/finance/*"`` covered nothing; a name ending in
    # a space is still covered by the glob as written).
    return out | {f.strip() for f in out if f.strip()}


def _braces(text: str) -> list[str]:
    """The alternatives of ``text``'s first balanced ``{…}`` group (none: ``[]``)."""
    for start, char in enumerate(text):
        if char != "{":
            continue
        depth, cuts = 0, [start]
        for end in range(start, len(text)):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    cuts.append(end)  # (no comma: ``{x}`` is ``x`` to Hadoop)
                    parts = [text[a + 1:b] for a, b in pairwise(cuts)]
                    return [text[:start] + part + text[end + 1:] for part in parts]
            elif text[end] == "," and depth == 1:
                cuts.append(end)
    return []


def _glob_forms(glob: str) -> set[str]:
    """``_glob_form`` of each reading of a ``require_signed`` glob (``_hadoop_forms``)."""
    return {form for reading in _hadoop_forms(glob) for form in _glob_form(reading)}


def _glob_form(glob: str) -> set[str]:
    """A ``require_signed`` glob, and the same glob spelt as table names are (``name_spellings``): without a trailing
    ``/``, percent-decoded, its scheme lowercased and folded (``s3a`` → ``s3``), repeated slashes folded, and a local
    path's ``.``/``..`` folded lexically (``file://localhost/`` is ``file:///``). Names were normalized and globs were
    not: ``s3a://b/lake/finance/*`` (a Spark user's spelling), ``s3://b//lake/finance/*`` or ``/lake/./finance/*``
    covered no table, which passed unsigned. Only ever more names covered: the glob as written is kept."""
    out = {glob, glob.rstrip("/") or glob}
    for text in {glob, unquote(glob)}:
        head, sep, rest = text.partition("://")
        bare = re.match("(?i)file:(?!//)", text)
        if bare is not None and text[5:].startswith("/"):
            # ``file:/lake/finance/*`` (a ``file:`` URI without an authority, as Hadoop and Spark print a local path):
            # folded as a path is, ``.``/``..``, repeated slashes and links in its folders. Kept as written only, it
            # matched the same spelling of a name alone: ``file:/lake/./finance/*`` or ``file:/data/finance/*``
            # (``/data`` a link) covered no table, which passed unsigned, exit 0 (round 18).
            local = _normal_local(text[5:])
            forms = {local, f"file://{local}", f"file:{local}", *_resolved_glob(local)}
        elif sep and _is_uri(text):
            scheme = head.lower()
            scheme = _SCHEME_ALIASES.get(scheme, scheme)
            netloc, slash, path = rest.partition("/")
            if scheme == "file":
                if netloc not in ("", "localhost"):  # file://a/b: the path a/b, as for names (_local_absolute)
                    path, netloc = f"{netloc}/{path}", ""
                local = _normal_local("/" + path)
                forms = {f"file://{local}", local, *_resolved_glob(local)}
            elif scheme == "iceberg":
                # ``iceberg://prod/finance/*``: the namespace as ``attest audit iceberg://prod/finance`` names it, or as
                # a REST path, then '/': read with '.' too, as tables are named (``iceberg://prod/finance.orders``).
                # It covered no table, which passed unsigned, exit 0 (round 17).
                kept = f"iceberg://{netloc}" + re.sub("/{2,}", "/", slash + path)
                forms = {kept, f"iceberg://{netloc}{slash}{path.strip('/').replace('/', '.')}",
                         *_opened(text, decode=True, glob=True)}
            else:
                # and the names a store opens for it (``_opened``): a glob spelt ``abfss://c@acct.dfs.core.windows.net/…``
                # or with ``..`` covers the table as delta-rs names it
                forms = {f"{scheme}://{netloc}" + re.sub("/{2,}", "/", slash + path),
                         *_opened(text, decode=True, glob=True)}
        elif text.startswith("/"):
            local = _normal_local(text)
            forms = {local, f"file://{local}", *_resolved_glob(local)}
        else:
            forms = {text}
        out |= {f for form in forms for f in (form, form.rstrip("/") or form)}
    return out


def _folded(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _key_names(target: Target) -> list[tuple[str, str]]:
    """What a key must be allowed to attest, each with how the table is known by it: the scope (what the statement
    names), then the canonical spelling of every other name the table was reached by."""
    out = [(target.scope, "")]
    if target.kind == "table":
        for name in target.names:
            canonical = canonical_name(name)
            if canonical != target.scope and canonical not in (n for n, _ in out):
                out.append((canonical, f" (the name this table was reached by, {name!r}; it is {target.scope})"))
        # Where a store name leads once its ``..`` segments are resolved, as the engine resolves them: a key allowed
        # for ``s3://b/lake/hr/*`` matched ``s3://b/lake/hr/../finance/t`` (``*`` crosses ``/``), a finance table.
        for name, _ in list(out):
            scheme = name.partition(":")[0].lower() if _is_uri(name) else "file"
            if scheme == "file":
                continue
            for where in _opened(name, decode=False):
                if where not in (n for n, _ in out) and where != canonical_name(name):
                    out.append((where, f" (where {name!r} leads)"))
    return out


def _described(target: Target) -> str:
    others = sorted({n for n in (*target.names, *target.all_locations) if n != target.scope})
    return target.scope + (f" (nor for {', '.join(others)})" if others else "")


def _globs(value: Any, path: str, bad: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        raise bad("must be a list of non-empty glob strings", path)
    return tuple(value)


def _instant(value: Any, path: str, bad: Any) -> dt.datetime | None:
    if value is None:
        return None
    # A date or a local time has no single instant: a key's window must not depend on the verifier's time zone.
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise bad("must be a TOML date-time with an offset, e.g. 2026-01-01T00:00:00Z", path)
    return value


def _trusted_key(entry: Any, path: str, base_dir: Path, bad: Any) -> TrustedKey:
    if not isinstance(entry, dict):
        raise bad("must be a table", path)
    unknown = set(entry) - _KEY_FIELDS
    if unknown:
        raise bad(f"unknown field(s) {', '.join(sorted(unknown))}", path)
    file, inline = entry.get("public_key"), entry.get("public_key_pem")
    if (file is None) == (inline is None):
        raise bad("give exactly one of public_key (a PEM file) or public_key_pem (inline PEM)", path)
    try:
        if file is not None:
            if not isinstance(file, str) or not file:
                raise bad("public_key must be a file name", f"{path}.public_key")
            # The policy is the verifier's own trust root, so its key paths may be absolute or relative to it.
            public_key = PublicKey.load(base_dir / file)
        else:
            if not isinstance(inline, str):
                raise bad("public_key_pem must be a PEM string", f"{path}.public_key_pem")
            public_key = PublicKey.load(inline.encode("utf-8"))
    except KeyInvalidError as err:
        raise bad(err.message, path) from err
    declared = entry.get("id")
    if declared is not None and declared != public_key.key_id:
        raise bad(f"id {declared!r} is not the key id of its public key ({public_key.key_id})", f"{path}.id")
    revoked = entry.get("revoked", False)
    if not isinstance(revoked, bool):
        raise bad("revoked must be true or false", f"{path}.revoked")
    not_before = _instant(entry.get("not_before"), f"{path}.not_before", bad)
    not_after = _instant(entry.get("not_after"), f"{path}.not_after", bad)
    if not_before is not None and not_after is not None and not_after < not_before:
        raise bad("not_after is before not_before", path)
    return TrustedKey(public_key=public_key, tables=_globs(entry.get("tables", ["*"]), f"{path}.tables", bad),
                      models=_globs(entry.get("models", ["*"]), f"{path}.models", bad), not_before=not_before,
                      not_after=not_after, revoked=revoked)

