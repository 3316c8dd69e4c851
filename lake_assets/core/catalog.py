"""The persistent registry of lakehouse objects, readable without Spark: names → objects of every
kind, and each relation's newest version and row count. Kinds keep their history in tables of
their own (`core.database.owned_table`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lake_assets.core.database import SCHEMA, TEXT, Database, catalog_url, owned_in, owned_table
from lake_assets.core.entries import RELATION, CatalogObject, StoredRelation, now_utc
from lake_assets.core.errors import LakeError

T = TypeVar("T", bound=CatalogObject)
# A check that `add` and `replace` run inside their transaction: it raises to refuse the write.
Check = Callable[["CatalogView"], None]

_objects = sa.Table(
    "objects",
    SCHEMA,
    sa.Column("namespace", TEXT, primary_key=True),
    sa.Column("name", TEXT, primary_key=True),
    sa.Column("kind", TEXT, nullable=False),
    sa.Column("spec", TEXT, nullable=False),
    sa.Column("created_at", TEXT, nullable=False),
)
_table_state = owned_table(
    "table_state",
    (RELATION, "name"),
    sa.Column("name", TEXT, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("row_count", sa.BigInteger, nullable=False),
    sa.Column("updated_at", TEXT, nullable=False),
)


def unknown_table(name: str) -> LakeError:
    return LakeError(
        f"table {name} does not exist",
        "check the name with SHOW TABLES or create it with CREATE TABLE",
    )


class CatalogView:
    """The catalog as one transaction sees it: a check run on it inside a writing transaction
    still holds when that transaction writes, as no other writer can commit in between."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def find_in(self, namespace: str, name: str) -> CatalogObject | None:
        """Whatever holds the name in a namespace, of any kind."""
        query = _with_state().where(_objects.c.namespace == namespace, _objects.c.name == name)
        row = self._conn.execute(query).first()
        return _entry(row) if row is not None else None

    def entries(self, kind: type[T]) -> list[T]:
        """Every object of a kind, by name."""
        rows = self._conn.execute(
            _with_state()
            .where(_objects.c.namespace == kind.NAMESPACE, _objects.c.kind == kind.kind())
            .order_by(_objects.c.name)
        ).all()
        return [entry for row in rows if isinstance(entry := _entry(row), kind)]

    def users_of(self, kind: type[CatalogObject], name: str) -> list[str]:
        """The objects that name this one (`pipe p`, `task k`), as DROP refuses them."""
        return [f"{user.LABEL} {user.name}" for user in self.users(kind, name)]

    def following(self, name: str, new_name: str) -> list[CatalogObject]:
        """The objects that follow `name` through its rename, as they are once it is renamed."""
        return [
            moved
            for kind in CatalogObject.KINDS.values()
            for entry in self.entries(kind)
            if (moved := entry.following(name, new_name)) is not None
        ]

    def users(self, kind: type[CatalogObject], name: str) -> list[CatalogObject]:
        """The objects that name this one, each once."""
        users: list[CatalogObject] = []
        for user in CatalogObject.KINDS.values():
            fields = [field for field, space in user.REFERENCES.items() if space == kind.NAMESPACE]
            for entry in self.entries(user) if fields else ():
                values = [getattr(entry, field_name) for field_name in fields]
                if any(v == name or (isinstance(v, tuple) and name in v) for v in values):
                    users.append(entry)
        return users


class Catalog:
    """Names → objects of every kind; every write is one transaction, safe across processes."""

    def __init__(self, location: Path | str) -> None:
        self.database = Database(catalog_url(location))
        self.url = self.database.url

    def _reading(self) -> AbstractContextManager[Connection]:
        return self.database.reading()

    def _writing(self) -> AbstractContextManager[Connection]:
        return self.database.writing()

    # Objects of every kind

    def add(self, entry: T, check: Check | None = None) -> T:
        """Register a new object; fails if its namespace already has the name, or if `check`
        (run on the catalog as this transaction sees it) raises."""
        created = replace(entry, created_at=entry.created_at or now_utc())
        with self._writing() as conn:
            view = CatalogView(conn)
            existing = view.find_in(entry.NAMESPACE, entry.name)
            if existing is not None:
                raise LakeError(
                    f"{existing.LABEL} {entry.name} already exists",
                    f"use {entry.CREATE} IF NOT EXISTS, pick another name, or DROP it first",
                )
            if check is not None:
                check(view)
            _forget(conn, entry.NAMESPACE, entry.name)
            conn.execute(sa.insert(_objects).values(_row(created)))
        return created

    def replace(self, entry: T, check: Check | None = None) -> T | None:
        """Register an object in place of one of the same kind (OR REPLACE); return that one.
        `check` runs as in `add`."""
        created = replace(entry, created_at=entry.created_at or now_utc())
        with self._writing() as conn:
            view = CatalogView(conn)
            existing = view.find_in(entry.NAMESPACE, entry.name)
            if existing is not None and not isinstance(existing, type(entry)):
                raise LakeError(
                    f"{existing.LABEL} {entry.name} already exists",
                    f"pick another name for the {entry.LABEL}, or DROP the {existing.LABEL} first",
                )
            if check is not None:
                check(view)
            if existing is not None:
                self._delete(conn, existing)
            conn.execute(sa.insert(_objects).values(_row(created)))
        return existing

    def find(self, kind: type[T], name: str) -> T | None:
        with self._reading() as conn:
            found = self._select(conn, kind.NAMESPACE, name)
        return found if isinstance(found, kind) else None

    def get(self, kind: type[T], name: str) -> T:
        """The object, or an error that says how to find the right name."""
        with self._reading() as conn:
            found = self._select(conn, kind.NAMESPACE, name)
        if found is None:
            raise kind.unknown(name)
        if not isinstance(found, kind):
            raise found.mistaken_for(kind)
        return found

    def entries(self, kind: type[T]) -> list[T]:
        """Every object of a kind, by name."""
        with self._reading() as conn:
            return CatalogView(conn).entries(kind)

    def find_in(self, namespace: str, name: str) -> CatalogObject | None:
        """Whatever holds the name in a namespace, of any kind."""
        with self._reading() as conn:
            return self._select(conn, namespace, name)

    def find_relation(self, name: str) -> CatalogObject | None:
        return self.find_in(RELATION, name)

    def relation(self, name: str) -> CatalogObject:
        """A table, dynamic table or other relation, for statements that only read it."""
        found = self.find_relation(name)
        if found is None:
            raise unknown_table(name)
        return found

    def stored(self, name: str) -> StoredRelation:
        """A relation with a Delta table of its own; a stream is refused in its own words."""
        found = self.relation(name)
        if not isinstance(found, StoredRelation):
            raise found.mistaken_for(StoredRelation)
        return found

    def relations(self) -> list[CatalogObject]:
        with self._reading() as conn:
            rows = conn.execute(
                _with_state().where(_objects.c.namespace == RELATION).order_by(_objects.c.name)
            ).all()
        return [_entry(row) for row in rows]

    def relation_locations(self) -> dict[str, str]:
        """Location → name, so that errors can say a table's name instead of its path."""
        return {
            entry.location: entry.name
            for entry in self.relations()
            if isinstance(entry, StoredRelation)
        }

    def update(self, kind: type[T], name: str, change: Callable[[T], T]) -> T:
        """Change an object in one transaction: `change` sees it as it is now."""
        with self._writing() as conn:
            found = self._select(conn, kind.NAMESPACE, name)
            if found is None:
                raise kind.unknown(name)
            if not isinstance(found, kind):
                raise found.mistaken_for(kind)
            updated = change(found)
            conn.execute(
                sa.update(_objects)
                .where(_objects.c.namespace == kind.NAMESPACE, _objects.c.name == name)
                .values(spec=updated.to_spec())
            )
        return updated

    def remove(self, kind: type[T], name: str, *, unused: bool = False) -> T | None:
        """Unregister an object with what the catalog kept about it; return what it was.
        `unused`: refuse while another object names it, checked in the same transaction, so
        that no object created meanwhile is left naming nothing."""
        with self._writing() as conn:
            view = CatalogView(conn)
            found = view.find_in(kind.NAMESPACE, name)
            if not isinstance(found, kind):
                return None
            if unused and (users := view.users_of(kind, name)):
                raise LakeError(
                    f"{found.LABEL} {name} is used by {users[0]}", f"drop {users[0]} first"
                )
            self._delete(conn, found)
        return found

    def rename(self, kind: type[T], name: str, new_name: str) -> T:
        """Give an object a new name, with the rows its kinds keep under it, in one transaction;
        refused while another object names it (its SQL would name nothing), and the objects that
        follow it rather than its name (a stream of a table) follow."""
        with self._writing() as conn:
            view = CatalogView(conn)
            found = view.find_in(kind.NAMESPACE, name)
            if found is None:
                raise kind.unknown(name)
            if not isinstance(found, kind):
                raise found.mistaken_for(kind)
            taken = view.find_in(kind.NAMESPACE, new_name)
            if taken is not None:
                raise LakeError(
                    f"{taken.LABEL} {new_name} already exists",
                    "pick another name, or DROP it first",
                )
            if users := view.users_of(kind, name):
                raise LakeError(
                    f"{found.LABEL} {name} is used by {users[0]}, which names it",
                    f"drop {users[0]}, rename, then create it again naming {new_name}",
                )
            for moved in view.following(name, new_name):
                conn.execute(
                    sa.update(_objects)
                    .where(_objects.c.namespace == moved.NAMESPACE, _objects.c.name == moved.name)
                    .values(spec=moved.to_spec())
                )
            conn.execute(
                sa.update(_objects)
                .where(_objects.c.namespace == kind.NAMESPACE, _objects.c.name == name)
                .values(name=new_name)
            )
            _forget(conn, kind.NAMESPACE, new_name)
            for owned in owned_in(kind.NAMESPACE):
                column = owned.table.c[owned.column]
                conn.execute(
                    sa.update(owned.table).where(column == name).values({owned.column: new_name})
                )
        return replace(found, name=new_name)

    def users_of(self, kind: type[CatalogObject], name: str) -> list[str]:
        """The objects that name this one (`pipe p`, `dynamic table d`)."""
        with self._reading() as conn:
            return CatalogView(conn).users_of(kind, name)

    def users(self, kind: type[CatalogObject], name: str) -> list[CatalogObject]:
        """The objects that name this one, as entries."""
        with self._reading() as conn:
            return CatalogView(conn).users(kind, name)

    def _select(self, conn: Connection, namespace: str, name: str) -> CatalogObject | None:
        return CatalogView(conn).find_in(namespace, name)

    def _delete(self, conn: Connection, entry: CatalogObject) -> None:
        conn.execute(
            sa.delete(_objects).where(
                _objects.c.namespace == entry.NAMESPACE, _objects.c.name == entry.name
            )
        )
        _forget(conn, entry.NAMESPACE, entry.name)

    # A relation's state: the newest commit's version and row count

    def record_table_state(self, entry: CatalogObject, version: int, row_count: int) -> None:
        """Remember a commit's version and row count; an older commit never overwrites a newer,
        and a commit of a dropped table never lands on a new table of the same name."""
        with self._writing() as conn:
            current = self._select(conn, RELATION, entry.name)
            if current is None or getattr(current, "location", None) != getattr(
                entry, "location", None
            ):
                return
            insert = self.database.insert(_table_state).values(
                name=entry.name, version=version, row_count=row_count, updated_at=now_utc()
            )
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[_table_state.c.name],
                    set_={
                        "version": insert.excluded.version,
                        "row_count": insert.excluded.row_count,
                        "updated_at": insert.excluded.updated_at,
                    },
                    where=insert.excluded.version > _table_state.c.version,
                )
            )


def _forget(conn: Connection, namespace: str, name: str) -> None:
    """Delete what the kinds keep under a name: with its object when it goes, and before a new
    object takes the name, rows a writer racing a DROP or RENAME left there (a load recorded
    after its table was renamed) are not the new object's."""
    for owned in owned_in(namespace):
        conn.execute(sa.delete(owned.table).where(owned.table.c[owned.column] == name))


def _with_state() -> sa.Select:
    return sa.select(_objects, _table_state.c.version, _table_state.c.row_count).select_from(
        _objects.outerjoin(_table_state, _table_state.c.name == _objects.c.name)
    )


def _row(entry: CatalogObject) -> dict[str, str]:
    return {
        "namespace": entry.NAMESPACE,
        "name": entry.name,
        "kind": entry.kind(),
        "spec": entry.to_spec(),
        "created_at": entry.created_at,
    }


def _entry(row: sa.Row) -> CatalogObject:
    kind = CatalogObject.KINDS[row.kind]
    state = {key: getattr(row, key) for key in kind.STATE}
    return kind.from_spec(row.name, row.created_at, row.spec, **state)
