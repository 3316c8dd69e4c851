"""What a query is, read without changing it: its keys, why a SELECT cannot be maintained where it
stands, the aggregates it folds, its top-N and its grouping sets; used by the rewrites, the
lowering and the operators."""
