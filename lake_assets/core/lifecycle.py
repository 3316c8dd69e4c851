"""What CREATE and DROP of a catalog object do the same for every kind: a name is taken once
per namespace, and an object is not dropped while another one uses it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lake_assets.core.entries import CatalogObject
from lake_assets.core.errors import LakeError
from lake_assets.core.results import Result
from lake_assets.sql.statements import DropObject

if TYPE_CHECKING:
    from lake_assets.core.kind import Context

T = TypeVar("T", bound=CatalogObject)


def name_taken(
    session: Context, kind: type[CatalogObject], name: str, if_not_exists: bool
) -> Result | None:
    """CREATE's answer when the name is taken and IF NOT EXISTS says to do nothing, else None;
    an error when another object holds it."""
    existing = session.catalog.find_in(kind.NAMESPACE, name)
    if existing is None:
        return None
    if if_not_exists and isinstance(existing, kind):
        return Result.status(f"{kind.LABEL} {name} already exists; nothing to do")
    if not isinstance(existing, kind):  # IF NOT EXISTS would not skip it either
        raise LakeError(
            f"{existing.LABEL} {name} already exists",
            f"pick another name, or drop {existing.LABEL} {name} first",
        )
    raise LakeError(
        f"{existing.LABEL} {name} already exists",
        f"use {kind.CREATE} IF NOT EXISTS, pick another name, or DROP it first",
    )


def drop_object(
    kind: type[T], cleanup: Callable[[T], None] | None = None
) -> Callable[[Context, DropObject], Result]:
    """The DROP handler of `kind`; `cleanup` removes what the object kept outside the catalog."""

    def drop(session: Context, stmt: DropObject) -> Result:
        entry = session.catalog.remove(kind, stmt.name, unused=True)
        if entry is None:
            if stmt.if_exists:
                return Result.status(f"{kind.LABEL} {stmt.name} does not exist; nothing to do")
            raise _not_found(session, kind, stmt.name)
        if cleanup is not None:
            cleanup(entry)
        return Result.status(f"dropped {kind.LABEL} {stmt.name}")

    return drop


def _not_found(session: Context, kind: type[CatalogObject], name: str) -> LakeError:
    """Why DROP found no `kind` by that name: none at all, or another kind's object."""
    other = session.catalog.find_in(kind.NAMESPACE, name)
    return kind.unknown(name) if other is None else other.mistaken_for(kind)
