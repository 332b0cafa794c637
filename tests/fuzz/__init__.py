"""Differential fuzzers: random programs checked against NumPy (issue 12).

``program_gen`` writes random, seeded programs as Python source over an array module ``xp``;
``program_check`` runs them with NumPy (the oracle), under ``tracejit.jit`` on the CPU backend
(twice, bitwise equal) and on the reference backend, compares, buckets mismatches and writes
minimized standalone reproducers::

    python -m tests.fuzz.program_check --start 0 --count 1000 --jobs 2
"""
