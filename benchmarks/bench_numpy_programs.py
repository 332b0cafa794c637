"""NumPy programs as scientists write them, run as written: tracejit.jit vs numba @njit vs NumPy (issue 16).

Each program is plain ``import numpy as np`` code -- Python ``for`` loops, in-place updates,
functions that update an argument in place -- and runs unchanged under ``tracejit.jit``
(autograph turns the loops into compiled loops, functionalize gives the in-place updates
NumPy's meaning), under numba's ``@njit`` (the same source where numba accepts it; an
equivalent written for numba where it does not, marked ``numba: equivalent``) and as NumPy,
in the same run:

 1. jacobi      2-D heat/Jacobi stencil, ``for t in range(steps): u[1:-1, 1:-1] = ...`` (writes its argument)
 2. lu          LU without pivoting, ``a[k+1:, k] /= a[k, k]; a[k+1:, k+1:] -= np.outer(...)`` (in place)
 3. cholesky    column by column, ``l[j, :j] @ l[j, :j]``
 4. trisolve    forward substitution, ``x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]``
 5. floyd       Floyd-Warshall, ``d = np.minimum(d, d[:, k, None] + d[None, k, :])``
 6. nussinov    RNA folding DP, two nested loops, ``max`` and ``if`` on array elements
 7. histogram   ``np.add.at(counts, idx, 1)`` into ``counts = np.zeros(nbins, np.int64)``
 8. nbody       pairwise forces, ``vel += dt * acc; pos += dt * vel`` in a time loop (writes its arguments)
 9. crc16       CRC-16/CCITT over bytes, ``for byte in data:`` with an inner bit loop and ``if``

Loops whose slice shapes depend on the index (``L[i, :i]``, ``a[k+1:, k]``) compile to one loop
with masked windows (``tracejit/autograph/masked.py``); a loop autograph cannot convert is
unrolled (at most ``tracejit.autograph.runtime.UNROLL_CAP`` iterations), and the report says
which programs ran unrolled.

Every result (return value and every argument the program writes) is checked against NumPy
before timing. Reported per program: medians of tracejit, numba and NumPy (each call gets fresh
copies of the arguments, for every peer alike, made before the timed call: the copy is not the
program), the speed ratios (> 1: tracejit faster), and the first call (trace or type inference +
compile + run; tracejit with a cold compile cache, numba without its cache). Summary: geomean speed ratio vs numba (target >= 1) and geomean
first-call ratio vs numba (target: tracejit's first call at most numba's).

Run: ``.venv/bin/python -m benchmarks.bench_numpy_programs [--only NAME ...] [--repeat N]``.
Numba is measured when importable (``pip install -e .[peers]``); otherwise skipped with a note.
The machine may be shared: timings are medians and noisy, compare ratios.
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from benchmarks.common import median_time, optional


# ====================================================================== the programs, as written

def jacobi(u, steps):
    for t in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def lu(a):
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def cholesky(a):
    n = a.shape[0]
    l = np.zeros_like(a)
    for j in range(n):
        l[j, j] = np.sqrt(a[j, j] - l[j, :j] @ l[j, :j])
        l[j + 1:, j] = (a[j + 1:, j] - l[j + 1:, :j] @ l[j, :j]) / l[j, j]
    return l


def trisolve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def floyd(d):
    n = d.shape[0]
    for k in range(n):
        d = np.minimum(d, d[:, k, None] + d[None, k, :])
    return d


def nussinov(seq):
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = table[i, j - 1]
            if i + 1 < n:
                best = max(best, table[i + 1, j])
            if seq[i] + seq[j] == 3:            # A-U, C-G pairs (bases coded 0..3)
                best = max(best, table[i + 1, j - 1] + 1)
            table[i, j] = best
    return table


def histogram(x, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    idx = ((x - x.min()) / (x.max() - x.min()) * (nbins - 1)).astype(np.int64)
    np.add.at(counts, idx, 1)
    return counts


def nbody(pos, vel, mass, dt, steps):
    for s in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d ** 2).sum(axis=2) + 0.01
        inv = mass[None, :] / (r2 * np.sqrt(r2))
        acc = (d * inv[:, :, None]).sum(axis=1)
        vel += dt * acc
        pos += dt * vel


def crc16(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= int(byte) << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


# ---- equivalents written for numba, where numba rejects the source as written

def histogram_numba(x, nbins):
    # numba has no ufunc.at: the loop np.add.at stands for
    counts = np.zeros(nbins, dtype=np.int64)
    lo, hi = x.min(), x.max()
    for v in x:
        counts[int((v - lo) / (hi - lo) * (nbins - 1))] += 1
    return counts


def floyd_numba(d):
    # numba's basic indexing takes no None: reshape instead
    n = d.shape[0]
    for k in range(n):
        d = np.minimum(d, d[:, k].copy().reshape(n, 1) + d[k, :].copy().reshape(1, n))
    return d


def nbody_numba(pos, vel, mass, dt, steps):
    # numba's basic indexing takes no None: explicit reshapes
    n = pos.shape[0]
    for s in range(steps):
        d = pos.reshape(1, n, 3) - pos.reshape(n, 1, 3)
        r2 = (d ** 2).sum(axis=2) + 0.01
        inv = mass.reshape(1, n) / (r2 * np.sqrt(r2))
        acc = (d * inv.reshape(n, n, 1)).sum(axis=1)
        vel += dt * acc
        pos += dt * vel


# ====================================================================== inputs

def _jacobi_in(rng):
    u = np.zeros((256, 256))
    u[0, :] = 1.0
    return (u, 200), (1,)


def _lu_in(rng):
    n = 96
    return (rng.standard_normal((n, n)) + n * np.eye(n),), ()


def _chol_in(rng):
    n = 96
    m = rng.standard_normal((n, n))
    return (m @ m.T / n + np.eye(n),), ()


def _tri_in(rng):
    n = 256
    return (np.tril(rng.standard_normal((n, n))) / n + 2 * np.eye(n), rng.standard_normal(n)), ()


def _floyd_in(rng):
    n = 256
    d = rng.uniform(1, 10, (n, n))
    np.fill_diagonal(d, 0)
    return (d,), ()


def _nuss_in(rng):
    return (rng.integers(0, 4, 160).astype(np.int64),), ()


def _hist_in(rng):
    return (rng.standard_normal(1_000_000), 256), (1,)


def _nbody_in(rng):
    n = 256
    return (rng.standard_normal((n, 3)), np.zeros((n, 3)), rng.uniform(0.5, 1, n), 0.001, 20), (3, 4)


def _crc_in(rng):
    return (rng.integers(0, 256, 4096).astype(np.uint8),), ()


@dataclass
class Program:
    name: str
    fn: object
    inputs: object
    numba_fn: object = None        # None: numba runs fn itself


PROGRAMS = [
    Program("jacobi", jacobi, _jacobi_in),
    Program("lu", lu, _lu_in),
    Program("cholesky", cholesky, _chol_in),
    Program("trisolve", trisolve, _tri_in),
    Program("floyd", floyd, _floyd_in, floyd_numba),
    Program("nussinov", nussinov, _nuss_in),
    Program("histogram", histogram, _hist_in, histogram_numba),
    Program("nbody", nbody, _nbody_in, nbody_numba),
    Program("crc16", crc16, _crc_in),
]


# ====================================================================== running

def _fresh(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _outputs(ret, args):
    """What a call produced: its return value and the final value of every array argument."""
    return [np.asarray(ret) if ret is not None else None] + [np.asarray(a) for a in args if isinstance(a, np.ndarray)]


def _check(name, peer, got, want):
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            continue
        np.testing.assert_allclose(np.asarray(g, dtype=w.dtype), w, rtol=1e-7, atol=1e-9,
                                   err_msg=f"{name} under {peer}: output {k} differs from NumPy")


def _unrolled(fn, args, static):
    """Whether autograph unrolled a loop of ``fn`` (the program has no loop primitive)."""
    import inspect
    import tracejit
    if "for " not in inspect.getsource(fn):
        return False
    text = str(tracejit.make_jaxpr(fn, static_argnums=static)(*_fresh(args)))
    return not any(p in text for p in ("scan[", "while[", "fori_loop["))


def run_program(p: Program, repeat: int, tj, numba) -> dict:
    rng = np.random.default_rng(0)
    args, static = p.inputs(rng)
    res = {"name": p.name, "numba_note": "same source" if p.numba_fn is None else "equivalent"}

    a = _fresh(args)
    want = _outputs(p.fn(*a), a)
    res["numpy"] = median_time(p.fn, setup=lambda: _fresh(args), repeat=repeat)

    if tj is not None:
        f = tj.jit(p.fn, static_argnums=static)
        a = _fresh(args)
        t0 = time.perf_counter()
        try:
            out = f(*a)
            res["tj_first"] = time.perf_counter() - t0
            _check(p.name, "tracejit", _outputs(out, a), want)
            res["tracejit"] = median_time(f, setup=lambda: _fresh(args), repeat=repeat)
            res["tj_unrolled"] = _unrolled(p.fn, args, static)
        except Exception as e:  # noqa: BLE001 - a failing program is the finding, reported
            res["tj_error"] = f"{type(e).__name__}: {str(e)[:300]}"

    if numba is not None:
        g = numba.njit(p.numba_fn or p.fn)
        a = _fresh(args)
        t0 = time.perf_counter()
        try:
            out = g(*a)
            res["nb_first"] = time.perf_counter() - t0
            _check(p.name, "numba", _outputs(out, a), want)
            res["numba"] = median_time(g, setup=lambda: _fresh(args), repeat=repeat)
        except Exception as e:  # noqa: BLE001
            res["nb_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return res


def _ms(t):
    return f"{t * 1e3:9.2f}" if t is not None else "        -"


def _ratio(a, b):
    return f"{a / b:6.2f}x" if a is not None and b is not None else "      -"


def report(results):
    print(f"\n  {'program':<10} {'tracejit ms':>11} {'numba ms':>9} {'NumPy ms':>9}  {'vs numba':>8} {'vs NumPy':>8}"
          f"  {'first call s (tj / numba)':>26}  notes")
    speed, compile_ = [], []
    for r in results:
        tj, nb, npy = r.get("tracejit"), r.get("numba"), r.get("numpy")
        notes = []
        if r.get("tj_unrolled"):
            notes.append("tracejit: loop unrolled")
        if r["numba_note"] != "same source":
            notes.append("numba: equivalent")
        first = (f"{r['tj_first']:.2f}" if "tj_first" in r else "-") + " / " + \
                (f"{r['nb_first']:.2f}" if "nb_first" in r else "-")
        print(f"  {r['name']:<10} {_ms(tj):>11} {_ms(nb):>9} {_ms(npy):>9}  {_ratio(nb, tj):>8} {_ratio(npy, tj):>8}"
              f"  {first:>26}  {'; '.join(notes)}")
        for k in ("tj_error", "nb_error"):
            if k in r:
                print(f"      {k[:2]} FAILED: {r[k]}")
        if tj and nb:
            speed.append(nb / tj)
        if "tj_first" in r and "nb_first" in r:
            compile_.append(r["tj_first"] / r["nb_first"])
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
    print(f"\n  geomean speed vs numba (numba time / tracejit time, target >= 1): {geo(speed):.2f}x "
          f"over {len(speed)} programs")
    print(f"  geomean first call vs numba (tracejit / numba, target <= 1):      {geo(compile_):.2f}x "
          f"over {len(compile_)} programs")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="program names")
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args(argv)
    print("\n== NumPy programs as written: tracejit.jit vs numba @njit vs NumPy ==  (medians; the machine "
          "may be shared, timings are noisy: compare ratios; > 1: tracejit faster)")
    tj = optional("tracejit")
    if tj is not None:
        tj.config.update("compilation_cache_dir", tempfile.mkdtemp(prefix="tracejit-cold-cache-"))
    numba = optional("numba")
    results = []
    for p in PROGRAMS:
        if args.only and p.name not in args.only:
            continue
        results.append(run_program(p, args.repeat, tj, numba))
        print(f"  [{p.name}: done]", flush=True)
    report(results)


if __name__ == "__main__":
    main()
