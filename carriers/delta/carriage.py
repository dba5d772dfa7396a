"""Where a Delta version's attestation is carried (docs/carrier-properties.md): the ``recipe_manifest.*`` /
``recipe_attest.*`` table properties at that version; a later metadata-only commit that binds it (the attestation
commit, carriers/delta/commit.py: in force up to the next file-changing commit); a detached pointer
(``_recipe_attest/versions/<version>.json``, no commit); or another producer's properties, bound by the log to the data
version before the commit that set them.

``Carriage`` is a part of ``DeltaCarrier``: it reads the carrier's loaded versions and storage, and answers
``_carried`` (the attestation in force at a version, the core's hook: carriers/core.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from attest.errors import Code, Problem
from attest.numbers import is_digits
from carriers import properties as props
from carriers.core import Carried, Version
from carriers.delta.log import read_commit

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from carriers.storage.base import Storage

__all__ = ["POINTER_DIR", "SIDECAR_DIR", "Carriage"]

SIDECAR_DIR = "_recipe_attest"  # "_"-prefixed: Delta readers and VACUUM ignore it (Delta protocol, hidden dirs)
POINTER_DIR = f"{SIDECAR_DIR}/versions"


class Carriage:
    """Where ``DeltaCarrier``'s attestations are carried (its ``storage`` and loaded versions)."""

    storage: Storage

    if TYPE_CHECKING:
        def latest_version(self) -> int: ...
        def data_version(self, latest: int | None = None) -> int: ...
        def _load(self, version: int | None = None) -> DeltaTable: ...
        def _metadata_table(self, n: int) -> DeltaTable: ...
        def _read_pointer(self, version_id: str) -> Carried | None: ...

    def _configuration(self, n: int) -> dict[str, str]:
        return dict(self._metadata_table(n).metadata().configuration)  # loads n unless n + 1's is n's (carrier.py)

    def _binding_of(self, keys: Mapping[str, str]) -> str | None:
        return keys.get(props.KEY_VERSION) or keys.get(props.LEGACY_KEY_VERSION)

    def _carried(self, v: Version) -> Carried | None:
        n = v.number
        latest = v.handle if isinstance(v.handle, int) else self.latest_version()
        keys = props.attestation_keys(self._configuration(n))
        carried: Carried | None = None
        binding = self._binding_of(keys) if keys else None
        if keys:
            carried = Carried(keys=keys, where=f"table properties at version {n}")
        if keys and binding is None and not any(k.startswith(props.CARRIER_PREFIX) for k in keys):
            carried = self._foreign(n, keys)
        if n < latest:
            # n may be a data version whose own attestation is a later metadata-only commit (recorded at n+1, or
            # later when retried): the last one binding n before the next file-changing commit is in force. A
            # metadata-only n (a property edit, or the UNSET commit older Spark hooks wrote before their SET) reads
            # the data of its data version d: an attestation of d recorded after n, before the next file-changing
            # commit, describes n's data too, and says where it was found (the reader view is still checked at n).
            d = self.data_version(n)
            targets = {str(n), str(d)}
            # Bound to the data version already: only an attestation of n itself, recorded later, takes over (record
            # attests a metadata-only n when the data version's commits are gone to log cleanup, attestable_version).
            # Bound to n itself by n's own properties: n's attestation is never in n's own commit (it is recorded
            # after its data), so such a claim came with properties copied or kept from elsewhere — CREATE TABLE …
            # LIKE and CLONE copy a table's attestation keys, which every later commit inherits, and one whose
            # binding is the number of a later data version there claimed it (round 27: that version's own
            # attestation, recorded after it, was read back as not in force and record could never attest it). An
            # attestation of n recorded later takes over; with none, the claim is judged as before.
            wanted = targets if binding not in targets else {str(n)}
            for x in range(n + 1, latest + 1):  # up to the next file-changing commit, however far
                commit = read_commit(self.storage, x)
                if commit is None or commit.touches_files:
                    break
                if commit.configuration is None:
                    continue
                ahead = props.attestation_keys(commit.configuration)
                bound = self._binding_of(ahead) if ahead else None
                if bound is not None and bound in wanted:
                    target = bound
                    where = f"attestation for version {bound} recorded at version {x}"
                    note = where if bound == str(n) else (
                        f"{where}, after version {n}: version {n} carries no attestation of its data, which is "
                        f"version {d}'s (only metadata-only commits in between)")
                    carried, binding = Carried(keys=ahead, where=where, note=note), target
        if binding == str(n):
            return carried
        # Detached mode: a per-version pointer under _recipe_attest/versions/ (no log commit); the newer binding
        # of the two is in force.
        floor = int(binding) if binding is not None and is_digits(binding) and carried is not None else -1
        pointer = self._detached_between(floor, n)
        return pointer if pointer is not None else carried

    def _detached_between(self, floor: int, n: int) -> Carried | None:
        # The newest pointer in (floor, n], from one listing (a pointer is named <version>.json, the version as
        # str(int) spells it): linear in the listing, however many versions lie between.
        found = -1
        for name in self.storage.list_names(POINTER_DIR):
            stem = name[:-5] if name.endswith(".json") else ""
            if is_digits(stem) and str(int(stem)) == stem and floor < int(stem) <= n:
                found = max(found, int(stem))
        return None if found < 0 else self._read_pointer(str(found))

    def _foreign(self, n: int, keys: Mapping[str, str]) -> Carried:
        """Another producer's ``recipe_manifest.*`` properties (no binding of ours): bound by the log to the last data
        version before the commit that set them."""
        wanted = {k: v for k, v in keys.items() if k.startswith(props.PREFIX)}
        set_at: int | None = None
        for x in range(n, -1, -1):
            commit = read_commit(self.storage, x)
            if commit is None:
                break
            if commit.configuration is None:
                continue
            here = {k: v for k, v in props.attestation_keys(commit.configuration).items() if k.startswith(props.PREFIX)}
            if here != wanted:
                break
            set_at = x
        if set_at is None:
            return Carried(keys=dict(keys), where=f"table properties at version {n}", foreign_binding=None,
                           foreign_note="the commit that set these properties is no longer in the log",
                           problems=(Problem(Code.CARRIER_TAMPERED, "the version these properties attest cannot be "
                                             "found: the commit that set them is no longer in the log"),))
        commit = read_commit(self.storage, set_at)
        bound = set_at if commit is not None and commit.touches_files else self.data_version(max(set_at - 1, 0))
        problems: tuple[Problem, ...] = ()
        # A downgrade, not another producer's run: between the data version and these keys, a recipe-attest
        # attestation of that very version was in force and was replaced by keys nothing can check.
        for x in range(set_at - 1, bound - 1, -1):
            earlier = read_commit(self.storage, x)
            if earlier is None:
                break
            if earlier.configuration is not None and \
                    props.attestation_keys(earlier.configuration).get(props.KEY_VERSION) == str(bound):
                problems = (Problem(Code.CARRIER_TAMPERED, f"the recipe-attest attestation of version {bound} "
                                    f"(version {x}) was replaced by recipe_manifest.* keys without its binding and "
                                    "sidecar"),)
                break
        return Carried(keys=dict(keys), where=f"table properties set at version {set_at}", foreign_binding=str(bound),
                       foreign_note=f"bound by the log to version {bound}", problems=problems)
