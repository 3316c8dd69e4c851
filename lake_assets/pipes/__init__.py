"""Pipes: a volume's files loaded into a table continuously and exactly once (and COPY INTO)."""
