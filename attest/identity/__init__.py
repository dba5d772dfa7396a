"""Identity builders over hash scheme v1: program, inputs and environment identities."""

from attest.identity.env import env_identity
from attest.identity.inputs import ObservedInput, content_identity, inputs_identity
from attest.identity.program import program_identity_json, program_identity_python, program_identity_sql

__all__ = [
    "ObservedInput",
    "content_identity",
    "env_identity",
    "inputs_identity",
    "program_identity_json",
    "program_identity_python",
    "program_identity_sql",
]
