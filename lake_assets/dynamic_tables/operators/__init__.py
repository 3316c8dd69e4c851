"""The operators a dynamic table's query is lowered to (see lowering): each a node of the tree that
refreshes it, owning its state columns, its change rule and its line of EXPLAIN."""
