"""What an object kind brings to the house: its SQL, the handlers of its statements, and its
Dagster definitions. `lake_assets.kinds` lists the kinds; nothing else enumerates them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from lake_assets.core.results import Result
from lake_assets.sql.grammar import ObjectWords, SourceParser, StatementParser
from lake_assets.sql.statements import DescribeObject, DropObject

if TYPE_CHECKING:
    from lake_assets.core.catalog import Catalog
    from lake_assets.session import LakeSession
    from lake_assets.streams.entry import Claim

Handler = Callable[["LakeSession", Any], Result]
SourceReader = Callable[["LakeSession", Any], DataFrame]


@dataclass(frozen=True)
class Kind:
    """One object kind. `words` is how SHOW / DESC / DROP spell it (None: it spells its own)."""

    name: str
    statements: Mapping[tuple[str, ...], StatementParser] = field(default_factory=dict)
    handlers: Mapping[type, Handler] = field(default_factory=dict)
    sources: Mapping[str, SourceParser] = field(default_factory=dict)
    readers: Mapping[type, SourceReader] = field(default_factory=dict)
    words: ObjectWords | None = None
    show: Callable[[LakeSession], Result] | None = None
    describe: Callable[[LakeSession, DescribeObject], Result] | None = None
    drop: Callable[[LakeSession, DropObject], Result] | None = None
    # Whether a consuming write to an object of this kind landed, for a claim whose `landing`
    # names the kind: how streams.offsets settles a dead writer's claim (tables': built in).
    landed: Callable[[Catalog, Claim], bool] | None = None
    # The module whose `build_defs(catalog, settings)` makes the kind's Dagster definitions;
    # named, not imported, so that `lake sql` never imports Dagster.
    defs: str | None = None
