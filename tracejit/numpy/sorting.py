"""Sorting, searching and counting (sort, argsort, nonzero with size=, unique with size=, ...)."""
__all__ = []
