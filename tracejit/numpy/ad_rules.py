"""Differentiation rules written with ``tracejit.numpy``: sorting and linear algebra.

The primitives are defined in ``tracejit/ops`` and their other rules in ``tracejit/transforms``;
these rules build their derivatives from NumPy-level functions (``matmul``, ``take_along_axis``,
``cumprod``...), so they sit above ``tracejit.numpy``; importing it adds them to
``ad_rules_extra``'s makers, registered when differentiation is first used.
Being made of traceable operations, they are themselves differentiable.
"""
from __future__ import annotations

import numpy as np

import tracejit.numpy as jnp
from tracejit.core import dtypes
from tracejit.transforms.ad import aval_of, def_jvp, def_simple_vjp, zeros
from tracejit.transforms.ad_custom import custom_jvp
from tracejit.transforms.ad_rules_extra import instantiate_like, rules_for
from tracejit.ops.binders import add, binary, c, convert, mul, neg, sub

@rules_for("sort")
def _sort_rules(sort_p, prims):
    iota_p = prims["iota"]

    def jvp(primals, tangents, *, dimension, is_stable, num_keys):
        shape = aval_of(primals[0]).shape
        perm_in = iota_p.bind(dtype=np.dtype(np.int64), shape=shape, dimension=dimension)
        outs = sort_p.bind(*primals, perm_in, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
        perm = outs[-1]
        touts = [None if t is None else jnp.take_along_axis(t, perm, axis=dimension) for t in tangents]
        return outs[:-1], touts
    def_jvp(sort_p, jvp)  # reverse mode transposes the gather (vjp_via_jvp)


@rules_for("bincount")
def _bincount_rules(bincount_p, prims):
    def jvp(primals, tangents, *, length):
        out = bincount_p.bind(*primals, length=length)
        if len(primals) == 1 or tangents[1] is None:
            return [out], [None]
        # Linear in the weights: the same sums of the weights' tangents, as a scatter-add (whose
        # transpose, a gather, gives reverse mode). Negative values count as 0, values >= length
        # are dropped, as in the primal.
        x, t = primals[0], tangents[1]
        bins = jnp.clip(jnp.asarray(x).astype(np.int64), 0, None)
        return [out], [jnp.zeros((length,), aval_of(t).dtype).at[bins].add(t, mode="drop")]
    def_jvp(bincount_p, jvp)


# --------------------------------------------------------------------------- linear algebra
#
# JVP rules (reverse mode transposes them). Complex inputs follow JAX's rules in
# jax/_src/lax/linalg.py and jax/_src/numpy/linalg.py: factorizations of
# Hermitian matrices use conjugate transposes, and cholesky/eigh differentiate
# along the Hermitian part (t + t^H) / 2 of the direction (JAX symmetrizes
# their input).

def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _H(x):
    """Conjugate transpose of the last two axes."""
    t = _mT(x)
    return jnp.conj(t) if dtypes.kind(aval_of(t).dtype) == "c" else t


def _matmul(a, b):
    return jnp.matmul(a, b)


def _symmetrized(t):
    # The input is assumed Hermitian (as in JAX): differentiate along (t + t^H) / 2.
    return mul(add(t, _H(t)), c(0.5, t))


def _real_part(x):
    """``real(x)`` kept in ``x``'s dtype."""
    return convert(jnp.real(x), aval_of(x).dtype) if dtypes.kind(aval_of(x).dtype) == "c" else x


def _right_solve(a, b, solve_p):
    """``b @ inv(a)``."""
    return _mT(solve_p.bind(_mT(a), _mT(b)))


@rules_for("solve")
def _solve_rules(solve_p, prims):
    def jvp(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        x = solve_p.bind(a, b)
        rhs = tb
        if ta is not None:
            rhs = sub(instantiate_like(tb, b), _matmul(ta, x))
        return [x], [solve_p.bind(a, rhs)]

    def bwd(ct, needed, ins, outs):
        a, b = ins
        ct_b = solve_p.bind(_mT(a), ct)
        ct_a = neg(_matmul(ct_b, _mT(outs[0]))) if needed[0] else None
        return [ct_a, ct_b if needed[1] else None]
    def_jvp(solve_p, jvp)
    def_simple_vjp(solve_p, bwd)


@rules_for("inv")
def _inv_rules(inv_p, prims):
    def jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        y = inv_p.bind(a)
        return [y], [neg(_matmul(_matmul(y, t), y))]

    def bwd(ct, needed, ins, outs):
        yt = _mT(outs[0])
        return [neg(_matmul(_matmul(yt, ct), yt))]
    def_jvp(inv_p, jvp)
    def_simple_vjp(inv_p, bwd)


@rules_for("cholesky")
def _cholesky_rules(chol_p, prims):
    solve_p = prims["solve"]

    def jvp(primals, tangents, *, upper, nan_on_failure=False):
        # L' = L phi(L^-1 S L^-H), phi = lower triangle with the diagonal halved (JAX's rule).
        (a,), (t,) = primals, tangents
        out = chol_p.bind(a, upper=upper, nan_on_failure=nan_on_failure)
        low = _H(out) if upper else out
        n = aval_of(a).shape[-1]
        x = solve_p.bind(low, _H(solve_p.bind(low, _symmetrized(t))))
        phi = x * (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(aval_of(a).dtype)
        t_low = _matmul(low, phi)
        return [out], [_H(t_low) if upper else t_low]
    def_jvp(chol_p, jvp)


def _exclusive_products(s):
    """``(prod_{k < i} s_k, prod_{k > i} s_k)`` along the last axis, without divisions."""
    n = aval_of(s).shape[-1]
    ones = jnp.ones(aval_of(s).shape[:-1] + (1,), aval_of(s).dtype)
    left = jnp.concatenate([ones, jnp.cumprod(s, axis=-1)[..., :n - 1]], axis=-1)
    right = jnp.flip(jnp.concatenate([ones, jnp.cumprod(jnp.flip(s, -1), axis=-1)[..., :n - 1]], axis=-1), -1)
    return left, right


def _pair_products(s):
    """``q[..., i, j] = prod_{k not in (i, j)} s_k`` for ``i != j`` (0 on the diagonal), without divisions:
    for ``i < j`` the products below ``i``, strictly between ``i`` and ``j`` (a running product along
    each row, starting after column ``i``) and above ``j``."""
    n = aval_of(s).shape[-1]
    left, right = _exclusive_products(s)
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    after_row = jnp.where(cols > rows, jnp.expand_dims(s, -2), jnp.ones_like(jnp.expand_dims(s, -2)))
    running = jnp.cumprod(after_row, axis=-1)                       # [i, m] = prod_{i < k <= m} s_k
    between = jnp.concatenate([jnp.ones_like(running[..., :1]), running[..., :n - 1]], axis=-1)
    upper = jnp.expand_dims(left, -1) * between * jnp.expand_dims(right, -2)
    return jnp.where(rows < cols, upper, jnp.where(rows > cols, _mT(upper), jnp.zeros_like(upper)))


def _adjugate_fn(det_p, svd_p):
    """``adj(a)`` (``det(a) inv(a)`` when invertible), well defined for singular ``a``:
    with ``a = U S V^H``, ``adj(a) = det(U) det(V^H) V diag(prod_{j != i} s_j) U^H``.

    Its derivative is not that of the factorization (whose singular vectors are not differentiable
    where singular values repeat: the second derivative of ``det`` was NaN at the identity, at
    rotations, at any ``c * I``) but, in the same basis, ``d adj = det(U) det(V^H) V X U^H`` with
    ``M = U^H da V``, ``X_ij = -M_ij prod_{k != i, j} s_k`` and ``X_ii = sum_{k != i} M_kk prod_{l != i, k} s_l``
    (``d(det(a) inv(a))`` written in that basis; a polynomial in ``s``, so singular ``a`` too).
    """
    def parts(a):
        u, s, vh = svd_p.bind(a, full_matrices=False, compute_uv=True, hermitian=False)
        return u, s, vh, jnp.expand_dims(det_p.bind(u) * det_p.bind(vh), (-2, -1))

    def value(a):
        u, s, vh, phase = parts(a)
        left, right = _exclusive_products(s)
        others = convert(left * right, aval_of(a).dtype)
        return phase * _matmul(_H(vh) * jnp.expand_dims(others, -2), _H(u))

    adjugate = custom_jvp(value)

    @adjugate.defjvp
    def _adjugate_jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        u, s, vh, phase = parts(a)
        dtype = aval_of(a).dtype
        m = _matmul(_matmul(_H(u), t), _H(vh))
        q = convert(_pair_products(s), dtype)
        n = aval_of(s).shape[-1]
        eye = np.eye(n, dtype=bool)
        diag = _matmul(q, jnp.expand_dims(jnp.diagonal(m, axis1=-2, axis2=-1), -1))
        x = jnp.where(eye, diag, -(m * q))
        return adjugate(a), phase * _matmul(_matmul(_H(vh), x), _H(u))
    return adjugate


@rules_for("det")
def _det_rules(det_p, prims):
    adjugate = _adjugate_fn(det_p, prims["svd"])

    def jvp(primals, tangents):
        # det' = tr(adj(A) A') (JAX's cofactor rule: defined for singular A too).
        (a,), (t,) = primals, tangents
        d = det_p.bind(a)
        if aval_of(a).shape[-1] == 0:
            return [d], [zeros(aval_of(d))]
        return [d], [jnp.trace(_matmul(adjugate(a), t), axis1=-2, axis2=-1)]
    def_jvp(det_p, jvp)


@rules_for("slogdet")
def _slogdet_rules(slogdet_p, prims):
    solve_p = prims["solve"]

    def jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        sign, logdet = slogdet_p.bind(a)
        d = jnp.trace(solve_p.bind(a, t), axis1=-2, axis2=-1)
        if dtypes.kind(aval_of(a).dtype) == "c":
            # JAX: sign' = i Im(tr(A^-1 A')) sign, logabsdet' = Re(tr(A^-1 A'))
            return [sign, logdet], [mul(sub(d, _real_part(d)), sign), jnp.real(d)]
        return [sign, logdet], [None, d]
    def_jvp(slogdet_p, jvp)


@rules_for("eigh")
def _eigh_rules(eigh_p, prims):
    def jvp(primals, tangents, *, UPLO, compute_v):
        (a,), (t,) = primals, tangents
        w, v = eigh_p.bind(a, UPLO=UPLO, compute_v=True)
        n = aval_of(a).shape[-1]
        dtype = aval_of(a).dtype
        vh_t_v = _matmul(_H(v), _matmul(_symmetrized(t), v))
        dw = jnp.real(jnp.diagonal(vh_t_v, axis1=-2, axis2=-1))
        eye = np.eye(n, dtype=aval_of(w).dtype)
        gap = jnp.expand_dims(w, -2) - jnp.expand_dims(w, -1)   # w_j - w_i
        f = convert((1 - eye) / (gap + eye), dtype)
        dv = _matmul(v, f * vh_t_v)
        return ([w, v], [dw, dv]) if compute_v else ([w], [dw])
    def_jvp(eigh_p, jvp)


@rules_for("qr")
def _qr_rules(qr_p, prims):
    solve_p = prims["solve"]

    def jvp(primals, tangents, *, mode):
        # JAX's rule (j-towns.github.io/papers/qr-derivative.pdf), for m >= n.
        (a,), (t,) = primals, tangents
        outs = qr_p.bind(a, mode=mode)
        *_, m, n = aval_of(a).shape
        if m < n or (mode == "complete" and m != n):
            raise NotImplementedError("Unimplemented case of QR decomposition derivative (as in JAX: "
                                      "it needs m >= n, and m == n for mode='complete')")
        q, r = outs if mode != "r" else qr_p.bind(a, mode="reduced")
        dx_rinv = _right_solve(r, t, solve_p)
        qt_dx_rinv = _matmul(_H(q), dx_rinv)
        low = jnp.tril(qt_dx_rinv, -1)
        do = sub(low, _H(low))   # skew-Hermitian
        if dtypes.kind(aval_of(a).dtype) == "c":
            eye = np.eye(n, dtype=aval_of(a).dtype)
            do = add(do, eye * sub(qt_dx_rinv, _real_part(qt_dx_rinv)))
        dq = add(_matmul(q, sub(do, qt_dx_rinv)), dx_rinv)
        dr = _matmul(sub(qt_dx_rinv, do), r)
        return outs, ([dr] if mode == "r" else [dq, dr])
    def_jvp(qr_p, jvp)


@rules_for("svd")
def _svd_rules(svd_p, prims):
    def jvp(primals, tangents, *, full_matrices, compute_uv, hermitian):
        # JAX's rule (jax/_src/lax/linalg.py, _svd_jvp_rule).
        (a,), (t,) = primals, tangents
        outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
        *_, m, n = aval_of(a).shape
        if compute_uv and full_matrices and m != n:
            raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices "
                                      "(as in JAX); use full_matrices=False")
        u, s, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, hermitian=hermitian)
        dtype = aval_of(a).dtype
        ut, v = _H(u), _H(vt)
        s_dim = jnp.expand_dims(s, -2)
        ds_mat = _matmul(_matmul(ut, t), v)
        ds = jnp.real(jnp.diagonal(ds_mat, axis1=-2, axis2=-1))
        if not compute_uv:
            return outs, [ds]
        k = aval_of(s).shape[-1]
        s_t = _mT(s_dim)
        s_diffs = (s_dim + s_t) * (s_dim - s_t)
        eye = np.eye(k, dtype=aval_of(s).dtype)
        f = convert(1 / (s_diffs + eye) - eye, dtype)
        s_c = convert(s_dim, dtype)
        dss = s_c * ds_mat
        sds = _mT(s_c) * ds_mat
        s_zeros = convert(binary("eq", s, c(0, s)), aval_of(s).dtype)
        s_inv = 1 / (s + s_zeros) - s_zeros
        s_inv_mat = convert(jnp.expand_dims(s_inv, -1) * eye, dtype)
        du_dv_diag = mul(c(0.5, ds_mat), sub(ds_mat, _H(ds_mat))) * s_inv_mat
        du = _matmul(u, add(f * add(dss, _H(dss)), du_dv_diag))
        dv = _matmul(v, f * add(sds, _H(sds)))
        if m > n:
            dav = _matmul(t, v)
            du = add(du, jnp.divide(sub(dav, _matmul(u, _matmul(ut, dav))), s_c))
        if n > m:
            dahu = _matmul(_H(t), u)
            dv = add(dv, jnp.divide(sub(dahu, _matmul(v, _matmul(vt, dahu))), s_c))
        return outs, [du, ds, _H(dv)]
    def_jvp(svd_p, jvp)


def _pinv_tangent(a, a_dot, p):
    """JAX's pinv JVP (Golub & Pereyra 1973):
    ``-p a' p + s - s a p + t - p a t`` with ``s = p p^H a'^H``, ``t = a'^H p^H p``."""
    m, n = aval_of(a).shape[-2:]
    mm = _matmul
    if m >= n:
        s = mm(mm(p, _H(p)), _H(a_dot))
        t = mm(mm(_H(a_dot), _H(p)), p)
        terms = [neg(mm(mm(p, a_dot), p)), s, neg(mm(mm(s, a), p)), t, neg(mm(mm(p, a), t))]
    else:
        s = mm(p, mm(_H(p), _H(a_dot)))
        t = mm(_H(a_dot), mm(_H(p), p))
        terms = [neg(mm(p, mm(a_dot, p))), s, neg(mm(s, mm(a, p))), t, neg(mm(p, mm(a, t)))]
    out = terms[0]
    for term in terms[1:]:
        out = add(out, term)
    return out


@rules_for("pinv")
def _pinv_rules(pinv_p, prims):
    def jvp(primals, tangents, *, rcond, hermitian):
        (a,), (t,) = primals, tangents
        p = pinv_p.bind(a, rcond=rcond, hermitian=hermitian)
        if hermitian:
            # svd(..., hermitian=True) reads the matrix as Hermitian; the JVP must match (as in JAX).
            a, t = _symmetrized(a), _symmetrized(t)
        return [p], [_pinv_tangent(a, t, p)]
    def_jvp(pinv_p, jvp)


@rules_for("lstsq")
def _lstsq_rules(lstsq_p, prims):
    pinv_p, svd_p = prims["pinv"], prims["svd"]

    def jvp(primals, tangents, *, rcond):
        # x = pinv(a) b (the minimum-norm solution), as JAX's SVD-based lstsq differentiates.
        (a, b), (ta, tb) = primals, tangents
        outs = lstsq_p.bind(a, b, rcond=rcond)
        x, resid, rank, s = outs
        m, n = aval_of(a).shape
        # NumPy's lstsq cutoff is rcond * max(s) (rcond None: eps * max(m, n)).
        cut = float(np.finfo(aval_of(s).dtype).eps) * max(m, n) if rcond is None else rcond
        if rcond is not None and rcond < 0:
            cut = float(np.finfo(aval_of(s).dtype).eps)
        p = pinv_p.bind(a, rcond=cut, hermitian=False)
        ta, tb = instantiate_like(ta, a), instantiate_like(tb, b)
        dx = add(_matmul(_pinv_tangent(a, ta, p), b), _matmul(p, tb))
        r = sub(b, _matmul(a, x))
        dr = sub(sub(tb, _matmul(ta, x)), _matmul(a, dx))
        dres = mul(c(2, resid), jnp.sum(jnp.real(mul(jnp.conj(r), dr)), axis=0))
        ds = _svd_ds(svd_p, a, ta)
        return outs, [dx, dres, None, ds]
    def_jvp(lstsq_p, jvp)


def _svd_ds(svd_p, a, t):
    u, s, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, hermitian=False)
    return jnp.real(jnp.diagonal(_matmul(_matmul(_H(u), t), _H(vt)), axis1=-2, axis2=-1))



# --------------------------------------------------------------------------- fft
#
# Every transform is linear: the JVP is the transform of the tangent. The VJP is the transpose,
# as JAX's (jax/_src/lax/fft.py): the DFT matrix is symmetric, so fft / ifft transpose to themselves;
# rfft to the complex transform of the half spectrum padded with zeros, real part; irfft to the
# conjugate of rfft(ct) with the non-redundant bins counted twice, at irfft's scale. The zero
# padding / cropping of the input to ``lengths`` transposes to cropping / padding back.

def _fft_resize(x, axes, sizes):
    """``x`` cropped or zero-padded at the end of each axis in ``axes`` to ``sizes``."""
    for a, m in zip(axes, sizes):
        n = aval_of(x).shape[a]
        if n > m:
            x = jnp.take(x, np.arange(m), axis=a)
        elif n < m:
            pads = [(0, 0)] * aval_of(x).ndim
            pads[a] = (0, m - n)
            x = jnp.pad(x, pads)
    return x


@rules_for("fft")
def _fft_rules(fft_p, prims):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        return [fft_p.bind(x, **params)], [None if t is None else fft_p.bind(t, **params)]
    def_jvp(fft_p, jvp)

    def backward(ct, needed, ins, outs, *, kind, lengths, axes, norm):
        (x,) = ins
        real_in = dtypes.kind(aval_of(x).dtype) != "c"
        if kind in ("fft", "ifft"):
            g = fft_p.bind(ct, kind=kind, lengths=lengths, axes=axes, norm=norm)
        elif kind == "rfft":
            full = _fft_resize(ct, axes[-1:], lengths[-1:])
            g = fft_p.bind(full, kind="fft", lengths=lengths, axes=axes, norm=norm)
        else:
            spec = fft_p.bind(ct, kind="rfft", lengths=lengths, axes=axes, norm="backward")
            h = aval_of(spec).shape[axes[-1]]
            odd = lengths[-1] % 2
            weights = np.concatenate([[1.0], np.full(h - 2 + odd, 2.0), np.ones(1 - odd)])
            total = float(np.prod(lengths))
            scale = {None: 1 / total, "backward": 1 / total, "ortho": 1 / np.sqrt(total), "forward": 1.0}[norm]
            shape = [1] * aval_of(spec).ndim
            shape[axes[-1]] = h
            w = (scale * weights).reshape(shape).astype(aval_of(spec).dtype)
            g = jnp.conj(jnp.multiply(spec, w))     # (w broadcasts along the other axes)
        if real_in:
            g = jnp.real(g)
        return [_fft_resize(g, axes, [aval_of(x).shape[a] for a in axes])]
    def_simple_vjp(fft_p, backward)
