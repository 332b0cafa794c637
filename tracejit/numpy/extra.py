"""Breadth of the NumPy API built from primitives (roll, tile, pad, triu, ...)."""
__all__ = []
