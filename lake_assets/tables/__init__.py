"""Tables: Delta tables the lakehouse owns, written by SQL, pipes and tasks."""
