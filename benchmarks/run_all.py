"""Run every benchmark (``make bench``)."""
import importlib
import pkgutil
import sys

import benchmarks


def main(argv=()):
    argv = list(argv)
    skip = set()
    while "--skip" in argv:
        i = argv.index("--skip")
        skip.add(argv[i + 1])
        del argv[i:i + 2]
    mods = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
    for name in argv or mods:
        if name in skip:
            continue
        mod = importlib.import_module(f"benchmarks.{name}")
        print(f"\n### {name}: {(mod.__doc__ or '').strip().splitlines()[0]}")
        saved, sys.argv = sys.argv, [name]   # benchmarks with their own flags get defaults
        try:
            mod.main()
        finally:
            sys.argv = saved


if __name__ == "__main__":
    main(sys.argv[1:])
