"""Loops behind ``tracejit.lax.linalg``: LAPACK's Householder reductions (``xLARFG`` reflectors,
``xGEHD2``, ``xORMQR``, ``xGEQP3``) and JAX's QDWH iteration, as ``lax.fori_loop`` / ``while_loop``s
of masked, batch-aware ``tracejit.numpy`` steps (a traced loop index selects the column)."""
from __future__ import annotations

import numpy as np

import tracejit.numpy as jnp
from tracejit.ops import control_flow_functions as control_flow
from tracejit.numpy._util import aval


def _is_complex(x):
    return np.issubdtype(aval(x).dtype, np.complexfloating)


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _H(x):
    return jnp.conj(_mT(x)) if _is_complex(x) else _mT(x)


def _abs2(x):
    return jnp.real(x) ** 2 + jnp.imag(x) ** 2 if _is_complex(x) else x * x


def swap(x, i, j, axis_mask, axis):
    """``x`` with entries ``i`` and ``j`` (``j`` traced, batched) of an axis exchanged. Masked sums,
    not a gather: a gather whose indices are batched fails under ``vmap`` of a loop body."""
    at_j = axis_mask == j
    xi = jnp.take(x, i, axis=axis)
    xj = jnp.sum(jnp.where(at_j, x, 0), axis=axis, dtype=aval(x).dtype)
    return jnp.where(axis_mask == i, jnp.expand_dims(xj, axis), jnp.where(at_j, jnp.expand_dims(xi, axis), x))


def lu_kernel(a):
    """``xGETF2``: LU with partial pivoting (on ``|Re| + |Im|`` for complex, as LAPACK's ``ixamax``);
    ``(lu, pivots, permutation)`` with int64 indices."""
    shape = aval(a).shape
    m, n = shape[-2:]
    k = min(m, n)
    rows, cols = np.arange(m), np.arange(n)

    def step(j, carry):
        lu, piv, perm = carry
        col = jnp.take(lu, j, axis=-1)
        size = jnp.abs(jnp.real(col)) + jnp.abs(jnp.imag(col)) if _is_complex(col) else jnp.abs(col)
        p = jnp.argmax(jnp.where(rows >= j, size, -1), axis=-1)[..., None]
        lu = swap(lu, j, p[..., None], rows[:, None], -2)
        perm = swap(perm, j, p, rows, -1)
        piv = jnp.where(np.arange(k) == j, p, piv)
        row, col = jnp.take(lu, j, axis=-2), jnp.take(lu, j, axis=-1)
        pivot = jnp.take(row, j, axis=-1)[..., None]
        below = rows > j
        l = jnp.where(below, col / jnp.where(pivot == 0, 1, pivot), 0)
        lu = lu - l[..., :, None] * jnp.where(cols > j, row, 0)[..., None, :]
        return jnp.where(below[:, None] & (cols == j), l[..., :, None], lu), piv, perm
    init = (a, jnp.zeros(shape[:-2] + (k,), np.int64), jnp.broadcast_to(np.arange(m), shape[:-2] + (m,)))
    return control_flow.fori_loop(0, k, step, init) if k else init


def _reflector(col, k, rows):
    """LAPACK's ``xLARFG`` on ``alpha = col[..., k]``, ``x = col[..., k+1:]`` (``k`` may be traced):
    ``(beta, tau, v)`` with ``H^H (alpha, x) = (beta, 0)``, ``H = I - tau v v^H`` and the full-length
    ``v`` (0 above ``k``, 1 at ``k``)."""
    dt = aval(col).dtype
    at_k, below = rows == k, rows > k
    alpha = jnp.sum(jnp.where(at_k, col, 0), axis=-1)
    x = jnp.where(below, col, 0)
    xnorm2 = jnp.sum(_abs2(x), axis=-1)
    alphr = jnp.real(alpha)
    alphi = jnp.imag(alpha) if _is_complex(col) else jnp.zeros_like(alphr)
    trivial = (xnorm2 == 0) & (alphi == 0)
    nrm = jnp.sqrt(jnp.where(trivial, 1, alphr * alphr + alphi * alphi + xnorm2))
    beta = jnp.where(jnp.signbit(alphr), nrm, -nrm)                 # -sign(alphr) * nrm, Fortran SIGN
    safe_beta = jnp.where(trivial, 1, beta)
    tau = jnp.where(trivial, 0, (safe_beta - alpha) / safe_beta)
    scale = 1 / jnp.where(trivial, 1, alpha - safe_beta)
    v = jnp.where(below, x * scale[..., None], jnp.where(at_k, 1, 0).astype(dt))
    return jnp.where(trivial, alpha, beta.astype(dt)), tau, v


def _reflect_left(w, v, tau):
    """``H^H w`` for ``H = I - tau v v^H``."""
    return w - (jnp.conj(tau)[..., None, None] * v[..., :, None]) * jnp.matmul(jnp.conj(v)[..., None, :], w)


def _reflect_right(w, v, tau):
    """``w H`` for ``H = I - tau v v^H``."""
    return w - jnp.matmul(w, v[..., :, None]) * (tau[..., None, None] * jnp.conj(v)[..., None, :])


def hessenberg_core(w):
    """``xGEHD2``: ``(h, reflectors, taus)``; ``h = Q^H w Q`` is upper Hessenberg (exact zeros
    below the subdiagonal), ``reflectors`` holds the vectors below the subdiagonal."""
    n = aval(w).shape[-1]
    steps = max(n - 1, 0)
    rows = np.arange(n)

    def step(k, carry):
        h, refl, taus = carry
        beta, tau, v = _reflector(jnp.take(h, k, axis=-1), k + 1, rows)
        h = _reflect_right(_reflect_left(h, v, tau), v, tau)
        in_col = rows[None, :] == k
        below = in_col & (rows[:, None] > k + 1)
        h = jnp.where(below, 0, jnp.where(in_col & (rows[:, None] == k + 1), beta[..., None, None], h))
        refl = jnp.where(below, v[..., :, None], refl)
        taus = jnp.where(np.arange(steps) == k, tau[..., None], taus)
        return h, refl, taus
    init = (w, jnp.zeros_like(w), jnp.zeros(aval(w).shape[:-2] + (steps,), aval(w).dtype))
    return control_flow.fori_loop(0, steps, step, init)


def apply_reflectors(a, taus, c, left, transpose):
    """``Q c``, ``Q^H c``, ``c Q`` or ``c Q^H`` for ``Q = H_0 ... H_{k-1}`` stored as LAPACK's
    ``geqrf`` stores it (LAPACK's ``ormqr``/``unmqr``), one reflector per loop step."""
    m, k = aval(a).shape[-2], aval(taus).shape[-1]
    vs = jnp.tril(a[..., :, :k], -1) + jnp.eye(m, k, dtype=aval(a).dtype)
    taus = jnp.conj(taus) if transpose and _is_complex(taus) else taus
    reverse = left != transpose      # Q c and c Q^H apply the last reflector first

    def step(i, c):
        j = k - 1 - i if reverse else i
        v, tau = jnp.take(vs, j, axis=-1), jnp.take(taus, j, axis=-1)[..., None, None]
        if left:
            return c - tau * v[..., :, None] * jnp.matmul(jnp.conj(v)[..., None, :], c)
        return c - tau * jnp.matmul(c, v[..., :, None]) * jnp.conj(v)[..., None, :]
    return control_flow.fori_loop(0, k, step, c)


def qr_pivoted(x, full_matrices):
    """``xGEQP3``: Householder QR with column pivoting on the largest remaining column norm."""
    shape = aval(x).shape
    m, n = shape[-2:]
    k = min(m, n)
    rows, cols = np.arange(m), np.arange(n)

    def step(j, carry):
        w, refl, taus, perm = carry
        norms = jnp.sum(_abs2(jnp.where(rows[:, None] >= j, w, 0)), axis=-2)
        p = jnp.argmax(jnp.where(cols >= j, norms, -1), axis=-1)[..., None]
        w = swap(w, j, p[..., None], cols, -1)
        perm = swap(perm, j, p, cols, -1)
        beta, tau, v = _reflector(jnp.take(w, j, axis=-1), j, rows)
        w = _reflect_left(w, v, tau)
        in_col = cols[None, :] == j
        w = jnp.where(in_col & (rows[:, None] > j), 0, jnp.where(in_col & (rows[:, None] == j),
                                                                   beta[..., None, None], w))
        refl = jnp.where(in_col & (rows[:, None] > j), v[..., :, None], refl)
        taus = jnp.where(np.arange(k) == j, tau[..., None], taus)
        return w, refl, taus, perm
    init = (x, jnp.zeros_like(x), jnp.zeros(shape[:-2] + (k,), aval(x).dtype),
            jnp.broadcast_to(np.arange(n, dtype=np.int32), shape[:-2] + (n,)))
    w, refl, taus, perm = control_flow.fori_loop(0, k, step, init) if k else init
    r = jnp.triu(w)
    factors = (refl + r)[..., :, :k]
    if full_matrices:
        factors = jnp.concatenate([factors, jnp.zeros(shape[:-2] + (m, m - k), aval(x).dtype)], axis=-1)
    else:
        r = r[..., :k, :]
    cols_q = aval(factors).shape[-1]
    eye = jnp.broadcast_to(jnp.eye(m, cols_q, dtype=aval(x).dtype), shape[:-2] + (m, cols_q))
    return apply_reflectors(factors, taus, eye, True, False), r, perm


# --------------------------------------------------------------------------- QDWH

def mask(x, dims, alternative=0):
    """``x`` inside its leading ``dims`` (the true shape of a padded matrix), ``alternative`` outside."""
    shape = aval(x).shape
    keep = None
    for axis, dim in enumerate(dims):
        if dim is not None:
            inside = (np.arange(shape[axis]) < dim).reshape([-1 if i == axis else 1 for i in range(len(shape))])
            keep = inside if keep is None else keep & inside
    return x if keep is None else jnp.where(keep, x, alternative)


def _qdwh_qr_step(u, m, n, params):
    from tracejit.lax.linalg import qr
    a_minus_e_by_sqrt_c, sqrt_c, e = params
    big_m, big_n = aval(u).shape
    dt = aval(u).dtype
    y = jnp.concatenate([sqrt_c * u[:m], jnp.eye(big_n, dtype=dt), jnp.zeros((big_m - m, big_n), dt)], axis=0)
    q, _ = qr(y, full_matrices=False)
    q1 = mask(q[:big_m, :big_n], (m, n))
    q2 = _H(mask(q[m:m + big_n, :], (n, n)))
    return e * u + a_minus_e_by_sqrt_c * jnp.matmul(q1, q2)


def _qdwh_cholesky_step(u, m, n, params):
    from tracejit.lax.linalg import cholesky, triangular_solve
    a_minus_e, c, e = params
    big_n = aval(u).shape[1]
    eye = jnp.eye(big_n, dtype=aval(u).dtype)
    x = mask(c * jnp.matmul(_H(u), u) + eye, (n, n), eye)
    y = cholesky(x, symmetrize_input=False)
    z = jnp.conj(triangular_solve(y, _mT(u), left_side=True, lower=True, conjugate_a=True))
    z = _H(triangular_solve(y, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True))
    return e * u + a_minus_e * z


def qdwh_iterate(x, m, n, max_iterations, eps):
    """JAX's ``_qdwh``: QR-based steps while the weights are large, Cholesky-based ones after,
    Halley steps until convergence, a Newton-Schulz refinement; ``(u, h, num_iters, is_converged)``."""
    dt = aval(x).dtype
    eps = float(np.finfo(dt).eps) if eps is None else float(eps)
    one_norm = jnp.linalg.norm(x, ord=1)
    inf_norm = jnp.linalg.norm(x, ord=np.inf)
    alpha_inverse = jnp.where(one_norm == 0, 1, 1 / jnp.sqrt(one_norm) / jnp.sqrt(inf_norm))
    u = x * alpha_inverse.astype(dt)
    tol_l = 10.0 * eps / 2.0
    tol_norm = float(np.cbrt(tol_l))

    qr_coefs, chol_coefs = [], []
    l, k = eps, 0
    while l + tol_l < 1 and k < max_iterations:      # the weights (a, b, c) of each step, known ahead
        k += 1
        l2 = l * l
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        if c > 100:
            qr_coefs.append(((a - b / c) / c ** 0.5, c ** 0.5, b / c))
        else:
            chol_coefs.append((a - b / c, c, b / c))

    def run(u, coefs, step, test):
        if not coefs:
            return u, jnp.asarray(True)
        table = jnp.asarray(np.array(coefs)).astype(dt)

        def body(i, carry):
            u_prev = carry[0]
            row = jnp.take(table, i, axis=0)
            u = step(u_prev, m, n, (row[0], row[1], row[2]))
            return u, (jnp.linalg.norm(u - u_prev) > tol_norm) if test else jnp.asarray(True)
        return control_flow.fori_loop(0, len(coefs), body, (u, jnp.asarray(True)))

    u, _ = run(u, qr_coefs, _qdwh_qr_step, False)
    u, not_converged = run(u, chol_coefs, _qdwh_cholesky_step, True)

    def halley(state):       # l has converged; Halley's method (a, b, c) = (3, 1, 3) until u does
        i, u_prev, _ = state
        u = _qdwh_cholesky_step(u_prev, m, n, (3 - 1 / 3, 3.0, 1 / 3))
        return i + 1, u, jnp.linalg.norm(u - u_prev) > tol_norm
    num_iters, u, not_converged = control_flow.while_loop(
        lambda s: jnp.logical_and(s[2], s[0] < max_iterations), halley,
        (jnp.asarray(len(qr_coefs) + len(chol_coefs), np.int64), u, not_converged))
    u = 1.5 * u - 0.5 * jnp.matmul(u, jnp.matmul(_H(u), u))      # Newton-Schulz refinement
    h = jnp.matmul(_H(u), x)
    return u, (h + _H(h)) / 2, num_iters, jnp.logical_not(not_converged)
