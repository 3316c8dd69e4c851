"""A table stream as the catalog keeps it: where it reads, and the offset it has consumed to."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject
from lake_assets.core.errors import LakeError


class StreamMode(StrEnum):
    """What a table stream returns: the net change set, or only the rows inserted."""

    STANDARD = "STANDARD"
    APPEND_ONLY = "APPEND_ONLY"


class ChangeType(StrEnum):
    """A stream row's `__change_type`."""

    INSERT = "INSERT"
    UPDATE_BEFORE = "UPDATE_BEFORE"
    UPDATE_AFTER = "UPDATE_AFTER"
    DELETE = "DELETE"


class Landing(StrEnum):
    """What a consuming write lands in, named as its kind is, which says how to tell it landed."""

    TABLE = "table"  # a commit tagged `tag` in the Delta table at `target`
    VOLUME = "volume"  # the file `path` in the volume `target` (COPY INTO VOLUME)


@dataclass(frozen=True)
class Claim:
    """A statement consuming the stream right now: it writes `target` (read at version `after`)
    with the commit tagged `tag`, and moves the offset to `end` if that commit lands. A volume
    export lands as the file `path`, which a later process opens with the writer's `lake_home`
    (the key to the volume's connection secrets)."""

    tag: str
    target: str
    after: int
    end: int
    owner: str
    landing: Landing = Landing.TABLE
    path: str | None = None
    lake_home: str | None = None


@dataclass(frozen=True)
class StreamEntry(CatalogObject):
    """`offset` is a version of the source: the stream returns the changes committed after it.
    `generation` grows whenever the offset is set by hand, so that a consumer that read the
    stream before can tell it moved."""

    NAMESPACE: ClassVar[str] = RELATION
    KIND: ClassVar[str] = "stream"
    LABEL: ClassVar[str] = "stream"
    SHOW: ClassVar[str] = "SHOW TABLE STREAMS"
    CREATE: ClassVar[str] = "CREATE TABLE STREAM"
    RUNTIME: ClassVar[tuple[str, ...]] = ("offset", "initial_pending", "generation", "claim")

    source: str
    source_kind: str
    source_location: str
    mode: StreamMode
    show_initial_rows: bool
    offset: int
    initial_pending: bool = False
    generation: int = 0
    claim: Claim | None = None
    comment: str | None = None

    def reads_changes(self, relation: str) -> bool:
        return relation == self.source

    def following(self, relation: str, new_name: str) -> StreamEntry | None:
        """A stream reads its table's Delta log, not its name: it keeps its offset."""
        return replace(self, source=new_name) if relation == self.source else None

    def mistaken_for(self, wanted: type[CatalogObject]) -> LakeError:
        return LakeError(
            f"{self.name} is a stream: it shows another table's changes and cannot be written",
            f"read it with SELECT … FROM {self.name}, and write the table it reads "
            f"({self.source}) or a table of your own instead",
        )
