"""Primitives: linalg."""
