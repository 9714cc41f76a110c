"""Benchmark harness: ``python -m hypersched_nb bench`` (a contract: docs/design.md; see ``cli``)."""
