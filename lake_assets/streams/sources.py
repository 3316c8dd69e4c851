"""What a stream can read: a table, a dynamic table, or a volume's directory table. Each is a
Delta table with a change data feed; this is the one place that tells them apart. The dynamic
tables package comes after streams in the import layers, so a source kind is named as the
catalog stores it and its entry class found in the catalog's registry of kinds, never imported
here."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lake_assets.core.catalog import Catalog
from lake_assets.core.entries import CatalogObject, StoredRelation
from lake_assets.core.errors import LakeError
from lake_assets.streams.grammar import SOURCE_KINDS
from lake_assets.tables.entry import TableEntry
from lake_assets.volumes.entry import VolumeEntry
from lake_assets.volumes.files import DIRECTORY_SCHEMA


def source_type(kind: str) -> type[CatalogObject]:
    """The entry class of a source kind (as CREATE STREAM … ON <words> names it and the catalog
    stores it), as the catalog itself finds it to read the kind's objects."""
    return CatalogObject.KINDS[kind]


@dataclass(frozen=True)
class ChangeSource:
    """A stream's source: the Delta table at `location` whose changes it shows, and the columns
    it shows after its metadata columns."""

    entry: CatalogObject
    location: str
    columns: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def kind(self) -> str:
        return self.entry.kind()

    @property
    def label(self) -> str:
        return self.entry.LABEL

    def mark_tracked(self, catalog: Catalog) -> None:
        """Record in the catalog that the source's changes are now tracked for streams."""
        match self.entry:
            case TableEntry():
                catalog.update(
                    TableEntry,
                    self.name,
                    lambda e: replace(e, properties={**e.properties, "change_tracking": "true"}),
                )
            case VolumeEntry():
                catalog.update(VolumeEntry, self.name, lambda e: replace(e, change_tracking=True))


def change_source(entry: CatalogObject) -> ChangeSource:
    """The source an entry of a source kind is: a volume's directory table, or a relation kept
    as a Delta table of its own (a table, a dynamic table)."""
    if isinstance(entry, VolumeEntry):
        if not entry.directory_enabled:
            raise LakeError(
                f"volume {entry.name} has no directory table, which a volume stream reads",
                "create the volume with DIRECTORY = (ENABLE = TRUE)",
            )
        return ChangeSource(entry, entry.directory_location, tuple(DIRECTORY_SCHEMA.fieldNames()))
    assert isinstance(entry, StoredRelation)
    return ChangeSource(entry, entry.location, tuple(column.name for column in entry.columns))


def find_source(catalog: Catalog, kind: str, name: str) -> CatalogObject | None:
    """The object called `name` where a source of `kind` would be (volumes have a namespace of
    their own), or else in another source kind's namespace, so a mix-up can be named."""
    kinds = [kind, *SOURCE_KINDS.values()]
    namespaces = dict.fromkeys(source_type(each).NAMESPACE for each in kinds)
    return next(
        (found for namespace in namespaces if (found := catalog.find_in(namespace, name))), None
    )
