"""Regenerate ``jax_0_10_public_names.json``: JAX's public names, per module.

Run with a Python that has JAX installed (CI does not; CI reads only the JSON)::

    .venv/bin/python tests/data/make_jax_names.py

For each module below the file records

- ``names``: the sorted public names (``dir(module)`` without a leading
  underscore), leaving out modules (a real submodule such as
  ``jax.numpy.linalg`` goes to ``submodules``; an imported outside module
  such as ``functools`` in ``jax.example_libraries.stax`` is dropped),
  ``from __future__`` features and plain re-exports of the standard library
  (``partial``, ``Any``, ``NamedTuple``, ... imported by a module's source);
- ``submodules``: the public submodules that are attributes of the module
  after every module of the list has been imported.

Every submodule that ``tests/test_api_coverage.py`` checks name by name is a
module of the list (``jax.numpy.linalg``, ``jax.scipy.stats.norm``, ...).
``tests/test_api_coverage.py`` checks each name and each submodule against
tracejit. Deprecated names that JAX serves through a module ``__getattr__``
are not in ``dir()`` and so not recorded.
"""
import importlib
import json
import os
import pkgutil
import sys
import types

import jax

BASE = [
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.lax.linalg",
    "jax.random", "jax.nn", "jax.nn.initializers",
    "jax.scipy.special", "jax.scipy.stats", "jax.scipy.linalg", "jax.scipy.signal",
    "jax.tree", "jax.tree_util",
    "jax.example_libraries.optimizers", "jax.example_libraries.stax",
    "jax.debug", "jax.test_util",
    "jax.ad_checkpoint", "jax.image", "jax.custom_derivatives", "jax.custom_batching", "jax.dlpack",
]


def stats_submodules():
    import jax.scipy.stats as stats
    return sorted(f"jax.scipy.stats.{m.name}" for m in pkgutil.iter_modules(stats.__path__)
                  if not m.name.startswith("_"))


def is_stdlib_reexport(obj, name):
    """``obj`` is a standard-library object imported under its own name (``partial``, ``Any``)."""
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str):
        return False
    top = mod.split(".")[0]
    if top not in sys.stdlib_module_names and top != "builtins":
        return False
    src = sys.modules.get(mod)
    return src is not None and getattr(src, name, None) is obj


def public(mod):
    names, subs = [], []
    for n in dir(mod):
        if n.startswith("_"):
            continue
        obj = getattr(mod, n)
        if isinstance(obj, types.ModuleType):
            if obj.__name__ == f"{mod.__name__}.{n}":
                subs.append(n)
            continue
        if type(obj).__name__ == "_Feature" and type(obj).__module__ == "__future__":
            continue
        if is_stdlib_reexport(obj, n):
            continue
        names.append(n)
    return sorted(names), sorted(subs)


def main():
    modules = BASE[:BASE.index("jax.scipy.stats") + 1] + stats_submodules() + \
        BASE[BASE.index("jax.scipy.stats") + 1:]
    loaded = [importlib.import_module(m) for m in modules]  # import all first: stable dir(jax)
    out = {"jax_version": jax.__version__, "modules": {}}
    for name, mod in zip(modules, loaded):
        names, subs = public(mod)
        out["modules"][name] = {"names": names, "submodules": subs}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_0_10_public_names.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    total = sum(len(v["names"]) + len(v["submodules"]) for v in out["modules"].values())
    print(f"wrote {path}: {len(modules)} modules, {total} names (jax {jax.__version__})")


if __name__ == "__main__":
    main()
