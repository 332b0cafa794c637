"""Index-based functions of the NumPy API (take, take_along_axis, ...)."""
__all__ = []
