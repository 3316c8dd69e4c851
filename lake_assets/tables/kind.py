"""The tables kind as registered in lake_assets.kinds: its SQL, handlers and definitions."""

from lake_assets.core.kind import Kind
from lake_assets.sql.statements import Dml
from lake_assets.tables import engine
from lake_assets.tables.alterations import AlterTableColumns, RenameTable
from lake_assets.tables.columns import alter_columns
from lake_assets.tables.constraints import add_expectation, drop_expectation
from lake_assets.tables.create_as import create_table_as
from lake_assets.tables.dml import execute_dml
from lake_assets.tables.grammar import (
    SOURCES,
    STATEMENTS,
    AddExpectation,
    AlterTableClustering,
    AlterTablePrimaryKey,
    AlterTableProperties,
    CreateTable,
    CreateTableAs,
    DescribeHistory,
    DescribeTable,
    DropExpectation,
    DropTable,
    Optimize,
    QuarantinedRowsSource,
    RestoreTable,
    ShowTables,
)
from lake_assets.tables.quarantine import read_quarantined_rows
from lake_assets.tables.rename import rename_table
from lake_assets.tables.restore import restore_table

KIND = Kind(
    name="table",
    statements=STATEMENTS,
    handlers={
        CreateTable: engine.create_table,
        CreateTableAs: create_table_as,
        DropTable: engine.drop_table,
        AlterTableProperties: engine.alter_properties,
        AlterTablePrimaryKey: engine.alter_primary_key,
        AlterTableClustering: engine.alter_clustering,
        AlterTableColumns: alter_columns,
        AddExpectation: add_expectation,
        DropExpectation: drop_expectation,
        RenameTable: rename_table,
        Optimize: engine.optimize,
        RestoreTable: restore_table,
        DescribeTable: engine.describe_table,
        DescribeHistory: engine.describe_history,
        ShowTables: engine.show_tables,
        Dml: execute_dml,
    },
    sources=SOURCES,
    readers={QuarantinedRowsSource: read_quarantined_rows},
    defs="lake_assets.tables.defs",
)
