"""What a refresh runs on: the sources as read now and as last read (sources), signed rows and
netting, recompute by key, the SQL over views, the write of the refresh's one commit, pruning and
the choice of FULL or INCREMENTAL."""
