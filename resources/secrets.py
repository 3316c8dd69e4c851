"""Connection secrets: kept as env-var references or encrypted, resolved only when used."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import ENV_REFERENCE_PREFIX, env_reference_allowed, env_references
from lake_assets.sql.secrets import REDACTED

ENV = "env:"
_ENCRYPTED = "enc:"


def _key(lake_home: Path) -> bytes:
    """LAKE_SECRET_KEY, or a key file created once under LAKE_HOME, readable only by its owner."""
    configured = os.environ.get("LAKE_SECRET_KEY")
    if configured:
        key = configured.encode()
    else:
        path = lake_home / "secret.key"
        if not path.exists():
            _create_key_file(path)
        key = path.read_bytes().strip()
    try:
        Fernet(key)
    except ValueError:
        raise LakeError(
            "LAKE_SECRET_KEY is not a valid key",
            "use 32 url-safe base64-encoded bytes, e.g. from "
            "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key())'`",
        ) from None
    return key


def _create_key_file(path: Path) -> None:
    """Write the key to a private temporary file and link it into place: racing processes
    either win or read the winner's complete key, never a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".secret.key.{os.getpid()}")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(Fernet.generate_key())
    try:
        os.link(staging, path)
    except FileExistsError:
        pass
    finally:
        staging.unlink()


def referenced_variable(reference: str) -> str:
    """The variable an `env:` reference names, once the operator's settings allow it: SQL must
    not send the process's own environment (its AWS keys, LAKE_SECRET_KEY) where it likes."""
    variable = reference[len(ENV) :]
    if not env_reference_allowed(variable, env_references(os.environ)):
        raise LakeError(
            f"'{reference}' names an environment variable the operator did not allow",
            f"export the secret as {ENV_REFERENCE_PREFIX}<NAME> and write "
            f"'env:{ENV_REFERENCE_PREFIX}<NAME>', or ask the operator to add it to "
            "LAKE_ENV_REFERENCES",
        )
    return variable


def seal(value: str | None, lake_home: Path) -> str | None:
    """What the catalog stores for a secret the user gave: its env reference, or ciphertext."""
    if value is None:
        return None
    if value.startswith(ENV):
        referenced_variable(value)
        return value
    return _ENCRYPTED + Fernet(_key(lake_home)).encrypt(value.encode()).decode()


def unseal(reference: str | None, lake_home: Path) -> str | None:
    """The secret itself, for the client that needs it; never for display."""
    if reference is None:
        return None
    if reference.startswith(ENV):
        variable = referenced_variable(reference)
        value = os.environ.get(variable)
        if value is None:
            raise LakeError(
                f"environment variable {variable} is not set", f"export {variable} before running"
            )
        return value
    try:
        return Fernet(_key(lake_home)).decrypt(reference[len(_ENCRYPTED) :].encode()).decode()
    except InvalidToken:
        raise LakeError(
            "a stored connection secret cannot be decrypted with this LAKE_SECRET_KEY/secret.key",
            "restore the original key, or DROP and CREATE the connection again",
        ) from None


def shown(reference: str | None) -> str | None:
    """How a secret appears in DESC, logs and metadata: never, whatever its kind."""
    return None if reference is None else REDACTED
