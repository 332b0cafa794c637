"""JAX's error classes (``jax.errors``), with JAX's base classes.

The tracer errors are TypeErrors (through :class:`JAXTypeError`), as in JAX, and
:class:`NonConcreteBooleanIndexError` is an IndexError. Every message says how
to fix the program.

Differences from JAX: :class:`TracerIntegerConversionError` is also a
:class:`ConcretizationTypeError` (tracejit raises it for ``int(tracer)`` too,
where JAX raises ConcretizationTypeError). :class:`KeyReuseError` is
``tracejit.random.KeyReuseError``, a :class:`JAXTypeError` as in JAX;
:class:`JaxprTypeError` is tracejit's IR checker error, ``ProgramTypeError``.

Examples
--------
>>> import numpy as np, tracejit
>>> try:
...     tracejit.jit(lambda x: 1 if x > 0 else 0)(np.float64(1.0))
... except tracejit.errors.TracerBoolConversionError as e:
...     print(isinstance(e, TypeError))
True
"""
from tracejit.core.errors import (ConcretizationTypeError, JAXIndexError, JaxRuntimeError, JAXTypeError,
                                  NonConcreteBooleanIndexError, ProgramTypeError, TracerArrayConversionError,
                                  TracerBoolConversionError, TracerIntegerConversionError, TracejitError,
                                  UnexpectedTracerError)
from tracejit.random import KeyReuseError

JaxprTypeError = ProgramTypeError
"""tracejit's IR checker error (``config.enable_checks``); JAX's ``JaxprTypeError``."""

__all__ = ["ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "JaxRuntimeError", "JaxprTypeError",
           "KeyReuseError", "NonConcreteBooleanIndexError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "TracejitError", "UnexpectedTracerError"]
