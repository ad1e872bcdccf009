"""``mt.linalg``: numpy.linalg's names on tensors (Mars's algorithms).

Products (``matmul``, ``dot``, ... in :mod:`.products`) are exported at the top level as
``mt.<name>``; Mars's ``mt.linalg`` also exports ``matmul``, ``dot``, ``inner``
(``innerproduct``), ``vdot`` and ``tensordot``, and so does this package.
"""

from .decompositions import cholesky, det, inv, lu, qr, randomized_svd, slogdet, solve, solve_triangular, svd
from .norm import norm
from .products import dot, einsum, inner, matmul, outer, tensordot, vdot  # noqa: F401 (Tensor.dot, @)

innerproduct = inner

LinAlgError = __import__("numpy").linalg.LinAlgError

__all__ = [
    "norm", "qr", "svd", "randomized_svd", "cholesky", "lu", "solve", "solve_triangular", "inv", "det", "slogdet",
    "matmul", "dot", "inner", "innerproduct", "vdot", "tensordot", "LinAlgError",
]
