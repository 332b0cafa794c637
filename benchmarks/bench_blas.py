"""GEMM GFLOP/s of every BLAS provider that loads (NumPy's matmul, NumPy's OpenBLAS via
ctypes, MKL, a system library) per dtype and shape, against an estimate of the machine's
peak, and which provider ``TRACEJIT_BLAS=auto`` picked for each shape's class.

Times are medians of repeated calls (benchmarks/common.py); the ratio column is NumPy's
matmul time over the provider's (higher is faster). The peak is an ESTIMATE: physical
cores x clock x FLOPs per cycle, the FLOPs from the widest vector unit the CPU flags
show (AVX-512 > AVX2/FMA > SSE/NEON), two FMA pipes per core, and a 256-bit datapath on
AMD family 19h (Zen 4 runs AVX-512 as two 256-bit halves). The clock is the one the
kernel reports (cpufreq maximum, else ``cpu MHz``): a core that boosts above it reaches
more than that estimate (on the Zen 4 EPYC, whose ``cpu MHz`` says 2.6 GHz, 125%). Where
the CPU has FMA the percentages are of a MEASURED peak instead: a generated loop of
independent fused multiply-adds on the widest vectors, one thread per core at once.

BLAS note: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE may be set on these machines. OpenBLAS
reads them when NumPy loads it, so when either is set this benchmark re-runs itself in
a child process with both unset (that command alone; the rest of ``make bench`` keeps
them). By hand: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python -m
benchmarks.bench_blas [--quick]``. ``--quick``: a few shapes, a smoke run of seconds.
"""
from __future__ import annotations

import math
import os
import statistics
import subprocess
import time
import sys

import numpy as np

import tracejit

from benchmarks.common import block, header, jax_cpu, paired_times, row, turn_times

_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
LARGE = 512         # a product whose M, N and K are all at least this is "large" (issue 15's 90% target)

# (batch, m, k, n): the shapes auto measures, then more of each class
SHAPES = {
    "float32": [(1, 16, 768, 3072), (1, 4, 1024, 1024), (1, 768, 16, 768), (1, 128, 768, 3072),
                (1, 128, 3072, 12288), (1, 1024, 768, 3072), (1, 64, 4096, 1024), (1, 512, 512, 512),
                (1, 1024, 1024, 1024), (1, 2048, 2048, 2048),
                (12, 128, 64, 128), (48, 64, 64, 64), (8, 256, 256, 256)],
    "float64": [(1, 16, 768, 3072), (1, 768, 16, 768), (1, 128, 768, 3072), (1, 512, 512, 512),
                (1, 1024, 1024, 1024), (12, 128, 64, 128), (8, 256, 256, 256)],
}
QUICK = {"float32": [(1, 16, 768, 3072), (1, 512, 512, 512), (12, 128, 64, 128)],
         "float64": [(1, 128, 768, 3072), (12, 128, 64, 128)]}


def _cpuinfo() -> list:
    try:
        with open("/proc/cpuinfo") as f:
            blocks = f.read().strip().split("\n\n")
    except OSError:
        return []
    out = []
    for block in blocks:
        fields = {}
        for line in block.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                fields[k.strip()] = v.strip()
        out.append(fields)
    return out


def peak_estimate() -> dict:
    """Estimated peak GFLOP/s per dtype, and what went into it (see the module docstring)."""
    cpus = _cpuinfo()
    first = cpus[0] if cpus else {}
    flags = set((first.get("flags") or first.get("Features") or "").split())
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cores = len({(c.get("physical id"), c.get("core id")) for c in cpus}) or usable
    cores = min(cores, usable)
    ghz = None
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            ghz, clock_from = int(f.read()) / 1e6, "cpufreq max"
    except (OSError, ValueError):
        if "cpu MHz" in first:
            ghz, clock_from = float(first["cpu MHz"]) / 1e3, "/proc/cpuinfo cpu MHz"
    if ghz is None:
        ghz, clock_from = 2.0, "unknown clock, 2 GHz assumed"
    width = 512 if "avx512f" in flags else 256 if flags & {"avx2", "avx", "fma"} else 128
    datapath = width
    if first.get("vendor_id") == "AuthenticAMD" and first.get("cpu family") == "25":
        datapath = min(width, 256)          # Zen 3/4: 256-bit FMA pipes
    # per lane and cycle: two FMA pipes x 2 FLOPs; without FMA an add pipe and a multiply pipe
    per_lane = 4 if flags & {"fma", "asimd", "avx512f"} or not flags else 2
    per_cycle32 = per_lane * datapath // 32
    return {"cores": cores, "ghz": ghz, "clock_from": clock_from, "vector_bits": width, "datapath_bits": datapath,
            "float32": cores * ghz * per_cycle32, "float64": cores * ghz * per_cycle32 / 2,
            "model": first.get("model name", "")}


# Seconds between turns when the providers compute on different thread pools: the previous
# provider's idle threads stop spinning (OpenBLAS's own pool spins about 0.1 s) before the next is
# timed; without it a row timed after MKL or OpenBLAS ran up to 2x slow.
SETTLE_S = 0.25


def measured_peak(cores: int, seconds: float = 0.05) -> dict:
    """GFLOP/s per dtype of a loop of independent fused multiply-adds on the widest vectors
    (generated with llvmlite), on one thread per core at once: what the cores reach, boost clock
    and all, where the estimate only knows the reported clock. Empty without FMA."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor
    from llvmlite import ir
    from tracejit.backends.cpu import llvm_engine
    from tracejit.backends.cpu.native import vector_bytes
    if "+fma" not in llvm_engine.host_cpu_features():
        return {}
    chains, i64 = 12, ir.IntType(64)          # 12 chains hide a 4-cycle FMA on two pipes
    module = llvm_engine.new_module("peak")
    types = {"float32": ir.FloatType(), "float64": ir.DoubleType()}
    for dtype, t in types.items():
        vt = ir.VectorType(t, vector_bytes() // (4 if dtype == "float32" else 8))
        bits = 32 if dtype == "float32" else 64
        fma = ir.Function(module, ir.FunctionType(vt, [vt, vt, vt]), name=f"llvm.fma.v{vt.count}f{bits}")
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i64, ir.PointerType()]), name=f"peak_{dtype}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        entry, loop, done = b.block, fn.append_basic_block("loop"), fn.append_basic_block("done")
        b.branch(loop)
        b.position_at_end(loop)
        n = b.phi(i64)
        n.add_incoming(ir.Constant(i64, 0), entry)
        accs = [b.phi(vt) for _ in range(chains)]
        x, y = ir.Constant(vt, [ir.Constant(t, 0.9999999)] * vt.count), ir.Constant(vt, [ir.Constant(t, 1e-7)] * vt.count)
        new = [b.call(fma, [acc, x, y]) for acc in accs]
        for k, acc in enumerate(accs):
            acc.add_incoming(ir.Constant(vt, [ir.Constant(t, 1.0 + k)] * vt.count), entry)
            acc.add_incoming(new[k], loop)
        n.add_incoming(b.add(n, ir.Constant(i64, 1)), loop)
        b.cbranch(b.icmp_signed("<", b.add(n, ir.Constant(i64, 1)), fn.args[0]), loop, done)
        b.position_at_end(done)
        total = new[0]
        for v in new[1:]:
            total = b.fadd(total, v)
        b.store(total, fn.args[1], align=8)      # (the result is used: the loop stays)
        b.ret_void()
    compiled = llvm_engine.compile_ir(str(module), name="peak", vectorize=False)
    out, pool, sink = {}, ThreadPoolExecutor(cores), np.empty(64)
    for dtype in types:
        lanes = vector_bytes() // (4 if dtype == "float32" else 8)
        call = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(compiled.address(f"peak_{dtype}"))
        iters = 1 << 16
        while True:                              # iterations for about `seconds` on one core
            t0 = time.perf_counter()
            call(iters, sink.ctypes.data)
            if time.perf_counter() - t0 > seconds / 4 or iters > 1 << 34:
                break
            iters *= 4
        best = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            list(pool.map(lambda _: call(iters, sink.ctypes.data), range(cores)))
            best = max(best, cores * iters * chains * lanes * 2 / (time.perf_counter() - t0) / 1e9)
        out[dtype] = best
    pool.shutdown()
    return out


def _rand(shape, dtype, rng):
    return (rng.random(shape) - 0.5).astype(dtype)


def main(argv=None):
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    if any(v in os.environ for v in _UNSET) and "TRACEJIT_BENCH_BLAS_CHILD" not in os.environ:
        env = {k: v for k, v in os.environ.items() if k not in _UNSET}
        env["TRACEJIT_BENCH_BLAS_CHILD"] = "1"
        print(f"  [re-running with {', '.join(_UNSET)} unset]", flush=True)
        subprocess.run([sys.executable, "-m", "benchmarks.bench_blas"] + (["--quick"] if quick else []),
                       env=env, check=False)
        return
    from tracejit.backends.cpu import blas
    providers = {n: p for n in blas.PROVIDERS if (p := blas._instance(n)) is not None}
    auto = blas.provider("auto")
    peak = peak_estimate()
    header("BLAS providers: GEMM GFLOP/s" + (" (quick)" if quick else ""))
    print(f"  cpu: {peak['model']}; {peak['cores']} cores x {peak['ghz']:.2f} GHz ({peak['clock_from']}), "
          f"{peak['vector_bits']}-bit vectors on a {peak['datapath_bits']}-bit datapath")
    print(f"  peak ESTIMATE: float32 {peak['float32']:.0f} GFLOP/s, float64 {peak['float64']:.0f} GFLOP/s")
    measured = measured_peak(peak["cores"])
    if measured:
        print(f"  peak MEASURED (fused multiply-add loop, {peak['cores']} threads): float32 "
              f"{measured['float32']:.0f} GFLOP/s, float64 {measured['float64']:.0f} GFLOP/s: the % columns use it")
        peak.update(measured)
    for name, p in providers.items():
        print(f"  {name:<9} {getattr(p, 'version', '')}  threads={getattr(p, 'threads', None)}")
    print(f"  auto's table: {auto.source} ({'busy machine' if auto.table.get('busy') else 'quiet machine'}); "
          f"excluded: {auto.table['excluded'] or 'none'}")
    # turns without a pause when every provider computes on one thread pool (the kernels' team)
    settle_s = 0.0 if len({p.pool for p in providers.values()}) == 1 else SETTLE_S
    rng = np.random.default_rng(0)
    summary, jitted, large = {}, [], []
    for dtype, shapes in (QUICK if quick else SHAPES).items():
        for nb, m, k, n in shapes:
            lead = (nb,) if nb > 1 else ()
            a, b = _rand(lead + (m, k), dtype, rng), _rand(lead + (k, n), dtype, rng)
            flops = 2.0 * nb * m * k * n
            cls = blas.shape_class(m, n, k, nb)
            picked = auto.provider_for(dtype, cls).name
            own = auto.table["own"][dtype][cls]
            if own is not None and blas._serves_shape(providers[own], (nb, m, k, n), dtype):
                picked = own                  # generated code won this class and serves this shape
            print(f"\n  {dtype} {'%dx' % nb if nb > 1 else ''}({m}x{k}) @ ({k}x{n})  [{cls}; auto: {picked}]")
            # The providers and what a user gets, jit(a @ b) (a fresh output per call, as every jitted
            # product), take turns on the product in alternating rounds, as auto's table times them
            # (timed one after the other, the same provider moved 0.65-1.1x between rows). Each turn
            # first makes three calls: after a pause, OpenBLAS's first calls on this VM took up to 5-8x
            # longer while its threads woke (not what a product costs in a program).
            repeat = 3 if quick else (5 if flops > 1e9 else 9)
            names = [nm for nm, p in providers.items() if blas._serves_shape(p, (nb, m, k, n), dtype)]
            outs = {nm: np.empty(lead + (m, n), dtype) for nm in names}
            matmul = tracejit.jit(lambda x, y: x @ y)
            fns = [lambda p=providers[nm], out=outs[nm]: p.gemm(a, b, out) for nm in names]
            per_round = turn_times(fns + [lambda: matmul(a, b)], rounds=3 if quick else 5, repeat=repeat,
                                   warmup=3, settle=settle_s, min_time=0.0 if quick else 0.01)
            times = {nm: statistics.median(ts) for nm, ts in zip(names, per_round)}
            ref = times.get("numpy")
            for name in names:
                gf = flops / times[name] / 1e9
                summary.setdefault((name, dtype), []).append(gf / peak[dtype])
                print(row(name + (" *" if name == picked else ""), times[name], ref if name != "numpy" else None,
                          f"{gf:7.1f} GFLOP/s  {100 * gf / peak[dtype]:5.1f}% of peak"))
            best_name = min(times, key=times.get)
            fractions = [tb / tj for tb, tj in zip(per_round[names.index(best_name)], per_round[-1])]
            t, fraction = statistics.median(per_round[-1]), statistics.median(fractions)
            print(row("tracejit jit(a @ b)", t, ref, f"{flops / t / 1e9:7.1f} GFLOP/s  {100 * fraction:5.1f}% of "
                      f"{best_name}'s {flops / times[best_name] / 1e9:.1f} in the same rounds "
                      f"({100 * min(fractions):.0f}-{100 * max(fractions):.0f}%)"))
            jitted.append((dtype, nb, m, k, n, a, b, matmul, repeat))
            if min(m, n, k) >= LARGE and nb == 1:
                large.append((dtype, m, k, n, fraction))
    print("\n  best fraction of peak per provider:")
    for (name, dtype), fr in sorted(summary.items()):
        print(f"    {name:<9} {dtype:<8} {100 * max(fr):5.1f}%  (median over shapes {100 * np.median(fr):5.1f}%)")
    if large:
        print(f"\n  large products (M, N, K >= {LARGE}): jit(a @ b) at {', '.join(f'{100 * f:.0f}%' for *_, f in large)}"
              f" of the fastest provider (issue 15's target: >= 90%)")
    against_jax(jitted, quick)
    small_products_in_loops(quick)
    attention_heads(quick)


def against_jax(jitted: list, quick: bool):
    """JAX's jit(a @ b) on the same operands, after every provider (XLA's worker threads keep the
    cores busy a while after its calls, which slowed the providers timed after it 10-30x), in turns
    with tracejit's jit(a @ b): each turn after a pause, then three untimed calls."""
    header("jit(a @ b): tracejit against JAX, in turns")
    jax = jax_cpu()
    if jax is None:
        print("  (JAX not installed: skipped)")
        return
    jmatmul = jax.jit(lambda x, y: x @ y)
    for dtype, nb, m, k, n, a, b, matmul, repeat in jitted:
        ja, jb = jax.device_put(a), jax.device_put(b)
        mine, theirs = turn_times([lambda: matmul(a, b), lambda: block(jmatmul(ja, jb))], rounds=3 if quick else 5,
                                  repeat=repeat, warmup=3, min_time=0.0 if quick else 0.01)
        t, t_jax = statistics.median(mine), statistics.median(theirs)
        ratios = [tj / tt for tt, tj in zip(mine, theirs)]
        flops = 2.0 * nb * m * k * n
        print(row(f"{dtype} {'%dx' % nb if nb > 1 else ''}({m}x{k}) @ ({k}x{n})", t_jax, None,
                  f"JAX {flops / t_jax / 1e9:7.1f} GFLOP/s, tracejit {flops / t / 1e9:7.1f}: tracejit "
                  f"{statistics.median(ratios):.2f}x JAX's speed ({min(ratios):.2f}-{max(ratios):.2f}x)"))


def _generated_and_library(fn, *args) -> dict:
    """``fn`` jitted and compiled twice, with generated products (``"1"``) and with library calls
    only (``"0"``): ``TRACEJIT_OWN_GEMM`` is read when a product is compiled."""
    fns = {}
    for flag in ("1", "0"):
        os.environ["TRACEJIT_OWN_GEMM"] = flag
        fns[flag] = tracejit.jit(lambda *a: fn(*a))     # (a fresh function: no shared compile cache entry)
        fns[flag](*args)
    os.environ.pop("TRACEJIT_OWN_GEMM")
    return fns


SMALL_LOOP_SHAPES = [(16, 64), (32, 128), (64, 128), (128, 256)]
SMALL_LOOP_STEPS = 200


def small_products_in_loops(quick: bool):
    """``x = tanh(x @ w)`` for 200 steps of a ``fori_loop``: small products between other kernels,
    as a recurrent cell makes them. tracejit's generated products (``small_gemm``) against the BLAS
    call the same native loop makes with ``TRACEJIT_OWN_GEMM=0``, and JAX's loop when installed, in
    alternating rounds (timed one after the other, (32x128) @ (128x128) gave tracejit 0.83x JAX's
    speed, and 1.08x (0.96-1.22x) in turns a minute later)."""
    header("Small products in a loop body: 200 steps of x = tanh(x @ w), float32")
    jax = jax_cpu()
    if jax is None:
        print("  (JAX not installed: its column is skipped)")
    rng = np.random.default_rng(1)
    repeat = 3 if quick else 9

    def program(lax, jnp, w, x0):
        return lax.fori_loop(0, SMALL_LOOP_STEPS, lambda i, x: jnp.tanh(x @ w), x0)
    for m, n in SMALL_LOOP_SHAPES[:2] if quick else SMALL_LOOP_SHAPES:
        w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
        x0 = rng.standard_normal((m, n)).astype(np.float32)
        fns = _generated_and_library(lambda w, x0: program(tracejit.lax, tracejit.numpy, w, x0), w, x0)
        calls = [lambda: fns["1"](w, x0), lambda: fns["0"](w, x0)]
        if jax is not None:
            jf = jax.jit(lambda w, x0: program(jax.lax, jax.numpy, w, x0))
            jw, jx = jax.device_put(w), jax.device_put(x0)
            calls.append(lambda: block(jf(jw, jx)))
        (t_own, t_lib, *t_jax), _ = paired_times(calls, rounds=3 if quick else 7, repeat=repeat)
        t_own, t_lib, t_jax = (t / SMALL_LOOP_STEPS for t in (t_own, t_lib, t_jax[0] if t_jax else 0.0))
        flops = 2.0 * m * n * n
        print(f"\n  ({m}x{n}) @ ({n}x{n}) per step")
        print(row("tracejit, BLAS call", t_lib, None, f"{t_lib * 1e6:6.2f} us  {flops / t_lib / 1e9:7.1f} GFLOP/s"))
        print(row("tracejit, generated", t_own, t_lib, f"{t_own * 1e6:6.2f} us  {flops / t_own / 1e9:7.1f} GFLOP/s"))
        if jax is not None:
            print(row("jax jit", t_jax, t_lib, f"{t_jax * 1e6:6.2f} us  => tracejit (generated) "
                                               f"{t_jax / t_own:.2f}x JAX's speed"))


# GPT-2 small's attention: batch 4, sequence 128, 12 heads of 64
HEAD_PRODUCTS = {"q @ k.T": ("bthd,bshd->bhts", [(4, 128, 12, 64), (4, 128, 12, 64)]),
                 "att @ v": ("bhts,bshd->bthd", [(4, 12, 128, 128), (4, 128, 12, 64)])}


def attention_heads(quick: bool):
    """Attention's batched products over heads split off a model axis (the batch axes do not lead
    memory; keys read transposed), float32: tracejit's generated kernel over the 48 matrices against
    the library calls it makes with ``TRACEJIT_OWN_GEMM=0`` and JAX's einsum, alternating rounds."""
    header("Attention heads: 4 x 12 products of 128x64 by 64x128 and 128x128 by 128x64, float32")
    jax = jax_cpu()
    rng = np.random.default_rng(2)
    for what, (spec, shapes) in HEAD_PRODUCTS.items():
        x, y = (_rand(shape, "float32", rng) for shape in shapes)
        fns = _generated_and_library(lambda x, y: tracejit.numpy.einsum(spec, x, y), x, y)
        calls = [lambda: fns["1"](x, y), lambda: fns["0"](x, y)]
        if jax is not None:
            jf = jax.jit(lambda x, y: jax.numpy.einsum(spec, x, y))
            jx, jy = jax.device_put(x), jax.device_put(y)
            calls.append(lambda: block(jf(jx, jy)))
        (t_own, t_lib, *t_jax), _ = paired_times(calls, rounds=3 if quick else 7, repeat=10)
        sizes = dict(zip(spec.split("->")[0].replace(",", ""), shapes[0] + shapes[1]))
        flops = 2.0 * math.prod(sizes.values())          # (every index of the einsum, once)
        print(f"\n  {what}  ({spec})")
        print(row("tracejit, library calls", t_lib, None, f"{flops / t_lib / 1e9:7.1f} GFLOP/s"))
        print(row("tracejit, generated kernel", t_own, t_lib, f"{flops / t_own / 1e9:7.1f} GFLOP/s"))
        if t_jax:
            print(row("jax jit", t_jax[0], t_lib, f"{flops / t_jax[0] / 1e9:7.1f} GFLOP/s  => tracejit "
                                                  f"(generated) {t_jax[0] / t_own:.2f}x JAX's speed"))
        else:
            print("  (JAX not installed: its row is skipped)")


if __name__ == "__main__":
    main(sys.argv[1:])
