"""The source rewrite: loops and ``if`` statements become calls of :mod:`tracejit.autograph.runtime`.

A statement becomes local functions of its state (the variables it carries) and one call::

    for i in range(n):            def __ag_body_1(__ag_t, __ag_s):
        s = s + x[i]      ==>         i = __ag_t
                                      (s,) = __ag_s
                                      s = s + x[i]
                                      return (s,)
                                  (s,) = __ag.for_range(range, (n,), __ag_body_1,
                                                        __ag.ld(locals(), ('s',), 1), ('s',), 1, None)

The state of a loop: names the body assigns that it reads before assigning (the previous
iteration's value) or that are read later (live after it). Of an ``if``: names either branch
assigns that are live after it or read in a branch before assigned. Every generated node keeps
the line of the statement it replaces, so tracebacks and errors point at the user's lines.

``break`` and ``continue`` become flags: statements after them in the body run under
``if not flag:``, and a ``for i in range(...)`` with ``break`` becomes a counted ``while``
whose condition tests the flag. A loop or ``if`` containing ``return``/``yield``/``global``/
``nonlocal``/``del`` stays Python (its test raises a clear error if it is traced).

Examples
--------
>>> import ast
>>> fn = ast.parse("def f(x):\\n    for i in range(3):\\n        x = x + i\\n    return x").body[0]
>>> "for_range" in ast.unparse(Converter(fn, set()).convert())
True
"""
from __future__ import annotations

import ast
import builtins

from tracejit.autograph import analysis

AG = "__ag"
# Builtins whose traced-scalar form autograph supplies (runtime.py_max...): Python's max(a, b)
# on traced scalars would ask for bool(b > a).
BUILTINS = {"max": "py_max", "min": "py_min", "int": "py_int", "float": "py_float"}
# NumPy creation functions: an array made by one of them and then written in place with traced
# values becomes a traced NumPy array (runtime.new_array).
CREATION = frozenset({"zeros", "ones", "empty", "full", "eye", "identity", "arange", "array",
                      "zeros_like", "ones_like", "empty_like", "full_like", "linspace", "tri"})
_FLAG_FREE = (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _attr(fn):
    return ast.Attribute(value=_name(AG), attr=fn, ctx=ast.Load())


def _call(fn, *args):
    return ast.Call(func=_attr(fn), args=list(args), keywords=[])


def _tuple(names, store=False):
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store else ast.Load())


def _const_tuple(values):
    return ast.Tuple(elts=[ast.Constant(v) for v in values], ctx=ast.Load())


def _reason(r):
    return ast.Constant(None) if r is None else _const_tuple(r)


def _lambda(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), body=body)


def _def(name, params, body):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                           type_comment=None)


def _pos(node):
    return (node.end_lineno, node.end_col_offset)


class Converter(ast.NodeTransformer):
    """Rewrites one function definition (original AST, user line numbers); see the module docstring.

    Parameters
    ----------
    fn : ast.FunctionDef
        The function to convert (changed in place).
    shadowed : set of str
        Builtin names the user's function rebinds (``range``): such loops are not treated
        as ``range`` loops.

    Examples
    --------
    >>> import ast
    >>> fn = ast.parse("def f(x):\\n    return x").body[0]
    >>> Converter(fn, set()).convert() is fn
    True
    """

    def __init__(self, fn, shadowed):
        self.fn = fn
        self.shadowed = shadowed
        self.written = analysis.written_in_place(fn)
        self.count = 0
        self.loops = []         # loads of the enclosing loops (read again on their next iteration)
        # Names read in nested scopes may be read whenever those run: always live.
        self.always_live = set()
        self.load_at = []
        for n in ast.walk(fn):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not fn:
                self.always_live |= analysis.loads(n)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.load_at.append(((n.lineno, n.col_offset), n.id))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                self.load_at.append(((n.lineno, n.col_offset), n.target.id))

    def convert(self):
        self.fn.body = [self.visit(s) for s in self.fn.body]
        self.fn.body = [x for s in self.fn.body for x in (s if isinstance(s, list) else [s])]
        ast.fix_missing_locations(self.fn)
        return self.fn

    def _fresh(self, what):
        self.count += 1
        return f"{AG}_{what}_{self.count}"

    def _live_after(self, node):
        end = _pos(node)
        out = {name for pos, name in self.load_at if pos > end} | self.always_live
        for loads in self.loops:
            out |= loads
        return out

    def _located(self, nodes, node):
        for n in nodes:
            for m in ast.walk(n):
                if "lineno" in m._attributes and not hasattr(m, "lineno"):
                    ast.copy_location(m, node)
        return nodes

    def _visit_block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out or [ast.Pass()]

    # ------------------------------------------------------------------ boolean tests
    def _test(self, test):
        """``a and b`` / ``a or b`` / ``not a`` in a converted test work on traced values."""
        if any(isinstance(n, _FLAG_FREE) for n in ast.walk(test)):
            return test
        if isinstance(test, ast.BoolOp):
            fn = "and_" if isinstance(test.op, ast.And) else "or_"
            vals = [self._test(v) for v in test.values]
            acc = vals[-1]
            for v in reversed(vals[:-1]):
                acc = _call(fn, _lambda(v), _lambda(acc))
            return ast.copy_location(acc, test)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ast.copy_location(_call("not_", self._test(test.operand)), test)
        return test

    # ------------------------------------------------------------------ break / continue
    def _flags(self, stmts, brk, cont):
        """Replace the loop's own ``break``/``continue`` with flag assignments and guard what follows."""
        out = []
        for i, s in enumerate(stmts):
            hit = False
            if isinstance(s, (ast.Break, ast.Continue)):
                flag = brk if isinstance(s, ast.Break) else cont
                out.append(ast.copy_location(ast.Assign(targets=[_name(flag, True)], value=ast.Constant(True)), s))
                return out          # the rest of this block never runs
            if isinstance(s, ast.If):
                s.body = self._flags(s.body, brk, cont) or [ast.Pass()]
                s.orelse = self._flags(s.orelse, brk, cont)
                hit = _jumps(s)
            elif isinstance(s, (ast.With, ast.AsyncWith, ast.Try)):
                s.body = self._flags(s.body, brk, cont)
                hit = _jumps(s)
            out.append(s)
            rest = stmts[i + 1:]
            if hit and rest:
                guard = [_call("not_", _name(f)) for f in (brk, cont) if f]
                test = guard[0] if len(guard) == 1 else _call("and_", _lambda(guard[0]), _lambda(guard[1]))
                g = ast.If(test=test, body=self._flags(rest, brk, cont), orelse=[])
                ast.copy_location(g, rest[0])
                g.end_lineno, g.end_col_offset = rest[-1].end_lineno, rest[-1].end_col_offset
                out.append(g)
                return out
        return out

    # ------------------------------------------------------------------ statements
    def visit_FunctionDef(self, node):
        saved, self.loops = self.loops, []
        node.body = self._visit_block(node.body)
        self.loops = saved
        return node

    def visit_ClassDef(self, node):
        return node     # names in a class body are mangled (``__ag`` would not resolve): left as written

    def visit_Assign(self, node):
        self.generic_visit(node)
        if is_creation(node, self.written):
            # ``a = np.zeros(n)`` and later ``a[i] = v``: traced when v is (runtime decides).
            node.value = ast.copy_location(_call("new_array", node.value, ast.Constant(node.value.func.attr)),
                                           node.value)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in BUILTINS and f.id not in self.shadowed:
            node.func = ast.copy_location(_attr(BUILTINS[f.id]), f)
        elif isinstance(f, ast.Name) and f.id not in builtins.__dict__ and not f.id.startswith(AG):
            # A function of the user's module called here is converted too (runtime decides).
            node.func = ast.copy_location(_call("cc", f, _name("__name__")), f)
        return node

    def visit_If(self, node):
        block = analysis.blocker(node.body + node.orelse, loop=False)
        if block is not None:
            self.generic_visit(node)
            node.test = ast.copy_location(_call("static_test", node.test, ast.Constant(node.lineno),
                                                _reason(block)), node.test)
            return node
        a_then, a_else = analysis.assigned(node.body), analysis.assigned(node.orelse)
        reads = analysis.reads_first(node.body, set()) | analysis.reads_first(node.orelse, set())
        outs = sorted((a_then | a_else) & (self._live_after(node) | reads))
        side = analysis.side_effect(node.body + node.orelse)
        test = self._test(self.visit(node.test))
        body, orelse = self._visit_block(node.body), self._visit_block(node.orelse)
        t_name, e_name = self._fresh("then"), self._fresh("else")
        defs = [self._state_fn(t_name, [], outs, body), self._state_fn(e_name, [], outs, orelse)]
        both = [i for i, n in enumerate(outs) if n in a_then and n in a_else]
        call = _call("if_stmt", test, _name(t_name), _name(e_name), self._ld(outs, node), _const_tuple(outs),
                     ast.Constant(node.lineno), _reason(side), _const_tuple(both))
        return self._located(defs + [self._bind(outs, call)], node)

    def visit_While(self, node):
        block = analysis.blocker(node.body, loop=True)
        if block is not None or node.orelse:
            self.generic_visit(node)
            node.test = ast.copy_location(_call("static_test", node.test, ast.Constant(node.lineno),
                                                _reason(block or ("`while ... else`", node.lineno))), node.test)
            return node
        pre = []
        brk, cont = _own_jumps(node.body)
        cont = self._fresh("cont") if cont else None
        if brk:
            brk = self._fresh("brk")
            pre.append(ast.Assign(targets=[_name(brk, True)], value=ast.Constant(False)))
            node.test = ast.BoolOp(op=ast.And(), values=[ast.UnaryOp(op=ast.Not(), operand=_name(brk)),
                                                         node.test])
        body = self._loop_body(node, node.body, brk, cont, extra_loads=analysis.loads(node.test))
        carried, side, stmts = body
        test = self._test(self.visit(node.test))
        c_name, b_name = self._fresh("cond"), self._fresh("body")
        cond_fn = self._state_fn(c_name, [], carried, [], ret=test)
        body_fn = self._state_fn(b_name, [], carried, stmts)
        call = _call("while_stmt", _name(c_name), _name(b_name), self._ld(carried, node),
                     _const_tuple(carried), ast.Constant(node.lineno), _reason(side))
        return self._located(pre + [cond_fn, body_fn, self._bind(carried, call)], node)

    def visit_For(self, node):
        is_range = (isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                    and node.iter.func.id == "range" and "range" not in self.shadowed
                    and not node.iter.keywords and 1 <= len(node.iter.args) <= 3
                    and not any(isinstance(a, ast.Starred) for a in node.iter.args))
        brk, cont = _own_jumps(node.body)
        target_ok = all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store))
                        for n in ast.walk(node.target))
        if (analysis.blocker(node.body, loop=True) is not None or node.orelse or not target_ok
                or (brk and not is_range)):
            self.generic_visit(node)
            return node
        if brk:
            return self._range_as_while(node)
        cont = self._fresh("cont") if cont else None
        target_names = analysis.assigned([ast.Assign(targets=[node.target], value=ast.Constant(0))])
        carried, side, stmts = self._loop_body(node, node.body, None, cont, defined=target_names)
        b_name = self._fresh("body")
        t_param = self._fresh("t")
        stmts = [ast.Assign(targets=[node.target], value=_name(t_param))] + stmts
        body_fn = self._state_fn(b_name, [t_param], carried, stmts)
        if is_range:
            args = ast.Tuple(elts=[self.visit(a) for a in node.iter.args], ctx=ast.Load())
            call = _call("for_range", _name("range"), args, _name(b_name), self._ld(carried, node),
                         _const_tuple(carried), ast.Constant(node.lineno), _reason(side))
        else:
            call = _call("for_iter", self.visit(node.iter), _name(b_name), self._ld(carried, node),
                         _const_tuple(carried), ast.Constant(node.lineno), _reason(side))
        return self._located([body_fn, self._bind(carried, call)], node)

    def _range_as_while(self, node):
        """``for t in range(...)`` with ``break`` as a counted while (the runtime compiles it when traced)."""
        r, k = self._fresh("r"), self._fresh("k")
        info = ast.Assign(targets=[_name(r, True)],
                          value=_call("range_params", _name("range"),
                                      ast.Tuple(elts=node.iter.args, ctx=ast.Load()), ast.Constant(node.lineno)))
        item = lambda j: ast.Subscript(value=_name(r), slice=ast.Constant(j), ctx=ast.Load())
        start = ast.Assign(targets=[_name(k, True)], value=ast.Constant(0))
        test = ast.Compare(left=_name(k), ops=[ast.Lt()], comparators=[item(2)])
        head = [ast.Assign(targets=[node.target], value=ast.BinOp(
                    left=item(0), op=ast.Add(), right=ast.BinOp(left=_name(k), op=ast.Mult(), right=item(1)))),
                ast.AugAssign(target=_name(k, True), op=ast.Add(), value=ast.Constant(1))]
        loop = ast.While(test=test, body=head + node.body, orelse=[])
        self._located([info, start, loop], node)
        ast.copy_location(loop, node)
        loop.end_lineno, loop.end_col_offset = node.end_lineno, node.end_col_offset
        self.load_at.append(((node.lineno, node.col_offset), k))
        return [self.visit(info), start] + _as_list(self.visit(loop))

    def _loop_body(self, node, body, brk, cont, defined=frozenset(), extra_loads=frozenset()):
        """(carried names, side effect, converted body) of a loop, flags included."""
        assigned = analysis.assigned(body) | set(defined)
        reads = analysis.reads_first(body, set(defined)) | set(extra_loads)
        live = self._live_after(node)
        loop_loads = analysis.loads(node)
        if brk:
            assigned.add(brk)
            reads.add(brk)
        carried = sorted(assigned & (reads | live))
        side = analysis.side_effect(body)
        if brk or cont:
            body = self._flags(body, brk, cont)
            if cont:
                body = [ast.Assign(targets=[_name(cont, True)], value=ast.Constant(False))] + body
            self._located(body, node)
        self.loops.append(loop_loads | {f for f in (brk, cont) if f})
        try:
            stmts = self._visit_block(body)
        finally:
            self.loops.pop()
        return carried, side, stmts

    # ------------------------------------------------------------------ generated code
    def _ld(self, names, node):
        return _call("ld", ast.Call(func=_name("locals"), args=[], keywords=[]), _const_tuple(names),
                     ast.Constant(node.lineno))

    def _state_fn(self, name, params, state, body, ret=None):
        s = self._fresh("s")
        stmts = [ast.Assign(targets=[_tuple(state, True)], value=_name(s))] if state else []
        stmts += body
        stmts.append(ast.Return(value=ret if ret is not None else _tuple(state)))
        return _def(name, params + [s], stmts)

    def _bind(self, names, call):
        if not names:
            return ast.Expr(value=call)
        return ast.Assign(targets=[_tuple(names, True)], value=call)


def is_creation(node, written):
    """Whether ``node`` is ``name = X.zeros(...)`` (a NumPy creation function) with ``name`` written in place."""
    return (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in written and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute) and node.value.func.attr in CREATION)


def _as_list(x):
    return x if isinstance(x, list) else [x]


def _jumps(node):
    """Whether ``node`` contains a flag assignment made from a break/continue (after rewriting)."""
    for n in analysis.walk_scope(node):
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id.startswith((f"{AG}_brk", f"{AG}_cont"))):
            return True
    return False


def _own_jumps(body):
    """(has own break, continue flag name or None) of a loop body."""
    brk = cont = False
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                          ast.Lambda, ast.ClassDef)):
            continue
        brk |= isinstance(n, ast.Break)
        cont |= isinstance(n, ast.Continue)
        stack.extend(ast.iter_child_nodes(n))
    return brk, cont
