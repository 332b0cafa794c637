"""User-facing errors. Each message says what happened and how to fix it."""
from __future__ import annotations


class TracejitError(Exception):
    """Base class of tracejit's own errors."""


class JAXTypeError(TracejitError, TypeError):
    """Base of the tracer errors that JAX makes TypeErrors (``jax.errors.JAXTypeError``)."""


class JAXIndexError(TracejitError, IndexError):
    """Base of the indexing errors that JAX makes IndexErrors (``jax.errors.JAXIndexError``)."""


class ConcretizationTypeError(JAXTypeError):
    """A concrete Python value was needed from a traced (abstract) array.

    Under ``jit`` arrays are abstract: only their shape and dtype are known.
    Python control flow (``if``, ``while``), ``float(x)``, ``int(x)`` and
    indexing with traced values need the value itself.

    Fixes: use ``lax.cond`` / ``lax.switch`` / ``lax.while_loop`` /
    ``lax.fori_loop`` or ``jnp.where`` for data-dependent control flow, or
    mark the argument static with ``jit(f, static_argnums=...)`` /
    ``static_argnames=...`` if its value really decides the program.
    """


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced array, e.g. ``if x > 0:`` inside ``jit``."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()`` / ``__index__`` of a traced array, e.g. ``range(x)`` or ``lst[x]``."""


class TracerArrayConversionError(JAXTypeError):
    """``np.asarray(tracer)``: a traced array cannot become a NumPy array."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the function that was being traced and was used later."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """Boolean-mask indexing whose result shape depends on the data."""


class ProgramTypeError(TracejitError, TypeError):
    """The program checker found an equation whose types do not match its rule."""


class JaxRuntimeError(TracejitError, RuntimeError):
    """An error while running compiled code (``jax.errors.JaxRuntimeError``)."""


class DeletedArrayError(TracejitError, RuntimeError):
    """An array donated to a jitted call (``donate_argnums``) was passed to a call again.

    The call wrote its result into the donated array's memory, so the array
    no longer holds the value it was created with (JAX deletes such arrays).
    Use the call's result instead, or pass a copy / don't donate the argument.
    """


FIX_CONTROL_FLOW = (
    "Fix: express data-dependent control flow with tracejit.lax.cond / lax.switch / "
    "lax.while_loop / lax.fori_loop or jnp.where, or mark the argument static with "
    "jit(f, static_argnums=...) or static_argnames=... if its value decides the program.")


def concretization_message(what: str, tracer) -> str:
    return (f"{what} needs a concrete value, but {tracer._describe()} is abstract under "
            f"tracing (only its shape and dtype are known). {FIX_CONTROL_FLOW}")


def escaped_tracer_message(tracer) -> str:
    return (f"Encountered an unexpected tracer: {tracer._describe()} belongs to a trace that "
            f"has already finished (it was created while tracing {tracer._trace.name!r}). "
            "A traced value leaked out of the function being transformed, e.g. by being "
            "stored in a global, a closure or an attribute. Return it from the function "
            "instead, or pass it in as an argument.")
