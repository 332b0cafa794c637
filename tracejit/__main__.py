"""Command line: ``python -m tracejit advise|report module:function --arg 'f32[1024,768]' ...``.

Examples
--------
::

    python -m tracejit advise mymodel:g --arg 'f32[1024,768]' --inner f --calls 1000
    python -m tracejit report mymodel:g --arg 'f32[1024,768]' --out g.html
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys


def load_function(spec: str):
    """``module:function`` or ``path/to/file.py:function`` (``function`` may be dotted: ``Class.method``)."""
    if ":" not in spec:
        raise SystemExit(f"error: expected module:function or file.py:function, got {spec!r}")
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.exists(path):
            raise SystemExit(f"error: no such file {where!r}")
        sys.path.insert(0, os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit(f"error: {where} has no attribute {attr!r}") from None
    return obj, module


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tracejit", description="tracejit diagnostics")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_ in (("advise", "measure jit strategies and recommend one"),
                        ("report", "write an HTML compile report")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("function", help="module:function or file.py:function")
        s.add_argument("--arg", action="append", default=[], metavar="TYPE",
                       help="an argument's type, e.g. 'f32[1024,768]' (repeat per argument; random data)")
        if name == "advise":
            s.add_argument("--inner", action="append", default=[], metavar="NAME",
                           help="an inner function (global name in the function's module) to try jitting")
            s.add_argument("--calls", type=int, default=100, help="calls to optimize for (default 100)")
            s.add_argument("--json", action="store_true", help="print the data as JSON")
        else:
            s.add_argument("--out", required=True, help="the HTML file to write")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    fn, module = load_function(args.function)
    from tracejit.api import Jitted
    if isinstance(fn, Jitted):
        fn = fn._fun
    from tracejit.diagnostics.advisor import parse_aval
    try:
        avals = [parse_aval(a) for a in args.arg]
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    if args.command == "advise":
        from tracejit.diagnostics.advisor import advise
        inner = []
        for name in args.inner:
            target = getattr(module, name, None)
            if target is None:
                raise SystemExit(f"error: {module.__name__} has no function {name!r} (--inner)")
            inner.append(target._fun if isinstance(target, Jitted) else target)
        result = advise(fn, *avals, inner=inner, calls=args.calls)
        print(json.dumps(result.as_dict(), indent=2, default=str) if args.json else result)
    else:
        from tracejit.diagnostics.report import report
        report(fn, *avals, path=args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
