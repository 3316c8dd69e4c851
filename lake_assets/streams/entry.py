"""A table stream as the catalog keeps it: where it reads, and the offset it has consumed to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lake_assets.core.entries import RELATION, CatalogObject
from lake_assets.core.errors import LakeError
from lake_assets.core.states import StreamMode


@dataclass(frozen=True)
class Claim:
    """A statement consuming the stream right now: it writes `target` (read at version `after`)
    with the commit tagged `tag`, and moves the offset to `end` if that commit lands."""

    tag: str
    target: str
    after: int
    end: int
    owner: str


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

    def mistaken_for(self, wanted: type[CatalogObject]) -> LakeError:
        return LakeError(
            f"{self.name} is a stream: it shows another table's changes and cannot be written",
            f"read it with SELECT … FROM {self.name}, and write the table it reads "
            f"({self.source}) or a table of your own instead",
        )
