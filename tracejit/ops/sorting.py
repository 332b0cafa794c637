"""Primitives: sorting."""
