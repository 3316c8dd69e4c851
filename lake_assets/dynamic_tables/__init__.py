"""Dynamic tables: SQL-defined tables that keep themselves up to date incrementally."""
