"""tracejit's version (``jax.version``'s counterpart).

Examples
--------
>>> import tracejit
>>> tracejit.version.__version__ == tracejit.__version__
True
>>> tracejit.__version_info__ >= (0, 1, 0)
True
"""
__version__ = "0.1.0"
_version = __version__
__version_info__ = tuple(int(p) for p in __version__.split(".")[:3])
