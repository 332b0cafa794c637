"""Derivatives eagerly vs under ``jit``: a compact version of a class sweep over differentiable public
functions (tracejit.numpy, lax, nn, scipy.special / stats / linalg, fft).

The class: a derivative rule (or a traced implementation run under jvp/grad) that works eagerly but
fails or differs under ``jit`` -- e.g. the irfft/hfft VJP that multiplied through ``lax.mul`` with a
(1,..,h) constant, which only NumPy's eager broadcast accepted (commit 48919b1). Each case checks

* ``grad`` eagerly and ``jit(grad)``: both run, same values (1e-10 relative), same dtype;
* the gradient against 5-point central differences along a random direction;
* ``jvp`` eagerly and under ``jit``: same tangent (= grad . v) and the same dtype as the jitted one.

The loss is ``sum(real(f(*args) * w))`` with fixed random weights ``w`` (every output leaf). Each case
runs in float64, and the ``F32`` cases in float32 too (dtype agreement; values to float32 precision).

Regression: ``quantile``/``percentile`` with a Python-float q on float32 data gave a float64 jvp
(primal and tangent) eagerly, float32 under jit (the weak float64 interpolation weight became a plain
NumPy float64 array on the concrete eager path and promoted the result).
"""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit.lax as lax
import tracejit.nn as nn
import tracejit.numpy as jnp
import tracejit.scipy.linalg as sl
import tracejit.scipy.special as ss
import tracejit.scipy.stats as st
from tracejit.core.pytree import tree_leaves


def _pos(s, r):
    return r.uniform(0.5, 2.0, s)


def _unit(s, r):
    return r.uniform(-0.8, 0.8, s)


def _prob(s, r):
    return r.uniform(0.15, 0.85, s)


def _normal(s, r):
    return r.standard_normal(s)


def _wellcond(s, r):
    return r.standard_normal(s) * 0.3 + 2 * np.eye(s[-1])


def _spd(s, r):
    a = r.standard_normal(s)
    return a @ np.swapaxes(a, -1, -2) + s[-1] * np.eye(s[-1])


def _sym(a):
    return (a + jnp.swapaxes(a, -1, -2)) / 2


MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])
IDX = np.array([2, 0, 0, 1])
GATHER_DN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
SCATTER_DN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))

# (name, function, argument shapes, argument domains); F32: the names also run in float32.
CASES = [
    ("quantile", lambda x: jnp.quantile(x, 0.3, axis=1), [(3, 4)], [_normal]),
    ("quantile_all", lambda x: jnp.quantile(x, 0.3), [(5,)], [_normal]),
    ("percentile", lambda x: jnp.percentile(x, 30.0, axis=0, keepdims=True), [(3, 4)], [_normal]),
    ("nanquantile", lambda x: jnp.nanquantile(x, 0.7, axis=1), [(3, 4)], [_normal]),
    ("quantile_array_q", lambda x: jnp.quantile(x, np.array([0.3, 0.6]), axis=1), [(3, 4)], [_normal]),
    ("median", lambda x: jnp.median(x, axis=0), [(3, 4)], [_normal]),
    ("sum_where_keepdims", lambda x: jnp.sum(x, axis=1, where=MASK, keepdims=True), [(3, 4)], [_normal]),
    ("prod_where", lambda x: jnp.prod(x, axis=0, where=MASK), [(3, 4)], [_pos]),
    ("var_ddof", lambda x: jnp.var(x, axis=0, ddof=1), [(3, 4)], [_normal]),
    ("std_size1_axis", lambda x: jnp.std(x, axis=0), [(2, 4)], [_normal]),
    ("max_keepdims_size1", lambda x: jnp.max(x, axis=0, keepdims=True), [(1, 4)], [_normal]),
    ("logsumexp", lambda x: jnp.logsumexp(x, axis=1), [(3, 4)], [_normal]),
    ("cumprod", lambda x: jnp.cumprod(x, axis=1), [(3, 4)], [_pos]),
    ("cummax", lambda x: jnp.cummax(x, axis=0), [(3, 4)], [_normal]),
    ("cumulative_sum_initial", lambda x: jnp.cumulative_sum(x, axis=1, include_initial=True), [(3, 4)], [_normal]),
    ("diff_prepend", lambda x, p: jnp.diff(x, axis=1, prepend=p, append=p), [(3, 4), (3, 1)], [_normal, _normal]),
    ("interp", lambda x, fp: jnp.interp(x, np.linspace(-2, 2, 5), fp), [(7,), (5,)], [_normal, _normal]),
    ("power_broadcast", jnp.power, [(3, 1), (1, 4)], [_pos, _normal]),
    ("arctan2_scalar", jnp.arctan2, [(4,), ()], [_normal, _normal]),
    ("sinc", jnp.sinc, [(3, 4)], [_normal]),
    ("take_clip", lambda x: jnp.take(x, np.array([5, -1]), axis=0, mode="clip"), [(3, 4)], [_normal]),
    ("at_add_dup", lambda x, y: jnp.asarray(x).at[IDX].add(y), [(5, 4), (4, 4)], [_normal, _normal]),
    ("at_max", lambda x, y: jnp.asarray(x).at[IDX].max(y), [(5, 4), (4, 4)], [_normal, _normal]),
    ("pad_reflect", lambda x: jnp.pad(x, 2, mode="reflect"), [(3, 4)], [_normal]),
    ("sort_axis0", lambda x: jnp.sort(x, axis=0), [(3, 4)], [_normal]),
    ("einsum_repeat", lambda a, b: jnp.einsum("iij,j->i", a, b), [(3, 3, 2), (2,)], [_normal, _normal]),
    ("complex_log", lambda x, y: jnp.log(x + 1j * y), [(3, 4), (3, 4)], [_pos, _normal]),
    ("linalg_solve_batched", jnp.linalg.solve, [(2, 3, 3), (2, 3, 2)], [_wellcond, _normal]),
    ("linalg_slogdet_1x1", lambda a: jnp.linalg.slogdet(a)[1], [(1, 1)], [_wellcond]),
    ("linalg_cholesky", lambda a: jnp.linalg.cholesky(_sym(a)), [(3, 3)], [_spd]),
    ("linalg_eigh", lambda a: jnp.linalg.eigh(_sym(a))[0], [(2, 3, 3)], [_wellcond]),
    ("linalg_svd_rect", lambda a: jnp.linalg.svd(a, compute_uv=False), [(4, 3)], [_normal]),
    ("linalg_lstsq", lambda a, b: jnp.linalg.lstsq(a, b)[0], [(4, 3), (4, 2)], [_normal, _normal]),
    ("linalg_pinv", jnp.linalg.pinv, [(3, 4)], [_normal]),
    ("linalg_norm_nuc", lambda a: jnp.linalg.norm(a, "nuc"), [(3, 4)], [_normal]),
    ("scipy_expm", sl.expm, [(3, 3)], [_normal]),
    ("scipy_lu_solve", lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=1), [(3, 3), (3, 3)], [_wellcond, _normal]),
    ("scipy_solve_triangular", lambda a, b: sl.solve_triangular(a, b, lower=True), [(3, 3), (3,)],
     [_wellcond, _normal]),
    ("fft_irfft_n", lambda x: jnp.fft.irfft(x, n=8, norm="ortho"), [(1, 5)], [_normal]),
    ("fft_rfftn_s", lambda x: jnp.fft.rfftn(x, s=(3, 6), axes=(0, 2)), [(2, 3, 4)], [_normal]),
    ("fft_hfft", lambda x: jnp.fft.hfft(x, n=4, axis=0), [(3, 5)], [_normal]),
    ("lax_reduce_window_max", lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 3), (2, 1), "SAME"), [(4, 5)],
     [_normal]),
    ("lax_reduce_window_dilated", lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "VALID", (1, 2)),
     [(4, 5)], [_normal]),
    ("lax_conv_grouped", lambda l, r: lax.conv_general_dilated(l, r, (2, 1), "SAME", None, (1, 2),
                                                               ("NHWC", "HWIO", "NHWC"), feature_group_count=2),
     [(2, 5, 6, 4), (2, 3, 2, 6)], [_normal, _normal]),
    ("lax_conv_transpose", lambda l, r: lax.conv_transpose(l, r, (2, 2), "SAME",
                                                           dimension_numbers=("NHWC", "HWIO", "NHWC")),
     [(1, 4, 4, 2), (3, 3, 2, 3)], [_normal, _normal]),
    ("lax_cumlogsumexp_rev", lambda x: lax.cumlogsumexp(x, axis=1, reverse=True), [(3, 4)], [_normal]),
    ("lax_top_k", lambda x: lax.top_k(x, 2)[0], [(3, 4)], [_normal]),
    ("lax_dynamic_slice_oob", lambda x: lax.dynamic_slice(x, (2, 3), (2, 2)), [(3, 4)], [_normal]),
    ("lax_gather_fill", lambda x: lax.gather(x, np.array([[5], [0]]), GATHER_DN, (1, 3), mode="fill",
                                             fill_value=0.0), [(3, 4)], [_normal]),
    ("lax_scatter_min_dup", lambda x, u: lax.scatter_min(x, np.array([[2], [0], [2]]), u, SCATTER_DN),
     [(3, 4), (3, 4)], [_normal, _normal]),
    ("lax_select_n", lambda a, b, c: lax.select_n(np.array([0, 1, 2, 1]), a, b, c), [(4,), (4,), (4,)],
     [_normal, _normal, _normal]),
    ("lax_clamp_scalar_bounds", lambda lo, x, hi: lax.clamp(lo, x, hi), [(), (3, 4), ()],
     [lambda s, r: -0.3, _normal, lambda s, r: 0.4]),
    ("lax_integer_pow", lambda x: lax.integer_pow(x, -2) + lax.integer_pow(x, 3), [(3, 4)], [_pos]),
    ("lax_rem_atan2", lambda x, y: lax.rem(x, y) + lax.atan2(x, y), [(3, 4), (3, 4)], [_normal, _pos]),
    ("lax_lgamma_digamma", lambda x: lax.lgamma(x) + lax.digamma(x), [(3, 4)], [_pos]),
    ("lax_erf_inv", lax.erf_inv, [(3, 4)], [_unit]),
    ("nn_softmax_where", lambda x: nn.softmax(x, where=MASK), [(3, 4)], [_normal]),
    ("nn_log_softmax_size1", lambda x: nn.log_softmax(x, axis=0), [(1, 4)], [_normal]),
    ("nn_standardize", lambda x: nn.standardize(x, axis=(0, 1)), [(3, 4)], [_normal]),
    ("nn_gelu_exact", lambda x: nn.gelu(x, approximate=False), [(3, 4)], [_normal]),
    ("nn_one_hot_xent", lambda x: -jnp.sum(nn.one_hot(np.array([0, 2, 3]), 4) * nn.log_softmax(x), axis=-1),
     [(3, 4)], [_normal]),
    ("nn_attention_causal", lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
     [(2, 3, 1, 4), (2, 3, 1, 4), (2, 3, 1, 4)], [_normal, _normal, _normal]),
    ("special_logsumexp_b", lambda x, b: ss.logsumexp(x, axis=0, b=b, keepdims=True), [(3, 4), (3, 4)],
     [_normal, _pos]),
    ("special_xlogy_gammaln", lambda x, y: ss.xlogy(x, y) + ss.gammaln(y), [(3, 4), (3, 4)], [_normal, _pos]),
    ("stats_norm_logcdf", st.norm.logcdf, [(3,), (3,), (3,)], [_normal, _normal, _pos]),
    ("stats_t_logpdf", st.t.logpdf, [(3,), (3,)], [_normal, _pos]),
    ("stats_mvn_logpdf", lambda x, m, c: st.multivariate_normal.logpdf(x, m, c @ c.T + np.eye(3)),
     [(4, 3), (3,), (3, 3)], [_normal, _normal, _normal]),
]

F32 = {"quantile", "quantile_all", "percentile", "nanquantile", "quantile_array_q", "median", "sum_where_keepdims",
       "logsumexp", "cumprod", "interp", "power_broadcast", "at_add_dup", "pad_reflect", "linalg_solve_batched",
       "fft_irfft_n", "lax_reduce_window_max", "lax_conv_grouped", "nn_softmax_where", "special_logsumexp_b",
       "stats_norm_logcdf"}


def _args(shapes, doms, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [np.asarray(d(s, rng), dtype) for d, s in zip(doms, shapes)]


def _loss_parts(fn, args):
    out = tree_leaves(fn(*args))
    rng = np.random.default_rng(1)
    ws = [rng.uniform(0.5, 1.5, np.shape(o)) * rng.choice([-1.0, 1.0], np.shape(o)) for o in out]
    dt = np.result_type(*[a.dtype for a in args])
    ws = [w.astype(dt) for w in ws]

    def loss(*a):
        return sum(jnp.sum(jnp.real(o * w)) for o, w in zip(tree_leaves(fn(*a)), ws))

    def value(a):
        return sum(float(np.sum(np.real(np.asarray(o, np.complex128) * w))) for o, w in zip(tree_leaves(fn(*a)), ws))
    return loss, value


def _check(name, fn, shapes, doms, dtype):
    args = _args(shapes, doms, dtype)
    loss, value = _loss_parts(fn, args)
    argnums = tuple(range(len(args)))
    f64 = dtype == np.float64
    g_eager = [np.asarray(g) for g in tracejit.grad(loss, argnums=argnums)(*args)]
    g_jit = [np.asarray(g) for g in tracejit.jit(tracejit.grad(loss, argnums=argnums))(*args)]
    for i, (ge, gj, a) in enumerate(zip(g_eager, g_jit, args)):
        assert ge.dtype == gj.dtype == a.dtype, (name, i, ge.dtype, gj.dtype)
        scale = max(float(np.max(np.abs(ge))), 1e-300) if ge.size else 1.0
        np.testing.assert_allclose(gj, ge, rtol=0, atol=(1e-10 if f64 else 1e-4) * scale,
                                   err_msg=f"{name}: jit(grad) vs grad, argument {i}")

    rng = np.random.default_rng(2)
    v = [rng.standard_normal(a.shape).astype(dtype) for a in args]
    gv = sum(float(np.sum(g.astype(np.float64) * t)) for g, t in zip(g_eager, v))
    gscale = max(sum(float(np.sum(np.abs(g.astype(np.float64) * t))) for g, t in zip(g_eager, v)), 1e-8)
    if f64:
        h = 1e-3
        a64 = [a.astype(np.float64) for a in args]

        def at(t):
            return value([a + t * d for a, d in zip(a64, v)])
        fd = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h)
        assert abs(gv - fd) <= 1e-5 * max(gscale, abs(fd)), (name, gv, fd)

    p_e, t_e = tracejit.jvp(loss, tuple(args), tuple(v))
    p_j, t_j = tracejit.jit(lambda *a: tracejit.jvp(loss, tuple(a), tuple(v)))(*args)
    assert np.asarray(p_e).dtype == np.asarray(p_j).dtype, (name, "jvp primal dtype", np.asarray(p_e).dtype,
                                                            np.asarray(p_j).dtype)
    assert np.asarray(t_e).dtype == np.asarray(t_j).dtype, (name, "jvp tangent dtype", np.asarray(t_e).dtype,
                                                            np.asarray(t_j).dtype)
    tol = 1e-8 if f64 else 1e-3
    for what, t in (("eager", t_e), ("jit", t_j)):
        assert abs(float(t) - gv) <= tol * gscale, (name, f"jvp {what}", float(t), gv)


@pytest.mark.parametrize("name,fn,shapes,doms", CASES, ids=[c[0] for c in CASES])
def test_grad_jit_eager_float64(name, fn, shapes, doms):
    _check(name, fn, shapes, doms, np.float64)


F32_CASES = [c for c in CASES if c[0] in F32]


@pytest.mark.parametrize("name,fn,shapes,doms", F32_CASES, ids=[c[0] for c in F32_CASES])
def test_grad_jit_eager_float32(name, fn, shapes, doms):
    _check(name, fn, shapes, doms, np.float32)


def test_quantile_float32_jvp_dtype_regression():
    """Eager jvp of quantile with a Python-float q kept float32 data float32 (it gave float64), as jit
    and the tracer-free call do; the values agree with NumPy's."""
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    for fn in (lambda a: jnp.quantile(a, 0.3, axis=1), lambda a: jnp.percentile(a, 70.0),
               lambda a: jnp.nanquantile(a, 0.5, axis=0)):
        want = fn(x)
        p, t = tracejit.jvp(fn, (x,), (np.ones_like(x),))
        pj, tj = tracejit.jit(lambda a: tracejit.jvp(fn, (a,), (np.ones_like(a),)))(x)
        assert np.asarray(want).dtype == np.float32
        assert np.asarray(p).dtype == np.asarray(t).dtype == np.asarray(pj).dtype == np.float32
        np.testing.assert_allclose(np.asarray(p), np.asarray(want), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(t), 1.0, rtol=1e-6)
