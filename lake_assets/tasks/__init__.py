"""Tasks: one DML statement that runs by itself, on a schedule or when its streams have data,
and consumes those streams exactly once."""
