"""Benchmark harness: tux2 and its peers side by side, one JSON line per result."""
