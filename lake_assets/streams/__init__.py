"""Table streams: cursors on a table's or dynamic table's history whose offsets move only with
the committed write that consumed them."""
