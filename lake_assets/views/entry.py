"""A view as the catalog keeps it: its query as written, the relations it reads, its columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject, Column
from lake_assets.core.errors import LakeError
from lake_assets.sql.lineage import columns_read


@dataclass(frozen=True)
class ViewEntry(CatalogObject):
    """A relation with no data of its own: reading it reads `query`; `sources` are the relations
    the query names (tables, dynamic tables, views), which are not dropped while it reads them;
    `columns` are those Spark resolved for it at CREATE."""

    NAMESPACE: ClassVar[str] = RELATION
    KIND: ClassVar[str] = "view"
    LABEL: ClassVar[str] = "view"
    SHOW: ClassVar[str] = "SHOW VIEWS"
    CREATE: ClassVar[str] = "CREATE VIEW"
    REFERENCES: ClassVar[dict[str, str]] = {"sources": RELATION}

    query: str
    sources: tuple[str, ...]
    columns: tuple[Column, ...]
    comment: str | None = None

    def stands_for(self) -> str | None:
        return self.query

    def columns_read(
        self, relation: str, columns_of: Callable[[str], Sequence[str]]
    ) -> frozenset[str]:
        return columns_read(self.query, relation, columns_of)

    def mistaken_for(self, wanted: type[CatalogObject]) -> LakeError:
        return LakeError(
            f"{self.name} is a view: it stands for its query and has no rows or changes of its own",
            f"write, alter or stream the relations it reads ({', '.join(self.sources)}), "
            f"or change the view with CREATE OR REPLACE VIEW {self.name}",
        )
