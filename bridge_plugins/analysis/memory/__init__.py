"""CUDA memory snapshots: the data-only loader, the allocator replay, sites, figures, comparison."""
