"""``tracejit.experimental``: the parts of ``jax.experimental`` tracejit has (``io_callback``, ``sparse``)."""
from tracejit.api_callback import io_callback
from tracejit.experimental import sparse

__all__ = ["io_callback", "sparse"]
