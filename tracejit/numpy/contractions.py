"""Products and contractions: dot, matmul, outer, inner, vdot, tensordot,
einsum, kron — all lowered to ``dot_general``."""
from __future__ import annotations

import string

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.dot import dot_general_p
from tracejit.ops.operands import widen_to_preferred
from tracejit.numpy._util import aval, broadcast_shapes, canonicalize_axis, eager, promote, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.shape import broadcast_to, reshape, transpose


def _operands(a, b):
    a, b = promote(to_operand(a), to_operand(b))
    return [np.asarray(x) if dtypes.is_python_scalar(x) or isinstance(x, np.generic) else x for x in (a, b)]


def dot_general(lhs, rhs, dimension_numbers):
    """``lax.dot_general``: contract ``lhs`` and ``rhs`` per ``dimension_numbers``."""
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn)


def matmul(a, b):
    """Matrix product with NumPy's broadcasting of batch dimensions (``@``)."""
    if eager(a, b):
        return np.matmul(a, b)
    a, b = _operands(a, b)
    sa, sb = aval(a).shape, aval(b).shape
    if not sa or not sb:
        raise ValueError("matmul: input operand does not have enough dimensions (scalars are not allowed; use *)")
    if len(sb) <= 2 and len(sa) >= 2:
        # Batched activations times a weight matrix: contract directly instead of
        # broadcasting the weights over the batch (dot_general keeps lhs free dims in order).
        if sa[-1] != sb[0]:
            raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                             f"(size {sb[0]} is different from {sa[-1]}); shapes {sa} @ {sb}")
        return dot_general(a, b, (((len(sa) - 1,), (0,)), ((), ())))
    a2 = reshape(a, (1,) + sa) if len(sa) == 1 else a
    b2 = reshape(b, sb + (1,)) if len(sb) == 1 else b
    sa2, sb2 = aval(a2).shape, aval(b2).shape
    if sa2[-1] != sb2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {sb2[-2]} is different from {sa2[-1]}); shapes {sa} @ {sb}")
    batch = broadcast_shapes(sa2[:-2], sb2[:-2])
    nb = len(batch)
    # Only broadcast batch dims when the operand lacks them; equal batch shapes need no copy.
    if sa2[:-2] != batch:
        a2 = broadcast_to(a2, batch + sa2[-2:])
    if sb2[:-2] != batch:
        b2 = broadcast_to(b2, batch + sb2[-2:])
    out = dot_general(a2, b2, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))
    shape = aval(out).shape
    if len(sa) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(sb) == 1:
        shape = shape[:-1]
    return reshape(out, shape) if shape != aval(out).shape else out


def dot(a, b, out=None):
    """``numpy.dot``: inner product for 1-D, matmul for 2-D, sum-product over
    the last axis of ``a`` and second-to-last of ``b`` in general."""
    if eager(a, b):
        return np.dot(a, b)
    # np.dot is no ufunc: Python scalars are converted strongly (f32 . 2.0 -> float64).
    a, b = (np.asarray(v) if dtypes.is_python_scalar(v) else v for v in (a, b))
    a, b = _operands(a, b)
    sa, sb = aval(a).shape, aval(b).shape
    if not sa or not sb:
        return U.multiply(a, b)
    cb = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[cb]:
        raise ValueError(f"shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) != {sb[cb]} (dim {cb})")
    return dot_general(a, b, (((len(sa) - 1,), (cb,)), ((), ())))


def vdot(a, b):
    """Dot product of flattened inputs, conjugating the first."""
    if eager(a, b):
        return np.vdot(a, b)
    a, b = _operands(a, b)
    if dtypes.is_complex(aval(a).dtype):  # conjugate of bool would resolve to int8
        a = U.conjugate(a)
    return dot(reshape(a, (-1,)), reshape(b, (-1,)))


def inner(a, b):
    """Sum-product over the last axes."""
    if eager(a, b):
        return np.inner(a, b)
    a, b = _operands(a, b)
    sa, sb = aval(a).shape, aval(b).shape
    if not sa or not sb:
        return U.multiply(a, b)
    return dot_general(a, b, (((len(sa) - 1,), (len(sb) - 1,)), ((), ())))


def outer(a, b, out=None):
    """Outer product of flattened inputs."""
    if eager(a, b):
        return np.outer(a, b)
    a, b = _operands(a, b)
    return U.multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def tensordot(a, b, axes=2):
    """Sum-product over the given axes (``numpy.tensordot``)."""
    if eager(a, b):
        return np.tensordot(a, b, axes)
    a, b = _operands(a, b)
    na, nb = aval(a).ndim, aval(b).ndim
    if isinstance(axes, int):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    ax_a = tuple(canonicalize_axis(x, na) for x in ax_a)
    ax_b = tuple(canonicalize_axis(x, nb) for x in ax_b)
    for i, j in zip(ax_a, ax_b):
        if aval(a).shape[i] != aval(b).shape[j]:
            raise ValueError(f"tensordot: shape-mismatch for sum ({aval(a).shape} axis {i} vs {aval(b).shape} axis {j})")
    return dot_general(a, b, ((ax_a, ax_b), ((), ())))


def kron(a, b):
    """Kronecker product."""
    if eager(a, b):
        return np.kron(a, b)
    a, b = _operands(a, b)
    sa, sb = aval(a).shape, aval(b).shape
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a, b = reshape(a, sa), reshape(b, sb)
    a_exp = reshape(a, tuple(x for s in sa for x in (s, 1)))
    b_exp = reshape(b, tuple(x for s in sb for x in (1, s)))
    return reshape(U.multiply(a_exp, b_exp), tuple(x * y for x, y in zip(sa, sb)))


# --------------------------------------------------------------------------- einsum

def _parse_einsum(subscripts: str, shapes):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(shapes)} operands")
    if "." in subscripts:
        # Expand ellipses into fresh letters, aligned from the right as NumPy does.
        used = set(c for c in subscripts if c.isalpha())
        spare = [c for c in string.ascii_letters if c not in used]
        n_ell = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t), default=0)
        ell = "".join(spare[:n_ell])
        terms = [t.replace("...", ell[n_ell - (len(s) - (len(t) - 3)):]) if "..." in t else t
                 for t, s in zip(terms, shapes)]
        if out is not None:
            out = out.replace("...", ell)
        else:
            out = ell + "".join(sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1 and c not in ell))
    if out is None:
        counts = {}
        for c in "".join(terms):
            counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    for t, s in zip(terms, shapes):
        if len(t) != len(s):
            raise ValueError(f"einsum: operand subscript {t!r} does not match shape {s}")
    return terms, out


def _einsum_single(x, term, keep):
    """Take the diagonal of each letter repeated in ``term`` (``'ii'``), then sum out letters not
    in ``keep``."""
    from tracejit.numpy.extra import diagonal
    from tracejit.numpy.reductions import sum as sum_
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        if aval(x).shape[i] != aval(x).shape[j]:
            raise ValueError(f"einsum: dimensions in operand for collapsing index '{c}' don't match "
                             f"({aval(x).shape[i]} != {aval(x).shape[j]})")
        x = diagonal(x, offset=0, axis1=i, axis2=j)       # the diagonal becomes the last axis
        term = "".join(t for k, t in enumerate(term) if k not in (i, j)) + c
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if axes:
        x = sum_(x, axis=axes, dtype=aval(x).dtype)  # einsum keeps the dtype (no int32 -> int64 widening)
        term = "".join(c for c in term if c in keep)
    return x, term


def einsum(subscripts, *operands, optimize=None, precision=None, preferred_element_type=None, out=None):
    """Einstein summation over operands, pairwise left to right via ``dot_general``."""
    if eager(*operands):
        return np.einsum(subscripts, *operands, optimize=optimize if optimize is not None else False)
    ops = promote(*[to_operand(o) for o in operands])
    ops = [np.asarray(o) if not hasattr(o, "shape") else o for o in ops]
    ops = list(widen_to_preferred(preferred_element_type, *ops))
    terms, out_term = _parse_einsum(subscripts, [aval(o).shape for o in ops])
    x, xt = ops[0], terms[0]
    rest = list(zip(ops[1:], terms[1:]))
    needed_later = lambda i: set(out_term).union(*[set(t) for _, t in rest[i + 1:]])  # noqa: E731
    x, xt = _einsum_single(x, xt, set(out_term).union(*[set(t) for _, t in rest]))
    for i, (y, yt) in enumerate(rest):
        keep = needed_later(i)
        y, yt = _einsum_single(y, yt, keep | set(xt))
        contract = [c for c in xt if c in yt and c not in keep]
        batch = [c for c in xt if c in yt and c in keep]
        dn = ((tuple(xt.index(c) for c in contract), tuple(yt.index(c) for c in contract)),
              (tuple(xt.index(c) for c in batch), tuple(yt.index(c) for c in batch)))
        x = dot_general(x, y, dn)
        xt = "".join(batch) + "".join(c for c in xt if c not in contract and c not in batch) + \
             "".join(c for c in yt if c not in contract and c not in batch)
        x, xt = _einsum_single(x, xt, keep)
    x, xt = _einsum_single(x, xt, set(out_term))
    if xt != out_term:
        x = transpose(x, [xt.index(c) for c in out_term])
    if preferred_element_type is not None:
        from tracejit.numpy._util import convert
        x = convert(x, preferred_element_type)
    return x
