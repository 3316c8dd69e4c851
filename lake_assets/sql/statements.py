"""Parsed statements: plain data that the engine executes."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Dml:
    """INSERT, UPDATE, DELETE or MERGE on one target table."""

    operation: str
    target: str
    expression: exp.Expression


Statement = (
    CreateTable
    | DropTable
    | AlterTableProperties
    | DescribeTable
    | DescribeHistory
    | ShowTables
    | Query
    | Dml
)
