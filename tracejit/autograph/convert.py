"""Source capture and compilation of converted functions, cached per function object.

A function is converted when Python can show its source (``inspect.getsource``), it is user
code (not tracejit's, NumPy's, JAX's, SciPy's or the standard library's), and it has a loop or
an ``if`` to convert. Anything else -- builtins, C functions, REPL functions without source,
lambdas (they have no statements), generators, methods using ``super()`` or private
``__names`` -- is returned unchanged, silently.

The converted function keeps the original's globals (read live), closure cells (the same
cells, so later rebinding is seen), defaults and name; it is compiled with the original file
name and line numbers, so tracebacks show the user's lines.

Examples
--------
>>> def f(x):
...     for i in range(3):
...         x = x + i
...     return x
>>> g = convert(f)       # doctest source has no file: returned unchanged
>>> g(0)
3
"""
from __future__ import annotations

import ast
import dis
import inspect
import linecache
import os
import sysconfig
import textwrap
import threading
import types
import weakref

from tracejit.autograph import runtime
from tracejit.autograph import analysis
from tracejit.autograph.transformer import AG, BUILTINS, CREATION, Converter, is_creation

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_SKIP_PACKAGES = frozenset({"tracejit", "numpy", "scipy", "jax", "jaxlib", "builtins"})
_STDLIB = tuple(os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib"))
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep     # tracejit/


def _ag_namespace():
    ns = types.SimpleNamespace(**{name: getattr(runtime, name) for name in (
        "for_range", "for_iter", "while_stmt", "if_stmt", "static_test", "range_params", "ld",
        "and_", "or_", "not_", "py_max", "py_min", "py_int", "py_float", "new_array")})
    ns.cc = converted_call
    return ns


def is_user_code(fun) -> bool:
    """Whether ``fun`` is a Python function of user code (not a library's or the standard library's).

    Examples
    --------
    >>> import numpy as np
    >>> is_user_code(np.mean), is_user_code(len)
    (False, False)
    """
    if not isinstance(fun, types.FunctionType):
        return False
    module = (getattr(fun, "__module__", None) or "").split(".")[0]
    if module in _SKIP_PACKAGES:
        return False
    # By where the code is, not by ``__module__``: a wrapper made with functools.wraps (tracejit's
    # grad of a user function) carries the user function's module and name.
    path = os.path.realpath(fun.__code__.co_filename)
    return not path.startswith(_STDLIB + (_PACKAGE,)) and "site-packages" not in path


def converted_call(fun, caller_module):
    """``fun`` converted when it is a user function of the caller's module, else ``fun`` itself.

    Converted code calls it for every plain-name call (``g(x)``); the call itself is unchanged.

    Examples
    --------
    >>> converted_call(len, "__main__") is len
    True
    """
    if isinstance(fun, types.FunctionType) and fun.__module__ == caller_module:
        return convert(fun)
    return fun


def convert(fun):
    """``fun`` with its loops and ``if`` statements rewritten for tracing (cached per function).

    Parameters
    ----------
    fun : callable
        A function or bound method; anything else is returned unchanged.

    Returns
    -------
    callable
        The converted function, or ``fun`` itself when it cannot or need not be converted.

    Examples
    --------
    >>> convert(len) is len
    True
    """
    if isinstance(fun, types.MethodType):
        f = convert(fun.__func__)
        return fun if f is fun.__func__ else types.MethodType(f, fun.__self__)
    if not is_user_code(fun):
        return fun
    try:
        hit = _cache.get(fun)
    except TypeError:
        return fun
    if hit is not None:
        return hit
    with _lock:
        try:
            out = _convert(fun)
        except (OSError, TypeError, SyntaxError, ValueError, IndexError):
            out = fun       # no (parseable) source: traced as written
        _cache[fun] = out
    return out


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _has_jumps(code) -> bool:
    """Whether the bytecode branches or loops (an ``if``, a loop, ``and``/``or``, a conditional
    expression): only such functions can hold something to convert."""
    return any(ins.opcode in _JUMPS for ins in dis.get_instructions(code))


def _convert(fun):
    code = fun.__code__
    if fun.__name__ == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                                      | inspect.CO_ASYNC_GENERATOR):
        return fun
    if "__class__" in code.co_freevars:      # zero-argument super() needs the class cell
        return fun
    if not _has_jumps(code) and not CREATION & set(code.co_names):
        return fun          # straight-line code making no NumPy array: nothing to convert (no source read)
    # The source of this code object, read from its file's lines: inspect.getsource(fun) would
    # follow ``__wrapped__`` to the function a wrapper wraps (and compile that in the wrapper's
    # place), and its module lookup walks every loaded module (tens of ms on a first call).
    lines = linecache.getlines(code.co_filename, fun.__globals__)
    if not lines or code.co_firstlineno > len(lines):
        return fun
    source = textwrap.dedent("".join(inspect.getblock(lines[code.co_firstlineno - 1:])))
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != code.co_name:
        return fun
    fn = tree.body[0]
    # getsource starts at the first decorator, which is where co_firstlineno points.
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    written = analysis.written_in_place(fn)
    if not any(isinstance(n, (ast.For, ast.While, ast.If)) or is_creation(n, written) for n in ast.walk(fn)):
        return fun          # nothing to convert: the function is traced exactly as written
    for n in ast.walk(fn):
        ident = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if ident.startswith("__") and not ident.endswith("__"):
            return fun      # private names were mangled by the class body; recompiling would break them
    fn.decorator_list = []
    shadowed = ({"range"} | set(BUILTINS)) & (set(fun.__globals__) | set(code.co_varnames) | set(code.co_freevars))
    Converter(fn, shadowed).convert()
    # A factory whose parameters are the free variables, so the inner function's free
    # variables can be bound to the original cells.
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(
        name=f"{AG}_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=v) for v in freevars + [AG]], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fn, ast.Return(value=ast.Name(id=fn.name, ctx=ast.Load()))], decorator_list=[], returns=None,
        type_comment=None)
    ast.copy_location(factory, fn)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.name)
    cells = dict(zip(code.co_freevars, fun.__closure__ or ()))
    cells[AG] = types.CellType(_AG)
    closure = tuple(cells[v] for v in new_code.co_freevars)
    out = types.FunctionType(new_code, fun.__globals__, fun.__name__, fun.__defaults__, closure)
    out.__kwdefaults__ = fun.__kwdefaults__
    out.__qualname__ = fun.__qualname__
    out.__module__ = fun.__module__
    out.__doc__ = fun.__doc__
    out.__dict__.update(fun.__dict__)
    out.__wrapped__ = fun
    out.__autograph_source__ = ast.unparse(fn)   # what was compiled, for debugging
    _cache[out] = out                            # converting a converted function is a no-op
    return out


_AG = _ag_namespace()
