"""Parsed statements: plain data that the engine executes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from resources.catalog import Column


@dataclass(frozen=True)
class CreateTable:
    name: str
    columns: tuple[Column, ...]
    comment: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropTable:
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class AlterTableProperties:
    name: str
    properties: dict[str, str]


@dataclass(frozen=True)
class DescribeTable:
    name: str


@dataclass(frozen=True)
class DescribeHistory:
    name: str


@dataclass(frozen=True)
class ShowTables:
    pass


@dataclass(frozen=True)
class Query:
    """A SELECT (with joins, aggregates, UNION ALL, ORDER BY …) in Spark SQL."""

    expression: exp.Expression
    sources: dict[str, Source] = field(default_factory=dict)


@dataclass(frozen=True)
class Dml:
    """INSERT, UPDATE, DELETE or MERGE on one target table."""

    operation: str
    target: str
    expression: exp.Expression
    sources: dict[str, Source] = field(default_factory=dict)


@dataclass(frozen=True)
class VolumeSource:
    """Files of a volume read as a relation: `VOLUME v [(cols)] USING fmt [OPTIONS…] [FILES…]`."""

    volume: str
    file_format: str
    columns: tuple[Column, ...] | None = None
    options: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] | None = None
    subdirectory: str | None = None


@dataclass(frozen=True)
class DirectorySource:
    """`DIRECTORY(VOLUME v)`: the volume's directory table."""

    volume: str


@dataclass(frozen=True)
class LoadHistorySource:
    """`load_history('t')`: the table's load records of the retention window."""

    table: str


Source = VolumeSource | DirectorySource | LoadHistorySource


@dataclass(frozen=True)
class CreateConnection:
    name: str
    type: str
    endpoint: str | None = None
    access_id: str | None = None
    access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateVolume:
    name: str
    location: str
    connection: str
    directory_enabled: bool = True
    auto_refresh: bool = False
    recursive: bool = True
    comment: str | None = None
    queue_type: str | None = None
    queue_name: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class RefreshVolume:
    name: str


@dataclass(frozen=True)
class DropObject:
    """DROP VOLUME / PIPE / STORAGE CONNECTION."""

    kind: str
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class ShowObjects:
    """SHOW VOLUMES / PIPES / CONNECTIONS."""

    kind: str


@dataclass(frozen=True)
class DescribeObject:
    """DESC VOLUME / PIPE [EXTENDED] / CONNECTION."""

    kind: str
    name: str
    extended: bool = False


@dataclass(frozen=True)
class CopyIntoVolume:
    volume: str
    file_format: str
    subdirectory: str = ""
    table: str | None = None
    query: Query | None = None
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CopyIntoTable:
    table: str
    source: VolumeSource
    purge: bool = False
    force: bool = False


@dataclass(frozen=True)
class CreatePipe:
    name: str
    copy: CopyIntoTable
    copy_text: str
    ingest_mode: str = "LIST_PURGE"
    virtual_cluster: str | None = None
    comment: str | None = None
    poll_interval_seconds: int = 5
    if_not_exists: bool = False
    backfill_interval_seconds: int = 60


@dataclass(frozen=True)
class AlterPipe:
    name: str
    paused: bool | None = None
    refresh: bool = False


@dataclass(frozen=True)
class CreateDynamicTable:
    """`CREATE [OR REPLACE] DYNAMIC TABLE … AS SELECT …`; `columns` rename the query's outputs."""

    name: str
    query: Query
    query_text: str
    columns: tuple[Column, ...] = ()
    refresh_interval_seconds: int | None = None
    vcluster: str | None = None
    comment: str | None = None
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class RefreshDynamicTable:
    name: str


@dataclass(frozen=True)
class DropDynamicTable:
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class ShowDynamicTables:
    pass


@dataclass(frozen=True)
class DescribeDynamicTable:
    name: str


@dataclass(frozen=True)
class ShowRefreshHistory:
    """`SHOW DYNAMIC TABLE REFRESH HISTORY [WHERE name = '…']`."""

    name: str | None = None


@dataclass(frozen=True)
class AlterDynamicTable:
    name: str
    suspended: bool


Statement = (
    CreateTable
    | DropTable
    | AlterTableProperties
    | DescribeTable
    | DescribeHistory
    | ShowTables
    | Query
    | Dml
    | CreateConnection
    | CreateVolume
    | RefreshVolume
    | DropObject
    | ShowObjects
    | DescribeObject
    | CopyIntoVolume
    | CopyIntoTable
    | CreatePipe
    | AlterPipe
    | CreateDynamicTable
    | RefreshDynamicTable
    | DropDynamicTable
    | ShowDynamicTables
    | DescribeDynamicTable
    | ShowRefreshHistory
    | AlterDynamicTable
)
