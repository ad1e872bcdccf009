"""``mt.linalg``: numpy.linalg's names on tensors (Mars's algorithms).

Products (``matmul``, ``dot``, ... in :mod:`.products`) are exported at the top level as
``mt.<name>``; ``matmul``/``dot`` are importable from here too because ``Tensor.__matmul__``
and ``Tensor.dot`` use them.
"""

from .decompositions import cholesky, det, inv, lu, qr, slogdet, solve, svd
from .norm import norm
from .products import dot, einsum, inner, matmul, outer, tensordot, vdot  # noqa: F401 (Tensor.dot, @)

LinAlgError = __import__("numpy").linalg.LinAlgError

__all__ = [
    "norm", "qr", "svd", "cholesky", "lu", "solve", "inv", "det", "slogdet",
    "matmul", "tensordot", "LinAlgError",
]
