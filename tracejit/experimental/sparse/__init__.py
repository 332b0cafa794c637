"""``tracejit.experimental.sparse``: JAX's BCOO sparse arrays (``jax.experimental.sparse``), for the
forms sparse matrix code uses -- building from dense or from (data, indices), ``@`` with dense
vectors and matrices (and BCOO @ BCOO), transposes, sums, scaling, densifying -- under ``jit`` and
``grad`` alike (see ``bcoo.py``). Batch and dense BCOO dimensions, BCSR/CSR/COO and ``sparsify``
are not implemented.

Examples
--------
>>> import numpy as np, tracejit
>>> from tracejit.experimental import sparse
>>> A = sparse.BCOO.fromdense(np.array([[2., 0.], [0., 3.]]))
>>> tracejit.jit(lambda A, x: A @ x)(A, np.ones(2))
Array([2., 3.])
"""
from tracejit.experimental.sparse.bcoo import (BCOO, bcoo_dot_general, bcoo_fromdense, bcoo_multiply_dense,
                                               bcoo_reduce_sum, bcoo_sum_duplicates, bcoo_todense, bcoo_transpose,
                                               empty, eye, todense)

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_fromdense", "bcoo_multiply_dense", "bcoo_reduce_sum",
           "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "empty", "eye", "todense"]
