"""Benchmarks for bridge_plugins (run from the repo root, e.g. ``python -m benchmarks.controller_overhead``)."""
