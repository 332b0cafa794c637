"""Name dataflow of Python statements: what a loop or an ``if`` assigns, reads first, and leaves live.

The converter (:mod:`tracejit.autograph.transformer`) asks three questions of the user's
original AST, before rewriting it:

* which names a block may rebind (``assigned``), counting in-place mutation of an array
  (``y[i] = v``, ``y += v``, ``np.add(a, b, out=y)``, ``y.fill(0)``) as a rebinding, because
  a compiled loop returns the updated value as a new one;
* which names a block reads before it surely assigned them (``reads_first``): in a loop
  these come from the previous iteration, so they are carried;
* whether the block does something a traced body cannot (``blocker`` / ``side_effect``).

Examples
--------
>>> import ast
>>> body = ast.parse("t = x[i]\\ns = s + t").body
>>> sorted(assigned(body)), sorted(reads_first(body, set()))
(['s', 't'], ['i', 's', 'x'])
"""
from __future__ import annotations

import ast

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Methods that change a Python container in place: a traced loop body would run them once,
# with inner tracers, so a loop that calls them runs as a Python loop.
CONTAINER_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "update",
                                "setdefault", "popitem", "add", "discard"})
# Methods and functions that write an array in place: the receiver / first argument is
# treated as assigned so that a compiled loop carries its new value.
ARRAY_MUTATORS = frozenset({"fill", "sort", "put", "itemset", "partition", "resize"})
ARRAY_WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"})


def walk_scope(node):
    """``ast.walk`` that does not enter nested functions, lambdas, classes or comprehensions.

    Examples
    --------
    >>> import ast
    >>> [type(n).__name__ for n in walk_scope(ast.parse("def g(): y = 1").body[0])][:1]
    ['FunctionDef']
    """
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if n is not node and isinstance(n, _SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(n))


def _root_name(node):
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _stores_of(n) -> set:
    """Names node ``n`` itself (not its children) rebinds or mutates."""
    out = set()
    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
        out.add(n.id)
    elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
        r = _root_name(n)
        if r:
            out.add(r)
    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(n.name)
    elif isinstance(n, (ast.Import, ast.ImportFrom)):
        out.update((a.asname or a.name).split(".")[0] for a in n.names)
    elif isinstance(n, ast.NamedExpr):
        out.add(n.target.id)
    elif isinstance(n, ast.Call):
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in ARRAY_MUTATORS:
            r = _root_name(f.value)
            if r:
                out.add(r)
        if isinstance(f, ast.Attribute) and f.attr == "at" and n.args:    # np.add.at(a, idx, v)
            r = _root_name(n.args[0])
            if r:
                out.add(r)
        if isinstance(f, (ast.Attribute, ast.Name)):
            fname = f.attr if isinstance(f, ast.Attribute) else f.id
            if fname in ARRAY_WRITERS and n.args:
                r = _root_name(n.args[0])
                if r:
                    out.add(r)
        for kw in n.keywords:
            if kw.arg == "out":
                for e in (kw.value.elts if isinstance(kw.value, ast.Tuple) else [kw.value]):
                    r = _root_name(e)
                    if r:
                        out.add(r)
    return out


def assigned(stmts) -> set:
    """Names the statements may rebind or mutate in place (nested scopes excluded, their names included).

    Examples
    --------
    >>> import ast
    >>> sorted(assigned(ast.parse("a[0] = 1\\nb += 2\\nnp.add(a, b, out=c)").body))
    ['a', 'b', 'c']
    """
    out = set()
    for s in stmts:
        for n in walk_scope(s):
            out |= _stores_of(n)
    return out | _bases_written_through_views(stmts)


_VIEW_METHODS = {"reshape", "view", "transpose", "swapaxes", "ravel", "squeeze", "T", "mT", "real", "imag"}


def _bases_written_through_views(stmts) -> set:
    """Names whose array the statements may write through a view bound to another name,
    ``t = A[i, :i]; t *= 2`` (A is written, though no statement names it as a target).

    Examples
    --------
    >>> import ast
    >>> sorted(_bases_written_through_views(ast.parse("t = A[:, 0]\\nt *= 2\\nu = B.T\\nv = u").body))
    ['A']
    """
    views, in_place = {}, set()
    for s in stmts:
        for n in walk_scope(s):
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)):
                v = n.value
                if isinstance(v, ast.Call):
                    v = v.func if isinstance(v.func, ast.Attribute) and v.func.attr in _VIEW_METHODS else None
                if isinstance(v, ast.Attribute) and v.attr not in _VIEW_METHODS:
                    v = None
                base = _root_name(v) if isinstance(v, (ast.Subscript, ast.Attribute, ast.Name)) else None
                if base and base != n.targets[0].id:
                    views.setdefault(n.targets[0].id, set()).add(base)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                in_place.add(n.target.id)
            elif isinstance(n, (ast.Subscript, ast.Call)):
                in_place |= {r for r in _stores_of(n)}
    out, todo = set(), [t for t in in_place if t in views]
    while todo:
        for base in views.get(todo.pop(), ()):
            if base not in out:
                out.add(base)
                todo.append(base)
    return out


def written_in_place(fn) -> set:
    """Names whose array the function writes in place (``a[i] = v``, ``a += v``, ``out=a``,
    ``np.add.at(a, ...)``, ``a.fill(...)``, ``np.copyto(a, ...)``), nested scopes excluded.

    Examples
    --------
    >>> import ast
    >>> sorted(written_in_place(ast.parse("a[0] = 1\\nb = 2\\nc += 1\\nnp.add.at(d, i, 1)")))
    ['a', 'c', 'd']
    """
    out = set()
    for n in walk_scope(fn):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        elif isinstance(n, (ast.Subscript, ast.Call)):
            out |= _stores_of(n)
    return out


def loads(node) -> set:
    """Every name read anywhere under ``node``, nested scopes included (they read at call time).

    Examples
    --------
    >>> import ast
    >>> sorted(loads(ast.parse("y = f(x)")))
    ['f', 'x']
    """
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


def reads_first(stmts, defined: set) -> set:
    """Names read before the statements surely assign them, given ``defined`` on entry.

    An ``if`` defines what both branches define; a loop body defines nothing after it
    (it may run zero times). Conservative: a name read in a nested scope counts as read.

    Examples
    --------
    >>> import ast
    >>> sorted(reads_first(ast.parse("if c:\\n    t = 1\\nelse:\\n    t = 2\\nu = t + v").body, set()))
    ['c', 'v']
    """
    defined = set(defined)
    out = set()
    _reads_block(stmts, defined, out)
    return out


def _reads_block(stmts, defined, out):
    for s in stmts:
        _reads_stmt(s, defined, out)


def _reads_stmt(s, defined, out):
    if isinstance(s, ast.If):
        out |= loads(s.test) - defined
        d1, d2 = set(defined), set(defined)
        _reads_block(s.body, d1, out)
        _reads_block(s.orelse, d2, out)
        defined |= d1 & d2
    elif isinstance(s, (ast.For, ast.AsyncFor)):
        out |= loads(s.iter) - defined
        d = set(defined) | assigned([ast.Assign(targets=[s.target], value=ast.Constant(0))])
        _reads_block(s.body, d, out)
        _reads_block(s.orelse, set(defined), out)
    elif isinstance(s, ast.While):
        out |= loads(s.test) - defined
        _reads_block(s.body, set(defined), out)
        _reads_block(s.orelse, set(defined), out)
    elif isinstance(s, (ast.With, ast.AsyncWith)):
        for item in s.items:
            out |= loads(item.context_expr) - defined
            if item.optional_vars is not None:
                defined |= assigned([ast.Assign(targets=[item.optional_vars], value=ast.Constant(0))])
        _reads_block(s.body, defined, out)
    elif isinstance(s, ast.Try):
        _reads_block(s.body, defined, out)
        for h in s.handlers:
            _reads_block(h.body, set(defined), out)
        _reads_block(s.orelse, defined, out)
        _reads_block(s.finalbody, defined, out)
    else:
        # A simple statement (or a nested def/class): its reads happen before its stores.
        out |= loads(s) - defined
        for n in walk_scope(s):
            if isinstance(n, (ast.Name,)) and isinstance(n.ctx, ast.Store):
                defined.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(n.name)


def blocker(stmts, loop: bool):
    """Why the statements cannot become a traced function (``(reason, line)``), or None.

    ``return``/``yield``/``await`` leave the function, ``global``/``nonlocal``/``del`` change
    scopes; for an ``if`` (``loop=False``) a ``break``/``continue`` of an enclosing Python loop
    cannot cross a function boundary either.

    Examples
    --------
    >>> import ast
    >>> blocker(ast.parse("if c:\\n    return 1").body, loop=True)
    ('`return`', 2)
    """
    for s in stmts:
        stack = [(s, 0)]
        while stack:
            n, depth = stack.pop()
            if isinstance(n, _SCOPES):
                continue
            if isinstance(n, ast.Return):
                return "`return`", n.lineno
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
                return "`yield`/`await`", n.lineno
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                return "`global`/`nonlocal`", n.lineno
            if isinstance(n, ast.Delete):
                return "`del`", n.lineno
            if isinstance(n, (ast.Break, ast.Continue)) and depth == 0 and not loop:
                return f"`{type(n).__name__.lower()}`", n.lineno
            inner = depth + isinstance(n, (ast.For, ast.While, ast.AsyncFor))
            stack.extend((c, inner) for c in ast.iter_child_nodes(n))
    return None


def side_effect(stmts):
    """A Python side effect a traced body would run once instead of every time: ``(what, line)`` or None.

    Examples
    --------
    >>> import ast
    >>> side_effect(ast.parse("out.append(x)").body)
    ('`out.append(...)`', 1)
    """
    for s in stmts:
        for n in walk_scope(s):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                return "an attribute assignment", n.lineno
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr in CONTAINER_MUTATORS and isinstance(n.func.value, ast.Name)):
                return f"`{n.func.value.id}.{n.func.attr}(...)`", n.lineno
    return None
