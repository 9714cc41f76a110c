"""Benchmark harness: ``python -m hypersched_nb bench`` (DESIGN.md's contract; see ``cli``)."""
