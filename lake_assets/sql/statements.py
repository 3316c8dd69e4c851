"""Statements every kind shares: Spark SQL queries and DML, and SHOW / DESC / DROP of an object.
Each kind's own statements live in its package's grammar."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp


class Statement:
    """Base of every parsed statement: plain data that the session hands to its kind."""


class Source:
    """Base of the special relations a query may read (a volume's files, load history, …)."""


@dataclass(frozen=True)
class Query(Statement):
    """A SELECT (with joins, aggregates, UNION ALL, ORDER BY …) in Spark SQL."""

    expression: exp.Expr
    sources: dict[str, Source] = field(default_factory=dict)


@dataclass(frozen=True)
class Dml(Statement):
    """INSERT, UPDATE, DELETE or MERGE on one target table."""

    operation: str
    target: str
    expression: exp.Expr
    sources: dict[str, Source] = field(default_factory=dict)


@dataclass(frozen=True)
class ShowObjects(Statement):
    """SHOW VOLUMES / PIPES / CONNECTIONS / DYNAMIC TABLES."""

    kind: str


@dataclass(frozen=True)
class DescribeObject(Statement):
    """DESC VOLUME / PIPE [EXTENDED] / CONNECTION / DYNAMIC TABLE."""

    kind: str
    name: str
    extended: bool = False


@dataclass(frozen=True)
class DropObject(Statement):
    """DROP VOLUME / PIPE / STORAGE CONNECTION / DYNAMIC TABLE [IF EXISTS]."""

    kind: str
    name: str
    if_exists: bool = False
