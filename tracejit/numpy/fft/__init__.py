"""``tracejit.numpy.fft``."""
__all__ = []
