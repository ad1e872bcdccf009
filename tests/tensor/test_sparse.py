"""Sparse tensors (``mars_dask/tensor/sparse.py``): CSR chunks, sparse in / sparse out where
scipy keeps zeros as zeros, compared with scipy.sparse and numpy on the dense values."""

import importlib
import os

import numpy as np
import pytest
import scipy.sparse as sps

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tensor import sparse

pytestmark = pytest.mark.timeout(120)

rechunk_mod = importlib.import_module("mars_dask.tensor.rechunk")

# one chunk, uneven chunks, 1-element chunks
CHUNKS = [None, (3, 4), 1]
SHAPE = (5, 4)


def _matrix(seed=0, shape=SHAPE, density=0.35, dtype=np.float64):
    rng = np.random.default_rng(seed)
    dense = rng.random(shape)
    dense[rng.random(shape) > density] = 0
    return sps.csr_matrix(dense.astype(dtype))


def _fetch(t):
    return t.execute().fetch()


class Checks:
    """Collects ``(tensor, expected, sparse?)`` cases and executes them in one graph (fast)."""

    def __init__(self):
        self.cases = []

    def sparse(self, t, expected):
        expected = sps.csr_matrix(expected)
        assert t.issparse(), "expected a sparse tensor"
        assert t.shape == expected.shape and t.dtype == expected.dtype, (t.shape, t.dtype, expected.dtype)
        self.cases.append((t, expected, True))

    def dense(self, t, expected):
        expected = np.asarray(expected)
        assert not t.issparse(), "expected a dense tensor"
        assert t.dtype == expected.dtype, (t.dtype, expected.dtype)
        self.cases.append((t, expected, False))

    def run(self):
        mars_dask.execute(*[t for t, _, _ in self.cases])
        for t, expected, is_sparse in self.cases:
            got = t.fetch()
            if is_sparse:
                assert isinstance(got, sps.csr_matrix), type(got)
                assert got.shape == expected.shape and got.dtype == expected.dtype
                np.testing.assert_allclose(got.toarray(), expected.toarray(), rtol=1e-12)
            else:
                assert isinstance(got, (np.ndarray, np.generic)) and not sps.issparse(got), type(got)
                assert np.shape(got) == expected.shape and np.asarray(got).dtype == expected.dtype
                np.testing.assert_allclose(got, expected, rtol=1e-12)
        self.cases = []


@pytest.fixture
def check(client):
    c = Checks()
    yield c
    if c.cases:
        c.run()


# ---- creation, conversion, fetch ------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_tensor_from_scipy_and_back(check, chunk_size):
    m = _matrix(dtype=np.float32)
    t = mt.tensor(m, chunk_size=chunk_size)
    assert t.issparse() and t.dtype == np.float32 and t.shape == SHAPE
    check.sparse(t, m)
    check.dense(t.todense(), m.toarray())
    check.dense(mt.tensor(sps.coo_matrix(m), dtype="f8", chunk_size=chunk_size).todense(), m.toarray().astype("f8"))
    # a tensor from a dense array, made sparse
    d = m.toarray()
    check.sparse(mt.tensor(d, chunk_size=chunk_size, sparse=True), m)
    check.sparse(mt.tensor(d, chunk_size=chunk_size).tosparse(), m)
    assert t.tosparse() is t and mt.tensor(d).todense().issparse() is False


def test_tosparse_missing_and_todense_fill_value(check):
    d = np.array([[1.0, np.nan, 0.0], [np.nan, 2.0, 3.0]])
    # Tensor.tosparse(missing=) / todense(fill_value=) delegate to these (Mars's signatures)
    t = sparse.tosparse(mt.tensor(d, chunk_size=(1, 2)), missing=np.nan)
    got = _fetch(t)
    assert got.nnz == 4  # the zero is stored, NaNs are not
    dense = _fetch(sparse.todense(t, fill_value=-1.0))
    np.testing.assert_array_equal(dense, np.where(np.isnan(d), -1.0, d))
    t2 = sparse.tosparse(mt.tensor(np.array([[5, 1], [5, 0]]), chunk_size=1), missing=[5, 0])
    assert _fetch(t2).nnz == 1
    with pytest.raises(NotImplementedError, match="2-d"):
        mt.tensor(np.arange(3.0)).tosparse()


@pytest.mark.parametrize("chunk_size", [None, (2, 3), 1])
def test_creation_functions_sparse(check, chunk_size):
    check.sparse(mt.zeros((4, 5), chunk_size=chunk_size, sparse=True), sps.csr_matrix((4, 5)))
    check.sparse(mt.ones((4, 5), dtype="i4", chunk_size=chunk_size, sparse=True), np.ones((4, 5), "i4"))
    check.sparse(mt.full((4, 5), 2.5, chunk_size=chunk_size, sparse=True), np.full((4, 5), 2.5))
    for k in (0, 2, -1):
        check.sparse(mt.eye(4, 5, k=k, dtype="i8", chunk_size=chunk_size, sparse=True), sps.eye(4, 5, k=k, dtype="i8"))
    check.sparse(mt.identity(4, chunk_size=chunk_size, sparse=True), sps.identity(4))
    check.sparse(mt.empty((3, 2), chunk_size=chunk_size, sparse=True), sps.csr_matrix((3, 2)))
    check.sparse(mt.diag(np.arange(1.0, 4.0), sparse=True, chunk_size=2), np.diag(np.arange(1.0, 4.0)))
    t = mt.tensor(_matrix(), chunk_size=chunk_size)
    check.sparse(mt.zeros_like(t), sps.csr_matrix(SHAPE))
    with pytest.raises(NotImplementedError, match="2-d"):
        mt.ones(3, sparse=True)


def test_empty_and_all_zero(check):
    check.sparse(mt.tensor(sps.csr_matrix((0, 3)), chunk_size=2), sps.csr_matrix((0, 3)))
    check.sparse(mt.tensor(sps.csr_matrix((3, 4)), chunk_size=2) * 3, sps.csr_matrix((3, 4)))


# ---- element-wise -----------------------------------------------------------------------------


UNARY = [
    ("sin", np.sin, True), ("abs", np.abs, True), ("negative", np.negative, True), ("sqrt", np.sqrt, True),
    ("cos", np.cos, False), ("exp", np.exp, False), ("isnan", np.isnan, True),
]


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_unary(check, chunk_size):
    m = _matrix()
    t = mt.tensor(m, chunk_size=chunk_size)
    d = m.toarray()
    for name, f, stays in UNARY:
        res = getattr(mt, name)(t)
        (check.sparse if stays else check.dense)(res, f(d))
    check.sparse(t.astype("i4"), m.astype("i4"))
    check.sparse(t.astype(bool), m.astype(bool))


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_with_scalars(check, chunk_size):
    m = _matrix()
    t = mt.tensor(m, chunk_size=chunk_size)
    d = m.toarray()
    check.sparse(t * 2, m * 2)
    check.sparse(3 * t, m * 3)
    check.sparse(t / 2, m / 2)
    check.sparse(t ** 2, m.power(2))
    check.sparse(t > 0.5, d > 0.5)
    check.sparse(mt.maximum(t, 0), d)
    check.dense(t + 1, d + 1)  # zeros become ones
    check.dense(t ** 0, d ** 0)
    check.dense(t == 0, d == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        check.dense(t / 0, d / 0)
    check.dense(1 - t, 1 - d)


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_binary_sparse_sparse_and_dense(check, chunk_size):
    a, b = _matrix(1), _matrix(2)
    ta, tb = mt.tensor(a, chunk_size=chunk_size), mt.tensor(b, chunk_size=chunk_size)
    da, db = a.toarray(), b.toarray()
    check.sparse(ta + tb, a + b)
    check.sparse(ta - tb, a - b)
    check.sparse(ta * tb, a.multiply(b))
    check.sparse(mt.maximum(ta, tb), a.maximum(b))
    check.sparse(ta - ta, sps.csr_matrix(SHAPE))
    with np.errstate(divide="ignore", invalid="ignore"):
        check.dense(ta / tb, da / db)  # 0 / 0 is NaN
    # sparse with dense: dense, except multiply (zero times anything, as scipy's multiply)
    dd = mt.tensor(db, chunk_size=chunk_size)
    check.dense(ta + dd, da + db)
    check.dense(dd - ta, db - da)
    check.sparse(ta * dd, a.multiply(db))
    check.sparse(dd * ta, a.multiply(db))
    row = np.arange(1.0, SHAPE[1] + 1)
    check.sparse(ta * row, a.multiply(row))  # a broadcast dense operand
    check.dense(ta + row, da + row)


def test_binary_different_chunkings(check):
    a, b = _matrix(1), _matrix(2)
    ta, tb = mt.tensor(a, chunk_size=(3, 2)), mt.tensor(b, chunk_size=(2, 4))
    check.sparse(ta + tb, a + b)
    check.dense(ta + mt.tensor(b.toarray(), chunk_size=4), a.toarray() + b.toarray())


def test_output_is_sparse_rule():
    s = mt.tensor(_matrix(), chunk_size=3)
    d = mt.tensor(np.ones(SHAPE))
    f = sparse.output_is_sparse
    assert f(np.sin, [s]) and not f(np.cos, [s])
    assert f(np.add, [s, s]) and not f(np.add, [s, 1]) and not f(np.add, [s, d])
    assert f(np.multiply, [s, d]) and f(np.multiply, [d, s]) and f(np.multiply, [s, 2.0])
    assert not f(np.divide, [s, s]) and f(np.divide, [s, 2]) and not f(np.divide, [s, 0])
    assert not f(np.sin, [d]) and not f(np.add, [1, 2])
    assert not f(np.add, [s, mt.tensor(_matrix(shape=(1, 4)))])  # broadcast sparse: dense


# ---- reductions --------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(check, chunk_size, axis):
    d = _matrix(3).toarray()
    d[0, 0] = -2.0  # a negative value for min
    m = sps.csr_matrix(d)
    t = mt.tensor(m, chunk_size=chunk_size)
    for name in ("sum", "max", "min", "mean", "prod", "any", "all", "var", "argmax", "count_nonzero"):
        res = getattr(mt, name)(t, axis=axis)
        exp = getattr(np, name)(d, axis=axis)
        check.dense(res, exp)
        if name in ("sum", "max", "min", "mean") and axis is not None:
            # the values scipy gives (as an np.matrix)
            sp = getattr(m, name)(axis=axis)  # scipy's values (an np.matrix or a sparse row)
            np.testing.assert_allclose(exp, (sp.toarray() if sps.issparse(sp) else np.asarray(sp)).ravel())
    ints = mt.tensor(m.astype("i2") * 3, chunk_size=chunk_size)
    check.dense(ints.sum(axis=axis), (d.astype("i2") * 3).sum(axis=axis))
    check.dense(mt.tensor(m > 0.5, chunk_size=chunk_size).all(axis=axis), (d > 0.5).all(axis=axis))
    check.dense(t.cumsum(axis=axis), np.cumsum(d, axis=axis))


def test_reduction_keepdims_and_dtype(check):
    m = _matrix(4)
    t = mt.tensor(m, chunk_size=(2, 3))
    d = m.toarray()
    check.dense(t.sum(axis=1, keepdims=True), d.sum(axis=1, keepdims=True))
    check.dense(t.sum(dtype="f4"), d.sum(dtype="f4"))
    check.dense(t.max(axis=0, keepdims=True), d.max(axis=0, keepdims=True))
    with pytest.raises(ValueError):
        mt.tensor(sps.csr_matrix((0, 3))).max()


# ---- products -------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunks", [(None, None), ((3, 2), (2, 4)), (1, 2)])
def test_dot_matmul_tensordot(check, chunks):
    a, b = _matrix(5, (4, 5)), _matrix(6, (5, 3))
    ta, tb = mt.tensor(a, chunk_size=chunks[0]), mt.tensor(b, chunk_size=chunks[1])
    check.sparse(mt.dot(ta, tb), a @ b)
    check.sparse(ta @ tb, a @ b)
    check.sparse(mt.matmul(ta, tb), a @ b)
    check.sparse(mt.tensordot(ta, tb, axes=1), a @ b)
    check.sparse(mt.tensordot(ta, ta, axes=([0], [0])), a.T @ a)
    check.sparse(mt.tensordot(ta, ta, axes=([1], [1])), a @ a.T)
    check.dense(mt.tensordot(ta, ta, axes=2), np.tensordot(a.toarray(), a.toarray(), axes=2))
    db = b.toarray()
    dense_b = mt.tensor(db, chunk_size=chunks[1])
    check.dense(mt.dot(ta, dense_b), a @ db)
    check.dense(mt.tensor(db.T, chunk_size=chunks[1]) @ mt.tensor(a.T, chunk_size=chunks[0]), db.T @ a.T.toarray())
    check.dense(mt.dot(ta, np.arange(5.0)), a @ np.arange(5.0))
    check.dense(mt.dot(ta, tb, sparse=False), (a @ b).toarray())
    check.sparse(mt.dot(ta, dense_b, sparse=True), a @ db)
    check.dense(mt.einsum("ij,jk->ik", ta, tb), (a @ b).toarray())


# ---- transpose, slicing, rechunk ---------------------------------------------------------------------


@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_transpose_slicing(check, chunk_size):
    m = _matrix(7)
    t = mt.tensor(m, chunk_size=chunk_size)
    d = m.toarray()
    check.sparse(t.T, m.T)
    check.sparse(t.transpose(1, 0), m.T)
    check.sparse(mt.transpose(t), m.T)
    for item in [(slice(1, 5),), (slice(None), slice(1, 4)), (slice(1, 6, 2), slice(None, None, -1)),
                 (slice(5, 0, -2), slice(0, 5, 3)), (slice(3, 3),), (Ellipsis, slice(2, None))]:
        check.sparse(t[item], m.toarray()[item])
    check.dense(t[2], d[2])
    check.dense(t[1:4, 3], d[1:4, 3])
    check.dense(t[[0, 2]], d[[0, 2]])
    check.sparse(t.rechunk(2), m)
    with pytest.raises(NotImplementedError, match="sparse"):
        sparse.setitem(t, 0, 1)


def test_operations_not_sparse_aware_give_dense_results(check):
    """Operations written for ndarrays get dense inputs (TensorOperand's guard): numpy's
    values, dense."""
    m = _matrix(9)
    d = m.toarray()
    for chunk_size in CHUNKS:
        t = mt.tensor(m, chunk_size=chunk_size)
        check.dense(t.reshape(-1), d.reshape(-1))
        check.dense(mt.concatenate([t, t], axis=1), np.concatenate([d, d], axis=1))
        check.dense(mt.sort(t, axis=0), np.sort(d, axis=0))
        check.dense(mt.diag(t), np.diag(d))
        check.dense(mt.where(t > 0.5, t, -1.0), np.where(d > 0.5, d, -1.0))


# ---- through the store (and the disk tier) --------------------------------------------------------------


def test_chunks_through_the_store_and_spilled(check, tmp_path):
    """A sparse tensor's chunks are held by the workers' MarsStore (the fetch above reads
    them back); here a chunk value goes through a store whose shared memory holds nothing,
    so it is written to the disk tier and read back: equal, and usable by scipy."""
    from mars_dask.spill import MarsStore

    m = _matrix(8, (40, 30), dtype=np.float32)
    (tmp_path / "shm").mkdir()
    st = MarsStore(directory=str(tmp_path / "shm"), spill_directory=str(tmp_path / "spill"), name="w0",
                   cluster="c", memory_limit=2**30, shm_limit=0)
    try:
        st["k"] = m
        assert st.tier_of("k") == "disk"
        got = st["k"]
        assert isinstance(got, sps.csr_matrix) and got.dtype == m.dtype
        assert (got != m).nnz == 0
        # not pickled: Dask's scipy serializer (raw data/indices/indptr frames)
        assert st._entries["k"].header["kind"] == "dask"
        assert os.path.getsize(st.path_of("k")) < 2 * (m.data.nbytes + m.indices.nbytes + m.indptr.nbytes) + 4096
        np.testing.assert_allclose((got @ got.T).toarray(), (m @ m.T).toarray(), rtol=1e-6)
        np.testing.assert_allclose(sparse.reduce_partial(got, "sum", (0,), {"dtype": None}),
                                   np.asarray(m.sum(axis=0)), rtol=1e-6)
    finally:
        st.close()
    # on the cluster: the chunks of a computed sparse tensor come back from the stores equal
    t = mt.tensor(m, chunk_size=(16, 16)) * 2
    assert (_fetch(t) != m * 2).nnz == 0



def test_sparse_product_sums_each_output_block_in_one_task():
    """With a sparse input, an output block's partial products and their sum are one task
    (dask.array's graph for sparse): 4 tasks for a 2x2 @ 2x1 grid where dense inputs take
    4 partials + 2 sums; the values still equal scipy's."""
    from mars_dask.tiling.emit import postorder

    a, d = _matrix(11, (6, 8), density=0.4), np.random.default_rng(11).random((8, 3))
    for left, n_tasks in [(mt.tensor(a, chunk_size=(3, 4)), 2), (mt.tensor(a.toarray(), chunk_size=(3, 4)), 4 + 2)]:
        y = mt.dot(left, mt.tensor(d, chunk_size=(4, 3)))
        y._ensure_tiled()
        order, _ = postorder(y.chunks)
        assert len([c for c in order if c.key[0].startswith(y.key)]) == n_tasks
        np.testing.assert_allclose(_fetch(y), a @ d, rtol=1e-12)
    s = mt.tensor(a, chunk_size=(3, 4))
    got = _fetch(s @ s.T)
    assert isinstance(got, sps.csr_matrix)
    np.testing.assert_allclose(got.toarray(), (a @ a.T).toarray(), rtol=1e-12)
