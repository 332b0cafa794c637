"""``tracejit.numpy.linalg``."""
__all__ = []
