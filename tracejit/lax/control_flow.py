"""Structured control flow: cond, switch, while_loop, fori_loop, scan, map."""
__all__ = []
