"""Grids, index tricks, block, diagonals, copies and memory order (tensor/construct.py)
against numpy."""

import numpy as np
import pytest

import mars_dask.tensor as mt
from mars_dask import execute
from tests.helpers import assert_tensor

CHUNKS = [None, 1, 3]  # one chunk, 1-element chunks, uneven chunks


def _unknown_1d(a, chunk=3):
    """A 1-d tensor with ``a``'s values but a length unknown until executed."""
    x = mt.tensor(np.concatenate([a, a]), chunk_size=chunk)
    mask = np.r_[np.ones(len(a), bool), np.zeros(len(a), bool)]
    return x[mt.tensor(mask, chunk_size=chunk)]


# ---- meshgrid, indices, mgrid, ogrid -------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(client, chunk, indexing, sparse):
    x, y, z = np.arange(4.0), np.array([1, 5, 7], dtype=np.int32), np.array([[2, 3]])
    got = mt.meshgrid(mt.tensor(x, chunk_size=chunk), y, z, indexing=indexing, sparse=sparse)
    exp = np.meshgrid(x, y, z, indexing=indexing, sparse=sparse)
    assert isinstance(got, tuple) and len(got) == 3
    for g, e in zip(got, exp):
        assert_tensor(g, e)
    g2 = mt.meshgrid(mt.tensor(x, chunk_size=chunk), y, indexing=indexing, sparse=sparse)
    for g, e in zip(g2, np.meshgrid(x, y, indexing=indexing, sparse=sparse)):
        assert_tensor(g, e)


def test_meshgrid_edge_cases(client):
    assert mt.meshgrid() == ()
    (g,) = mt.meshgrid(np.arange(3))
    assert_tensor(g, np.arange(3))
    u = _unknown_1d(np.arange(5.0))
    for g, e in zip(mt.meshgrid(u, np.arange(2)), np.meshgrid(np.arange(5.0), np.arange(2))):
        assert_tensor(g, e)
    with pytest.raises(ValueError, match="indexing"):
        mt.meshgrid([1], indexing="yx")
    with pytest.raises(TypeError):
        mt.meshgrid([1], foo=1)


def test_meshgrid_chunked_by_inputs_within_limit(client):
    xs, ys = mt.meshgrid(mt.arange(6, chunk_size=2), mt.arange(4, chunk_size=3))
    xs.execute()
    assert xs.nsplits == ((3, 1), (2, 2, 2))


@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_indices(client, chunk):
    assert_tensor(mt.indices((3, 4), chunk_size=chunk), np.indices((3, 4)))
    assert_tensor(mt.indices((2, 3, 1), dtype=np.float32, chunk_size=chunk), np.indices((2, 3, 1), dtype=np.float32))
    for g, e in zip(mt.indices((3, 4), sparse=True, chunk_size=chunk), np.indices((3, 4), sparse=True)):
        assert_tensor(g, e)
    assert_tensor(mt.indices(()), np.indices(()))
    with pytest.raises(ValueError):
        mt.indices((-1, 2))


@pytest.mark.parametrize(
    "key",
    [
        (slice(0, 5), slice(0, 3)),
        (slice(-1, 1, 5j), slice(0, 2, 3j)),
        (slice(0, 4, 0.5), slice(1, 3)),
        (slice(0, 1, 1j), slice(2, 10, 3)),
        (slice(np.int32(0), np.int32(3)), slice(0, 2)),
        (slice(0, 3), slice(0, 2), slice(-2, 0)),
    ],
)
def test_mgrid_ogrid(client, key):
    assert_tensor(mt.mgrid[key], np.mgrid[key])
    got, exp = mt.ogrid[key], np.ogrid[key]
    assert isinstance(got, tuple) and len(got) == len(exp)
    for g, e in zip(got, exp):
        assert_tensor(g, e)


@pytest.mark.parametrize("key", [slice(0, 5), slice(-1, 1, 5j), slice(1, 10, 3), slice(0, 2, 0.25), slice(0, 1, 1j)])
def test_mgrid_1d(client, key):
    assert_tensor(mt.mgrid[key], np.mgrid[key])
    assert_tensor(mt.ogrid[key], np.ogrid[key])


# ---- r_, c_ ---------------------------------------------------------------------------------------


def test_r_c(client):
    a, b = np.array([1, 2, 3]), np.array([4, 5, 6])
    ta, tb = mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=1)
    assert_tensor(mt.r_[ta, 0, 0, tb], np.r_[a, 0, 0, b])
    assert_tensor(mt.r_[-1:1:6j, [0] * 3, 5, 6], np.r_[-1:1:6j, [0] * 3, 5, 6])
    assert_tensor(mt.r_[0:10:3], np.r_[0:10:3])
    assert_tensor(mt.r_[ta, 1.5], np.r_[a, 1.5])
    m = np.array([[0, 1, 2], [3, 4, 5]])
    tm = mt.tensor(m, chunk_size=1)
    assert_tensor(mt.r_["-1", tm, tm], np.r_["-1", m, m])
    assert_tensor(mt.r_["0,2", [1, 2, 3], [4, 5, 6]], np.r_["0,2", [1, 2, 3], [4, 5, 6]])
    assert_tensor(mt.r_["0,2,0", [1, 2, 3], [4, 5, 6]], np.r_["0,2,0", [1, 2, 3], [4, 5, 6]])
    assert_tensor(mt.r_["1,2,0", [1, 2, 3], [4, 5, 6]], np.r_["1,2,0", [1, 2, 3], [4, 5, 6]])
    assert_tensor(mt.r_["0,2", 0:3], np.r_["0,2", 0:3])
    assert_tensor(mt.c_[ta, tb], np.c_[a, b])
    assert_tensor(mt.c_[mt.tensor([[1, 2, 3]]), 0, 0, mt.tensor([[4, 5, 6]])], np.c_[np.array([[1, 2, 3]]), 0, 0, [[4, 5, 6]]])
    assert_tensor(mt.c_[0:3, a], np.c_[0:3, a])
    u = _unknown_1d(a.astype(float))
    assert_tensor(mt.r_[u, 7], np.r_[a.astype(float), 7])
    with pytest.raises(ValueError, match="first entry"):
        mt.r_[ta, "0"]
    with pytest.raises(NotImplementedError, match="matrix"):
        mt.r_["r", ta]
    with pytest.raises(ValueError):
        mt.r_["x", ta]


# ---- block ------------------------------------------------------------------------------------------


def test_block(client):
    A, B = np.eye(2) * 2, np.eye(3) * 3
    tA, tB = mt.tensor(A, chunk_size=1), mt.tensor(B, chunk_size=2)
    exp = np.block([[A, np.zeros((2, 3))], [np.ones((3, 2)), B]])
    assert_tensor(mt.block([[tA, mt.zeros((2, 3))], [mt.ones((3, 2)), tB]]), exp)
    assert_tensor(mt.block([1, 2, mt.tensor([3, 4])]), np.block([1, 2, np.array([3, 4])]))
    assert_tensor(mt.block([[1, 2], [3, 4]]), np.block([[1, 2], [3, 4]]))
    a3 = np.arange(8).reshape(2, 2, 2)
    assert_tensor(mt.block([[[mt.tensor(a3)], [a3]]]), np.block([[[a3], [a3]]]))
    assert_tensor(mt.block(mt.tensor([1.0, 2.0])), np.block(np.array([1.0, 2.0])))
    u = _unknown_1d(np.arange(4.0))
    assert_tensor(mt.block([u, np.arange(2.0)]), np.block([np.arange(4.0), np.arange(2.0)]))
    with pytest.raises(TypeError, match="tuple"):
        mt.block([(1, 2)])
    with pytest.raises(ValueError, match="depths are mismatched"):
        mt.block([[1, 2], 3])
    with pytest.raises(ValueError, match="cannot be empty"):
        mt.block([[]])


# ---- diagflat, fill_diagonal ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 1, -2])
def test_diagflat(client, k):
    v = np.array([[1, 2], [3, 4]])
    assert_tensor(mt.diagflat(mt.tensor(v, chunk_size=1), k=k), np.diagflat(v, k=k))
    assert_tensor(mt.diagflat([1, 2, 3], k=k), np.diagflat([1, 2, 3], k=k))
    u = _unknown_1d(np.arange(3.0))
    assert_tensor(mt.diagflat(u, k), np.diagflat(np.arange(3.0), k))


@pytest.mark.parametrize("shape,chunk", [((5, 5), None), ((7, 3), 2), ((3, 7), 1), ((11, 2), (3, 1)), ((4, 4, 4), 3)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal(client, shape, chunk, wrap):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    ts, exps = [], []
    for val in (-1, [7, 8], np.array([[1.5, 2.5, 3.5]])):
        t = mt.tensor(a, chunk_size=chunk)
        before = t + 0  # built on the data before the fill
        assert mt.fill_diagonal(t, val, wrap=wrap) is None
        e = a.copy()
        np.fill_diagonal(e, val, wrap=wrap)
        ts += [t, before]
        exps += [e, a]
    execute(*ts)  # one graph
    for t, e in zip(ts, exps):
        assert_tensor(t, e)  # the old data stays as it was (Mars semantics)


def test_fill_diagonal_tensor_value_and_errors(client):
    a = np.zeros((4, 6), dtype=np.int32)
    t = mt.tensor(a, chunk_size=3)
    v = mt.tensor([1.7, 2.2, 3.9])
    mt.fill_diagonal(t, v[v > 2])  # an unknown-length value tensor
    e = a.copy()
    np.fill_diagonal(e, [2.2, 3.9])
    assert_tensor(t, e)
    with pytest.raises(TypeError):
        mt.fill_diagonal(a, 1)
    with pytest.raises(ValueError, match="at least 2-d"):
        mt.fill_diagonal(mt.ones(3), 1)
    with pytest.raises(ValueError, match="equal length"):
        mt.fill_diagonal(mt.ones((2, 3, 2)), 1)


# ---- copy, copyto, ascontiguousarray, asfortranarray ---------------------------------------------------


def test_copy(client):
    a = np.arange(12.0).reshape(3, 4)
    t = mt.tensor(a, chunk_size=2)
    c = mt.copy(t)
    t[0, 0] = 100
    assert_tensor(c, a)
    assert_tensor(mt.copy([[1, 2], [3, 4]]), np.copy([[1, 2], [3, 4]]))
    f = mt.copy(t, order="F")
    assert f.order == "F"
    assert mt.copy(f).order == "F"
    assert mt.copy(f, order="C").order == "C"
    assert mt.copy(np.asfortranarray(a)).order == "F"
    u = _unknown_1d(np.arange(4.0))
    assert_tensor(mt.copy(u), np.arange(4.0))
    with pytest.raises(ValueError):
        mt.copy(t, order="X")


@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_copyto(client, chunk):
    a = np.arange(12.0).reshape(3, 4)
    src = np.array([10.0, 20.0, 30.0, 40.0])
    where = np.array([True, False, True, False])
    for s, w in [(src, True), (5, True), (src, where), (np.int32(7), where), (mt.tensor(src, chunk_size=3), where),
                 (src[None, None], mt.tensor(where, chunk_size=chunk)), (src, False)]:
        d = mt.tensor(a, chunk_size=chunk)
        old = d * 1
        assert mt.copyto(d, s, where=w) is None
        e = a.copy()
        np.copyto(e, np.asarray(s) if isinstance(s, mt.Tensor) else s, where=np.asarray(w) if isinstance(w, mt.Tensor) else w)
        assert_tensor(d, e)
        assert_tensor(old, a)


def test_copyto_errors(client):
    d = mt.zeros((2, 3), dtype=np.int32)
    with pytest.raises(TypeError):
        mt.copyto(d, np.ones(3))  # float64 -> int32 is not same_kind
    with pytest.raises(TypeError):
        mt.copyto(d, 1.5)
    mt.copyto(d, np.ones(3), casting="unsafe")
    assert_tensor(d, np.ones((2, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="broadcast"):
        mt.copyto(d, np.ones(4, dtype=np.int32))
    with pytest.raises(ValueError, match="where"):
        mt.copyto(d, 1, where=np.ones(4, bool))
    with pytest.raises(TypeError):
        mt.copyto(np.zeros(3), 1)


@pytest.mark.parametrize("chunk", [None, 1, 2])
def test_contiguous_and_fortran(client, chunk):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = mt.tensor(a, chunk_size=chunk)
    c = mt.ascontiguousarray(t, dtype=np.float32)
    assert c.order == "C"
    got = assert_tensor(c, np.ascontiguousarray(a, dtype=np.float32))
    assert got.flags.c_contiguous
    f = mt.asfortranarray(t)
    assert f.order == "F"
    got = assert_tensor(f, np.asfortranarray(a))
    assert got.flags.f_contiguous and not got.flags.c_contiguous
    assert mt.ascontiguousarray(f).order == "C"
    got = assert_tensor(mt.ascontiguousarray(f), a)
    assert got.flags.c_contiguous
    assert_tensor(mt.ascontiguousarray(3.0), np.ascontiguousarray(3.0))  # at least 1-d
    assert_tensor(mt.asfortranarray(5), np.asfortranarray(5))
    assert_tensor(mt.asfortranarray(a, chunk_size=2), np.asfortranarray(a))
    u = _unknown_1d(np.arange(4.0))
    assert_tensor(mt.asfortranarray(u), np.arange(4.0))


# ---- shape, ndim ---------------------------------------------------------------------------------------


def test_shape_ndim(client):
    assert mt.shape(mt.eye(3)) == (3, 3)
    assert mt.shape(mt.eye(3)).execute().fetch() == (3, 3)
    assert mt.shape([[1, 2]]) == (1, 2)
    assert mt.shape(0) == ()
    u = _unknown_1d(np.arange(5.0))
    s = mt.shape(u[:, None] * np.ones(3))
    assert s.execute().fetch() == (5, 3)
    assert mt.ndim(mt.ones((2, 3))) == 2
    assert mt.ndim([[1, 2]]) == 2
    assert mt.ndim(1) == 0
