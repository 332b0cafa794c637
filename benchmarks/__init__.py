"""Benchmarks (run with `make bench`). Ratios are measured against peers in the same run."""
