"""Primitives: indexing."""
