"""The SQL dialect: script splitting, our DDL parser, and table binding for Spark SQL."""
