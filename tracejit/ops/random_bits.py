"""Primitives: random_bits."""
