"""JAX 0.10 API coverage: every public JAX name is implemented or listed here, with a reason.

``tests/data/jax_0_10_public_names.json`` (written by ``tests/data/make_jax_names.py`` with JAX
installed; CI reads only the JSON) lists JAX's public names and submodules per module. Each JAX
module maps to a tracejit module (``jax.numpy`` -> ``tracejit.numpy``, ``jax.scipy.stats.norm`` ->
``tracejit.scipy.stats.norm``, ...). For each JAX name the test checks ``hasattr`` on the tracejit
module (a submodule also counts when it imports). A name must be

- present in tracejit, or
- in ``DELIBERATE_OMISSIONS`` (with a one-line reason: not planned), or
- in ``NOT_YET`` (not implemented yet: the honest list of the gap).

The test fails on a JAX name in none of these, on a listed name that tracejit now has (delete it
from the list: the lists only shrink as work lands), on a listed name that JAX does not have, and on
a missing tracejit module that is not in ``MISSING_MODULES``.

``python tests/test_api_coverage.py`` prints the coverage table and the unlisted missing names.
The check is by name only: it says nothing about signatures or semantics (the other tests do).
"""
import importlib
import json
import os
import sys
import textwrap
import types

import pytest

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "jax_0_10_public_names.json")
JAX_NAMES = json.load(open(DATA))["modules"]


def tracejit_module_name(jax_module: str) -> str:
    """``jax`` -> ``tracejit``, ``jax.scipy.stats.norm`` -> ``tracejit.scipy.stats.norm``."""
    assert jax_module == "jax" or jax_module.startswith("jax.")
    return "tracejit" + jax_module[3:]


# --- Reasons shared by many names -------------------------------------------------------------
SPMD = "multi-device / sharding / collectives: the SPMD work of issue 17"
PRIM = ("JAX Primitive object for writing transformation rules; tracejit's primitives live in "
        "tracejit.ops with their own rule tables")
EXOTIC = "exotic ml_dtypes low-precision dtype (float8/float6/float4/int4/int2/int1): not a tracejit dtype"
HOST = ("device memory / host transfer control: tracejit runs on the CPU and its arrays are "
        "NumPy arrays in host memory")
INTERNAL = "JAX internals for library authors (XLA, jaxlib, interpreters); tracejit's are its own"
SCALED = "block-scaled (MX / float8) matmuls for GPU/TPU; needs the exotic dtypes"

# Modules that tracejit does not have at all (their names are not checked one by one).
MISSING_MODULES = {}

# Names that tracejit has, but as something else than JAX's API: counted as absent.
NAME_CLASHES = {
    "jax": {
        "core": "tracejit.core is tracejit's IR/tracer internals, not jax.core",
        # (tracejit.ops is jax.ops too: its segment_* functions, tests/test_jax_ops_image.py.)
    },
}

# Names that tracejit will not provide. name -> one-line reason.
DELIBERATE_OMISSIONS = {
    "jax": {
        # Multi-device, multi-process, sharding (issue 17).
        **dict.fromkeys([
            "Shard", "auto_pcast", "make_array_from_callback", "make_array_from_single_device_arrays", "pmap",
            "remove_size_one_mesh_axis_from_type", "reshard", "set_mesh", "smap"], SPMD),
        **dict.fromkeys(["host_count", "host_id", "host_ids"],
                        "deprecated aliases of process_count / process_index (multi-process, issue 17)"),
        # No accelerators, no device buffers.
        **dict.fromkeys([
            "transfer_guard", "transfer_guard_device_to_device", "transfer_guard_device_to_host",
            "transfer_guard_host_to_device", "copy_to_host_async", "live_arrays",
            "array_garbage_collection_guard"], HOST),
        "memory": "memory spaces (device / pinned host) of GPU/TPU memory; no device memory here",
        "default_matmul_precision": "GPU/TPU matmul precision (bf16 passes); CPU matmuls are full precision",
        "allow_f16_reductions": "XLA accelerator knob for float16 reduction accumulation",
        "jax2tf_associative_scan_reductions": "jax2tf (TensorFlow export) option",
        "softmax_custom_jvp": "transient JAX flag for an old softmax gradient (deprecated)",
        "threefry_partitionable": ("tracejit implements only the partitionable threefry streams, JAX's "
                                   "default (docs/random.md)"),
        # Whole JAX subsystems outside tracejit's design.
        "api_util": INTERNAL,
        "interpreters": INTERNAL,
        "lib": INTERNAL,
        "core": INTERNAL + " (see NAME_CLASHES)",
        "export": ("StableHLO serialization; tracejit compiles to LLVM and has lower().compile() and "
                   "a persistent compile cache instead"),
        "ffi": "XLA custom calls (foreign functions registered with XLA)",
        "profiler": "XLA / TensorBoard profiler; tracejit has tracejit.report and config.log_compiles",
        "monitoring": "JAX's internal event listeners; tracejit's diagnostics are in docs/diagnostics.md",
    },
    "jax.lax": {
        # Primitive objects.
        **dict.fromkeys([
            "abs_p", "acos_p", "acosh_p", "add_p", "after_all_p", "all_gather_p", "all_to_all_p",
            "and_p", "approx_top_k_p", "argmax_p", "argmin_p", "asin_p", "asinh_p", "atan2_p",
            "atan_p", "atanh_p", "axis_index_p", "bessel_i0e_p", "bessel_i1e_p",
            "bitcast_convert_type_p", "broadcast_in_dim_p", "cbrt_p", "ceil_p", "clamp_p", "clz_p",
            "complex_p", "concatenate_p", "cond_p", "conj_p", "conv_general_dilated_p",
            "convert_element_type_p", "copy_p", "cos_p", "cosh_p", "create_token_p",
            "cumlogsumexp_p", "cummax_p", "cummin_p", "cumprod_p", "cumsum_p", "dce_sink_p",
            "device_put_p", "digamma_p", "div_p", "dot_general_p", "dynamic_slice_p",
            "dynamic_update_slice_p", "eq_p", "eq_to_p", "erf_inv_p", "erf_p", "erfc_p", "exp2_p",
            "exp_p", "expm1_p", "fft_p", "floor_p", "gather_p", "ge_p", "gt_p", "igamma_grad_a_p",
            "igamma_p", "igammac_p", "imag_p", "integer_pow_p", "iota_p", "is_finite_p", "le_p",
            "le_to_p", "lgamma_p", "linear_solve_p", "log1p_p", "log_p", "logistic_p", "lt_p",
            "lt_to_p", "max_p", "min_p", "mul_p", "mulhi_p", "ne_p", "neg_p", "nextafter_p",
            "not_p", "optimization_barrier_p", "or_p", "pad_p", "pmax_p", "pmin_p", "polygamma_p",
            "population_count_p", "pow_p", "ppermute_p", "psum_p", "ragged_all_to_all_p", "real_p",
            "reduce_and_p", "reduce_max_p", "reduce_min_p", "reduce_or_p", "reduce_p",
            "reduce_precision_p", "reduce_prod_p", "reduce_sum_p", "reduce_window_max_p",
            "reduce_window_min_p", "reduce_window_p", "reduce_window_sum_p", "reduce_xor_p",
            "regularized_incomplete_beta_p", "rem_p", "reshape_p", "rev_p", "rng_bit_generator_p",
            "rng_uniform_p", "round_p", "rsqrt_p", "scan_p", "scatter_add_p", "scatter_max_p",
            "scatter_min_p", "scatter_mul_p", "scatter_p", "scatter_sub_p",
            "select_and_gather_add_p", "select_and_scatter_add_p", "select_and_scatter_p",
            "select_n_p", "sharding_constraint_p", "shift_left_p", "shift_right_arithmetic_p",
            "shift_right_logical_p", "sign_p", "sin_p", "sinh_p", "slice_p", "sort_p", "split_p",
            "sqrt_p", "square_p", "squeeze_p", "stack_p", "stage_p", "stop_gradient_p", "sub_p",
            "tan_p", "tanh_p", "tile_p", "top_k_p", "transpose_p", "unstack_p", "while_p",
            "xor_p", "zeta_p"], PRIM),
        # Collectives over devices and sharding (issue 17); psum, pmean, pmax, pmin, all_gather,
        # psum_scatter, all_to_all, ppermute, pshuffle, axis_index and axis_size work under
        # vmap(axis_name=...) and over MPI processes under shard_map.
        **dict.fromkeys([
            "pbroadcast", "pcast", "precv", "psend",
            "pswapaxes", "ragged_all_to_all"], SPMD),
        # Accelerator-only or XLA-specific.
        "DotAlgorithm": "GPU/TPU dot algorithm selection (bf16x3, tf32, ...)",
        "DotAlgorithmPreset": "GPU/TPU dot algorithm selection (bf16x3, tf32, ...)",
        "AccuracyMode": "TPU accuracy modes for transcendental functions",
        "Tolerance": "TPU accuracy tolerances for transcendental functions",
        "after_all": "XLA ordering tokens (infeed/outfeed); tracejit has no tokens",
        "create_token": "XLA ordering tokens (infeed/outfeed); tracejit has no tokens",
        "composite": "StableHLO composite ops (a decomposition for XLA backends)",
        "dce_sink": "JAX-internal dead-code-elimination sink",
        "rng_bit_generator": "XLA's backend-specific RNG (streams differ per platform); use tracejit.random",
        "rng_uniform": "XLA's stateful RNG, discouraged by JAX; use tracejit.random",
        "scaled_dot": SCALED,
    },
    "jax.nn": {
        "scaled_matmul": SCALED,
        "scaled_dot_general": SCALED,
        "get_scaled_dot_general_config": SCALED,
    },
    "jax.numpy": {
        **dict.fromkeys([
            "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
            "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
            "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int2", "int4", "uint1", "uint2",
            "uint4"], EXOTIC),
    },
    "jax.lax.linalg": {
        **dict.fromkeys([
            "cholesky_p", "cholesky_update_p", "eig_p", "eigh_p", "hessenberg_p", "householder_product_p",
            "lu_p", "lu_pivots_to_permutation_p", "ormqr_p", "qr_p", "schur_p", "svd_p", "symmetric_product_p",
            "triangular_solve_p", "tridiagonal_p", "tridiagonal_solve_p"], PRIM),
    },
    "jax.random": {
        "random_gamma_p": PRIM,
    },
    "jax.example_libraries.optimizers": {
        **dict.fromkeys(["map", "zip", "safe_map", "safe_zip", "unzip2"],
                        "jax._src.util helpers imported into the module's namespace, not its API"),
    },
    "jax.custom_derivatives": {
        **dict.fromkeys(["custom_jvp_call_p", "custom_vjp_call_p", "remat_opt_p"], PRIM),
    },
}

# Names not implemented yet. Delete a name when it lands (the test says which). A list without
# comments can be rewritten from the current state with
# `python tests/test_api_coverage.py --update-not-yet jax.numpy` (it lists every missing name that is
# not a deliberate omission).
NOT_YET: dict = {}


def _module(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def has_name(tj_module, tj_module_name, name, submodule):
    """``tj_module`` has ``name`` (a submodule counts when it imports)."""
    if hasattr(tj_module, name):
        return True
    return submodule and _module(f"{tj_module_name}.{name}") is not None


def check_module(jax_module, tj_module, tj_module_name=None):
    """(present, problems) for one module: ``problems`` are messages that fail the test."""
    entry = JAX_NAMES[jax_module]
    names = [(n, False) for n in entry["names"]] + [(n, True) for n in entry["submodules"]]
    jax_set = {n for n, _ in names}
    deliberate = DELIBERATE_OMISSIONS.get(jax_module, {})
    not_yet = set(NOT_YET.get(jax_module, ()))
    clashes = NAME_CLASHES.get(jax_module, {})
    tj_module_name = tj_module_name or tracejit_module_name(jax_module)
    present, problems = set(), []
    for n, sub in names:
        if has_name(tj_module, tj_module_name, n, sub) and n not in clashes:
            present.add(n)
    unlisted = sorted(jax_set - present - set(deliberate) - not_yet)
    if unlisted:
        problems.append(f"{jax_module}: JAX names missing from {tj_module_name} and in neither "
                        f"DELIBERATE_OMISSIONS nor NOT_YET: {unlisted}")
    landed = sorted(not_yet & present)
    if landed:
        problems.append(f"{jax_module}: now implemented, delete from NOT_YET[{jax_module!r}]: {landed}")
    now_there = sorted(set(deliberate) & present)
    if now_there:
        problems.append(f"{jax_module}: present in {tj_module_name}, delete from "
                        f"DELIBERATE_OMISSIONS[{jax_module!r}]: {now_there}")
    both = sorted(not_yet & set(deliberate))
    if both:
        problems.append(f"{jax_module}: in both DELIBERATE_OMISSIONS and NOT_YET: {both}")
    stale = sorted((not_yet | set(deliberate) | set(clashes)) - jax_set)
    if stale:
        problems.append(f"{jax_module}: listed but not a public name of JAX's module: {stale}")
    for n in clashes:
        if not hasattr(tj_module, n) and _module(f"{tj_module_name}.{n}") is None:
            problems.append(f"{jax_module}: NAME_CLASHES entry {n!r} no longer in {tj_module_name}")
    return present, problems


def coverage_rows():
    """(jax module, present, total, deliberate) for every module, 0 present for a missing module."""
    rows = []
    for m, entry in JAX_NAMES.items():
        total = len(entry["names"]) + len(entry["submodules"])
        deliberate = len(DELIBERATE_OMISSIONS.get(m, {}))
        mod = _module(tracejit_module_name(m))
        present = 0 if mod is None else len(check_module(m, mod)[0])
        rows.append((m, present, total, deliberate))
    return rows


def coverage_table():
    lines = [f"{'JAX module':36} {'present/total':>14} {'%':>5} {'present/(total-deliberate)':>27} {'%':>5}"]
    sums = [0, 0, 0]
    for m, p, t, d in coverage_rows():
        lines.append(f"{m:36} {f'{p}/{t}':>14} {100 * p / t:5.0f} {f'{p}/{t - d}':>27} "
                     f"{100 * p / max(t - d, 1):5.0f}")
        sums = [sums[0] + p, sums[1] + t, sums[2] + d]
    p, t, d = sums
    lines.append(f"{'all':36} {f'{p}/{t}':>14} {100 * p / t:5.0f} {f'{p}/{t - d}':>27} "
                 f"{100 * p / (t - d):5.0f}")
    return "\n".join(lines)


# --- Tests ------------------------------------------------------------------------------------

def test_names_file_is_jax_0_10():
    data = json.load(open(DATA))
    assert data["jax_version"].startswith("0.10.")
    assert {"jax", "jax.numpy", "jax.lax", "jax.random", "jax.nn", "jax.scipy.stats.norm",
            "jax.tree_util", "jax.example_libraries.stax", "jax.test_util"} <= set(JAX_NAMES)
    for m in list(DELIBERATE_OMISSIONS) + list(NOT_YET) + list(NAME_CLASHES) + list(MISSING_MODULES):
        assert m in JAX_NAMES, f"{m} is listed in the test but not in {DATA}"


@pytest.mark.parametrize("jax_module", list(JAX_NAMES))
def test_tracejit_module_exists(jax_module):
    name = tracejit_module_name(jax_module)
    mod = _module(name)
    if jax_module in MISSING_MODULES:
        assert mod is None, f"{name} exists now: delete {jax_module!r} from MISSING_MODULES"
    else:
        assert mod is not None, f"{name} (for {jax_module}) does not import"


@pytest.mark.parametrize("jax_module", [m for m in JAX_NAMES if m not in MISSING_MODULES])
def test_public_names_covered(jax_module):
    mod = _module(tracejit_module_name(jax_module))
    if mod is None:
        pytest.fail(f"{tracejit_module_name(jax_module)} does not import")
    _, problems = check_module(jax_module, mod)
    assert not problems, "\n".join(problems)


def test_deliberate_omissions_have_reasons():
    for m, d in DELIBERATE_OMISSIONS.items():
        for n, reason in d.items():
            assert isinstance(reason, str) and len(reason) > 10, (m, n)


def test_checker_catches_a_removed_name():
    """Dropping an implemented name (or adding a NOT_YET one) is reported."""
    import tracejit.numpy as tnp
    fake = types.ModuleType("tracejit.numpy")
    fake.__dict__.update({k: v for k, v in vars(tnp).items() if k != "sum"})
    _, problems = check_module("jax.numpy", fake)
    assert any("'sum'" in p and "neither" in p for p in problems), problems
    if NOT_YET.get("jax.numpy"):
        name = sorted(NOT_YET["jax.numpy"])[0]
        setattr(fake, name, object())
        _, problems = check_module("jax.numpy", fake)
        assert any(name in p and "delete from NOT_YET" in p for p in problems), problems


def test_coverage_report(capsys):
    table = coverage_table()
    with capsys.disabled():
        print("\nJAX 0.10 public-name coverage (by name):\n" + table)


def _gaps():
    """{jax module: sorted unlisted missing names} with NOT_YET ignored, for regenerating NOT_YET."""
    out = {}
    for m in JAX_NAMES:
        if m in MISSING_MODULES:
            continue
        mod = _module(tracejit_module_name(m))
        if mod is None:
            continue
        saved = NOT_YET.pop(m, None)
        try:
            present, _ = check_module(m, mod)
        finally:
            if saved is not None:
                NOT_YET[m] = saved
        e = JAX_NAMES[m]
        missing = sorted((set(e["names"]) | set(e["submodules"])) - present
                         - set(DELIBERATE_OMISSIONS.get(m, {})))
        if missing:
            out[m] = missing
    return out


def coverage_markdown():
    """The coverage table for docs/porting.md (the scipy.stats distribution modules summed)."""
    rows, dist = [], [0, 0, 0, 0]
    for m, p, t, d in coverage_rows():
        if m.startswith("jax.scipy.stats."):
            dist = [dist[0] + 1, dist[1] + p, dist[2] + t, dist[3] + d]
            continue
        rows.append((f"`{m}`", p, t, d))
        if m == "jax.scipy.stats":
            rows.append(("`jax.scipy.stats.<distribution>` (DIST modules)", 0, 0, 0))
    rows = [(n.replace("DIST", str(dist[0])), *dist[1:]) if "DIST" in n else (n, p, t, d)
            for n, p, t, d in rows]
    out = ["| JAX module | present / total | present / (total - deliberate) |", "| --- | --- | --- |"]
    for n, p, t, d in rows:
        out.append(f"| {n} | {p} / {t} ({100 * p / t:.0f}%) | {p} / {t - d} ({100 * p / max(t - d, 1):.0f}%) |")
    p, t, d = (sum(r[i] for r in rows) for i in (1, 2, 3))
    out.append(f"| all | {p} / {t} ({100 * p / t:.0f}%) | {p} / {t - d} ({100 * p / (t - d):.0f}%) |")
    return "\n".join(out)


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print(coverage_markdown())
        sys.exit()
    print(coverage_table())

    def entry(m, names):
        body = textwrap.fill(", ".join(f'"{n}"' for n in names), 92,
                             initial_indent="        ", subsequent_indent="        ")
        return f'    "{m}": [\n{body}\n    ],\n'

    if "--not-yet" in sys.argv:  # the NOT_YET dict's body, as every missing name
        for m, names in _gaps().items():
            print(entry(m, names), end="")
    if "--update-not-yet" in sys.argv:  # rewrite one module's NOT_YET list in this file
        import re
        m = sys.argv[sys.argv.index("--update-not-yet") + 1]
        src = open(__file__).read()
        pat = re.compile(rf'^    "{re.escape(m)}": \[\n.*?^    \],\n', re.S | re.M)
        names = _gaps().get(m, [])
        new_src, n = pat.subn(lambda _: entry(m, names) if names else "", src, count=1)
        assert n == 1, f"no NOT_YET list for {m} in {__file__}"
        open(__file__, "w").write(new_src)
        print(f"NOT_YET[{m!r}]: {len(names)} names")


@pytest.mark.parametrize("name", ["tracejit.scipy.special", "tracejit.scipy.linalg", "tracejit.scipy.signal",
                                  "tracejit.numpy.linalg", "tracejit.numpy.fft"])
def test_api_modules_list_only_their_public_names(name):
    # dir() (tab completion) showed helpers such as promote_args_inexact, eager, aval, is_tracer
    import importlib
    module = importlib.import_module(name)
    assert dir(module) == sorted(module.__all__)
    assert all(callable(getattr(module, n)) or isinstance(getattr(module, n), type) for n in module.__all__)
    assert not {"np", "math", "eager", "aval", "is_tracer", "promote_args_inexact"} & set(dir(module))
