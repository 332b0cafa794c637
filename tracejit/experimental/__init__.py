"""``tracejit.experimental``: the parts of ``jax.experimental`` tracejit has (``io_callback``)."""
from tracejit.api_callback import io_callback

__all__ = ["io_callback"]
