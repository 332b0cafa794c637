"""Gather/scatter and dynamic slicing: dynamic_slice, dynamic_update_slice, gather, scatter."""
__all__ = []
