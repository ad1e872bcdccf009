"""mt.linalg and the tensor products against numpy/scipy."""

import numpy as np
import pytest
import scipy.linalg

import mars_dask.tensor as mt
from tests.helpers import assert_tensor

rng = np.random.default_rng(0)


def _data(shape, dtype=np.float64):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    return rng.random(shape).astype(dtype)


def _tol(dtype):
    return {"rtol": 1e-4, "atol": 1e-4} if np.dtype(dtype) == np.float32 else {"rtol": 1e-7, "atol": 1e-10}


# ---- products -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sa, sb, ca, cb",
    [
        ((7, 5), (5, 6), 3, 2),  # non-dividing, mismatched contracted chunks (rechunk)
        ((7, 5), (5, 6), 7, 5),  # single chunk
        ((6, 4), (4, 3), (2, 1), (1, 3)),  # 1-column chunks
        ((5,), (5,), 2, 3),  # 1-d . 1-d -> 0-d
        ((4, 5), (5,), 2, 2),  # 2-d . 1-d
        ((5,), (5, 3), 2, 2),  # 1-d . 2-d
        ((2, 3, 4), (5, 4, 3), 2, 2),  # n-d . n-d: last of a with second-to-last of b
        ((3, 0), (0, 4), 2, 2),  # empty contraction -> zeros
    ],
)
def test_dot(client, sa, sb, ca, cb):
    a, b = _data(sa), _data(sb)
    ta, tb = mt.tensor(a, chunk_size=ca), mt.tensor(b, chunk_size=cb)
    assert_tensor(mt.dot(ta, tb), np.dot(a, b))
    assert_tensor(ta.dot(tb), a.dot(b))


@pytest.mark.parametrize("dta, dtb", [(np.int64, np.int64), (np.float32, np.float32), (np.int32, np.float32), (bool, bool)])
def test_dot_dtypes(client, dta, dtb):
    a, b = _data((5, 4), dta), _data((4, 3), dtb)
    expected = np.dot(a, b)
    assert_tensor(mt.dot(mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=3)), expected, **_tol(expected.dtype))


def test_dot_scalar(client):
    a = _data((3, 4))
    assert_tensor(mt.dot(mt.tensor(a, chunk_size=2), 3.0), np.dot(a, 3.0))


def test_matmul_2d_operator(client):
    a, b = _data((9, 7)), _data((7, 5))
    ta, tb = mt.tensor(a, chunk_size=(4, 3)), mt.tensor(b, chunk_size=(2, 2))
    assert_tensor(ta @ tb, a @ b)
    assert_tensor(tb.__rmatmul__(a), a @ b)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((5,), (5, 3)),
        ((4, 5), (5,)),
        ((5,), (5,)),
        ((3, 4, 5), (5, 2)),
        ((2, 1, 4, 5), (3, 5, 2)),  # broadcast batch dims
        ((1, 4, 5), (3, 5, 2)),
    ],
)
def test_matmul_rules(client, sa, sb):
    a, b = _data(sa), _data(sb)
    # mt.linalg.matmul: mt.matmul is currently shadowed by the elementwise ufunc export
    assert_tensor(mt.linalg.matmul(mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=3)), np.matmul(a, b))


def test_matmul_chunk_graph_size(client):
    """x.T @ x on a 4x4 grid: 64 partial products + 16 sums (dask.array's count)."""
    x = mt.tensor(_data((8, 8)), chunk_size=2)
    y = mt.einsum("ki,kj->ij", x, x)
    y._ensure_tiled()
    from mars_dask.tiling.emit import postorder

    order, _ = postorder(y.chunks)
    ops = [c for c in order if c.key[0].startswith(y.key)]
    assert len(ops) == 64 + 16
    assert len({c.key for c in ops}) == len(ops)


@pytest.mark.parametrize("combine", [2, 4])
def test_matmul_tree_sum(client, combine):
    import dask

    a, b = _data((4, 11)), _data((11, 3))
    with dask.config.set({"mars-dask.tensor.combine-size": combine}):
        t = mt.tensor(a, chunk_size=(2, 1)) @ mt.tensor(b, chunk_size=(1, 2))
        assert_tensor(t, a @ b)


@pytest.mark.parametrize("axes", [2, 1, 0, ([1, 0], [0, 1]), ([0], [2]), ((-1,), (0,))])
def test_tensordot(client, axes):
    a = _data((3, 4, 5))
    b = _data((4, 3, 2)) if axes in (2, ([1, 0], [0, 1])) else _data((5, 2, 3))
    if axes == 2:
        b = _data((4, 5, 2))
    if axes == 1:
        b = _data((5, 2))
    if axes == 0:
        b = _data((2, 2))
    assert_tensor(mt.tensordot(mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=3), axes), np.tensordot(a, b, axes))


def test_inner_outer_vdot(client):
    a, b = _data((3, 5)), _data((4, 5))
    ta, tb = mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=3)
    assert_tensor(mt.inner(ta, tb), np.inner(a, b))
    u, v = _data(5), _data(7)
    assert_tensor(mt.outer(mt.tensor(u, chunk_size=2), mt.tensor(v, chunk_size=3)), np.outer(u, v))
    assert_tensor(mt.vdot(ta, mt.tensor(a + 1, chunk_size=1)), np.vdot(a, a + 1))
    c = (_data(6) + 1j * _data(6)).astype(np.complex128)
    assert_tensor(mt.vdot(mt.tensor(c, chunk_size=4), mt.tensor(c[::-1], chunk_size=3)), np.vdot(c, c[::-1]))


@pytest.mark.parametrize(
    "expr, shapes",
    [
        ("ij,jk->ik", [(5, 4), (4, 3)]),
        ("ij,jk", [(5, 4), (4, 3)]),  # implicit output
        ("ij,ij->i", [(5, 4), (5, 4)]),
        ("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 5)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ii->i", [(5, 5)]),  # diagonal
        ("ii", [(5, 5)]),  # trace
        ("ij->ji", [(3, 5)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
        ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
        ("ij,j->", [(3, 1), (4,)]),  # broadcast length-1 label
    ],
)
def test_einsum(client, expr, shapes):
    arrays = [_data(s) for s in shapes]
    tensors = [mt.tensor(x, chunk_size=2) for x in arrays]
    assert_tensor(mt.einsum(expr, *tensors), np.einsum(expr, *arrays))


def test_einsum_int_dtype(client):
    a, b = _data((4, 3), np.int32), _data((3, 2), np.int64)
    assert_tensor(mt.einsum("ij,jk->ik", mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=2)), np.einsum("ij,jk->ik", a, b))


def test_products_bad_input():
    a, b = mt.ones((3, 4), chunk_size=2), mt.ones((5, 6), chunk_size=2)
    with pytest.raises(ValueError, match=r"shapes \(3,4\) and \(5,6\) not aligned: 4 \(dim 1\) != 5 \(dim 0\)"):
        mt.dot(a, b)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        a @ b
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        mt.linalg.matmul(mt.tensor(1.0), a)
    with pytest.raises(ValueError, match="could not be broadcast"):
        mt.linalg.matmul(mt.ones((2, 3, 4)), mt.ones((3, 4, 2)))
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        mt.tensordot(a, b, 1)
    with pytest.raises(np.exceptions.AxisError):
        mt.tensordot(a, b, ([2], [0]))
    with pytest.raises(ValueError, match="does not match"):
        mt.einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="never appeared"):
        mt.einsum("ij,jk->iz", a, mt.ones((4, 2)))
    with pytest.raises(ValueError, match="operand subscripts"):
        mt.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="don't match"):
        mt.einsum("ii->i", a)


# ---- decompositions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, chunks, dtype",
    [
        ((20, 4), (6, 4), np.float64),
        ((20, 4), (3, 2), np.float32),
        ((9, 5), 9, np.int64),
        ((12, 3), (5, 1), np.float64),
        ((4, 6), (2, 3), np.float64),
        ((6, 6), 4, np.int64),
    ],
)
def test_qr(client, shape, chunks, dtype):
    a = _data(shape, dtype)
    q, r = mt.linalg.qr(mt.tensor(a, chunk_size=chunks))
    nq, nr = np.linalg.qr(a)
    assert q.dtype == nq.dtype and r.dtype == nr.dtype and q.shape == nq.shape and r.shape == nr.shape
    q.execute(), r.execute()
    Q, R = q.fetch(), r.fetch()
    tol = _tol(nq.dtype)
    np.testing.assert_allclose(Q @ R, a, **tol)
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), **tol)
    np.testing.assert_allclose(np.triu(R), R, **tol)
    np.testing.assert_allclose(np.abs(R), np.abs(nr), **tol)


@pytest.mark.parametrize(
    "shape, chunks, dtype", [((20, 4), (6, 2), np.float64), ((8, 8), 3, np.float32), ((7, 3), 7, np.float64), ((4, 6), 2, np.float64)]
)
def test_svd(client, shape, chunks, dtype):
    a = _data(shape, dtype)
    u, s, vh = mt.linalg.svd(mt.tensor(a, chunk_size=chunks))
    ns = np.linalg.svd(a, compute_uv=False)
    tol = _tol(dtype)
    S = assert_tensor(s, ns, **tol)
    assert_tensor(mt.linalg.svd(mt.tensor(a, chunk_size=chunks), compute_uv=False), ns, **tol)
    u.execute(), vh.execute()
    U, Vh = u.fetch(), vh.fetch()
    assert U.dtype == np.dtype(dtype)
    np.testing.assert_allclose(U @ np.diag(S) @ Vh, a, **tol)
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), **tol)


def _spd(n, dtype=np.float64):
    m = _data((n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("n, chunks, dtype", [(7, 3, np.float64), (6, 6, np.float32), (5, 1, np.float64), (8, (3, 4), np.float32)])
def test_cholesky(client, n, chunks, dtype):
    """Mars's default is the UPPER factor (scipy's convention); lower=True gives numpy's."""
    a = _spd(n, dtype)
    t = mt.tensor(a, chunk_size=chunks)
    U = assert_tensor(mt.linalg.cholesky(t), scipy.linalg.cholesky(a), **_tol(dtype))
    np.testing.assert_allclose(U, np.triu(U))
    np.testing.assert_allclose(U.T @ U, a, **_tol(dtype))
    L = assert_tensor(mt.linalg.cholesky(t, lower=True), np.linalg.cholesky(a), **_tol(dtype))
    np.testing.assert_allclose(L @ L.T, a, **_tol(dtype))
    assert_tensor(mt.linalg.cholesky(t, lower=False), np.linalg.cholesky(a).T, **_tol(dtype))
    assert_tensor(mt.linalg.cholesky(t, upper=True), np.linalg.cholesky(a, upper=True), **_tol(dtype))
    assert_tensor(mt.linalg.cholesky(t, upper=False), np.linalg.cholesky(a), **_tol(dtype))


def test_cholesky_int_complex(client):
    a = (_spd(4) * 10).round().astype(np.int64)
    assert_tensor(mt.linalg.cholesky(mt.tensor(a, chunk_size=3)), scipy.linalg.cholesky(a))
    assert_tensor(mt.linalg.cholesky(mt.tensor(a, chunk_size=3), lower=True), np.linalg.cholesky(a))
    m = _data((5, 5)) + 1j * _data((5, 5))
    h = m @ m.conj().T + 5 * np.eye(5)
    assert_tensor(mt.linalg.cholesky(mt.tensor(h, chunk_size=2)), scipy.linalg.cholesky(h))
    assert_tensor(mt.linalg.cholesky(mt.tensor(h, chunk_size=2), lower=True), np.linalg.cholesky(h))
    with pytest.raises(ValueError):
        mt.linalg.cholesky(mt.tensor(a), lower=True, upper=True)


def _triangular(n, dtype, seed):
    """A full matrix (solve_triangular reads only one triangle) with a strong diagonal."""
    r = np.random.default_rng(seed)
    a = r.random((n, n)) + n * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * r.random((n, n))
    return (a * (10 if np.dtype(dtype).kind in "iu" else 1)).astype(dtype)


@pytest.mark.parametrize("achunks, bshape, bchunks", [
    (7, (7,), 7),  # one chunk
    ((3, 4), (7, 5), (2, 3)),  # uneven, b's rows cut elsewhere
    (1, (7,), 1),  # 1-element chunks
    (2, (7, 3), (7, 1)),
])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular(client, achunks, bshape, bchunks, lower):
    a = _triangular(7, np.float64, 1)
    b = np.random.default_rng(2).random(bshape)
    x = mt.linalg.solve_triangular(mt.tensor(a, chunk_size=achunks), mt.tensor(b, chunk_size=bchunks), lower=lower)
    assert_tensor(x, scipy.linalg.solve_triangular(a, b, lower=lower))


@pytest.mark.parametrize("adtype, bdtype", [(np.int64, np.int64), (np.float32, np.float32), (np.float32, np.float64),
                                            (np.complex128, np.float64)])
def test_solve_triangular_dtypes(client, adtype, bdtype):
    a = _triangular(5, adtype, 3)
    b = (np.random.default_rng(4).random((5, 2)) * 10).astype(bdtype)
    expected = scipy.linalg.solve_triangular(a, b, lower=True)
    assert_tensor(mt.linalg.solve_triangular(mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=3), lower=True),
                  expected, **_tol(expected.dtype))


def test_solve_triangular_unknown_shape_and_singular(client):
    v = np.random.default_rng(5).random(12)
    mask = v > 0.4
    k = int(mask.sum())
    tv = mt.tensor(v, chunk_size=5)
    b = tv[tv > 0.4]  # length known only after execution
    a = _triangular(k, np.float64, 6)
    assert_tensor(mt.linalg.solve_triangular(mt.tensor(a, chunk_size=3), b), scipy.linalg.solve_triangular(a, v[mask]))
    s = np.triu(_triangular(6, np.float64, 7))
    s[4, 4] = 0
    with pytest.raises(np.linalg.LinAlgError, match="diagonal 4"):  # scipy's message, global index
        mt.linalg.solve_triangular(mt.tensor(s, chunk_size=2), mt.ones(6)).execute()


def test_solve_triangular_bad_input():
    sq = mt.ones((3, 3))
    with pytest.raises(ValueError, match="2 dimensional"):  # LinAlgError is a ValueError, as scipy's
        mt.linalg.solve_triangular(mt.ones(3), mt.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        mt.linalg.solve_triangular(mt.ones((3, 4)), mt.ones(3))
    with pytest.raises(ValueError, match="incompatible"):
        mt.linalg.solve_triangular(sq, mt.ones(4))
    with pytest.raises(np.linalg.LinAlgError):
        mt.linalg.solve_triangular(sq, mt.ones((3, 3, 3)))


@pytest.mark.parametrize("shape, chunks, normalizer", [((30, 12), (7, 5), "auto"), ((12, 30), 30, "QR"),
                                                       ((25, 10), 4, "none")])
def test_randomized_svd(client, shape, chunks, normalizer):
    r = np.random.default_rng(8)
    m = r.random((shape[0], 5)) @ r.random((5, shape[1]))  # rank 5: the range finder is exact
    u, s, vh = mt.linalg.randomized_svd(mt.tensor(m, chunk_size=chunks), 3, power_iteration_normalizer=normalizer)
    assert u.shape == (shape[0], 3) and s.shape == (3,) and vh.shape == (3, shape[1])
    S = assert_tensor(s, np.linalg.svd(m, compute_uv=False)[:3], rtol=1e-8)
    u.execute(), vh.execute()
    U, Vh = u.fetch(), vh.fetch()
    np.testing.assert_allclose(U.T @ U, np.eye(3), atol=1e-10)
    nu, _, nvh = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(np.abs(U), np.abs(nu[:, :3]), atol=1e-6)
    np.testing.assert_allclose((U * S) @ Vh, (nu[:, :3] * S) @ nvh[:3], atol=1e-6)
    # flip_sign: the largest entry of each column of u is positive (transposed or not)
    assert (U[np.abs(U).argmax(axis=0), np.arange(3)] > 0).all()


def test_linalg_names_of_mars():
    """Every public name Mars 0.10's ``mt.linalg`` exports (its operand classes aside)."""
    names = ["cholesky", "dot", "inner", "innerproduct", "inv", "lu", "matmul", "norm", "qr", "solve",
             "solve_triangular", "svd", "randomized_svd", "tensordot", "vdot", "LinAlgError"]
    missing = [n for n in names if not hasattr(mt.linalg, n)]
    assert not missing
    assert set(names) <= set(mt.linalg.__all__)
    assert mt.linalg.innerproduct is mt.linalg.inner


def test_cholesky_not_positive_definite(client):
    with pytest.raises(np.linalg.LinAlgError):
        mt.linalg.cholesky(mt.tensor(-np.eye(4), chunk_size=2)).execute()


@pytest.mark.parametrize("shape, dtype", [((5, 5), np.float64), ((6, 4), np.float32), ((3, 5), np.int64)])
def test_lu(client, shape, dtype):
    a = _data(shape, dtype)
    p, l, u = mt.linalg.lu(mt.tensor(a, chunk_size=2))
    np_p, np_l, np_u = scipy.linalg.lu(a)
    tol = _tol(np_l.dtype)
    P = assert_tensor(p, np_p, **tol)
    L = assert_tensor(l, np_l, **tol)
    U = assert_tensor(u, np_u, **tol)
    np.testing.assert_allclose(P @ L @ U, a, **tol)


@pytest.mark.parametrize("bshape, bchunks, dtype", [((7,), 3, np.float64), ((7, 5), (3, 2), np.float32), ((7, 1), 7, np.float64)])
def test_solve(client, bshape, bchunks, dtype):
    a = (_data((7, 7)) + 7 * np.eye(7)).astype(dtype)
    b = _data(bshape, dtype)
    x = assert_tensor(mt.linalg.solve(mt.tensor(a, chunk_size=3), mt.tensor(b, chunk_size=bchunks)),
                      np.linalg.solve(a, b), **_tol(dtype))
    np.testing.assert_allclose(a @ x, b, **_tol(dtype))


@pytest.mark.parametrize("chunks", [3, 1])
def test_inv_det(client, chunks):
    a = _data((6, 6)) + 3 * np.eye(6)
    t = mt.tensor(a, chunk_size=chunks)
    x = assert_tensor(mt.linalg.inv(t), np.linalg.inv(a))
    np.testing.assert_allclose(a @ x, np.eye(6), atol=1e-10)
    assert_tensor(mt.linalg.det(t), np.linalg.det(a))
    sign, logdet = mt.linalg.slogdet(t)
    ns, nl = np.linalg.slogdet(a)
    assert_tensor(sign, ns)
    assert_tensor(logdet, nl)
    ai = _data((4, 4), np.int64) + 10 * np.eye(4, dtype=np.int64)
    assert_tensor(mt.linalg.inv(mt.tensor(ai, chunk_size=3)), np.linalg.inv(ai))


def test_inv_singular(client):
    with pytest.raises(np.linalg.LinAlgError):
        mt.linalg.inv(mt.ones((3, 3), chunk_size=2)).execute()


def test_decomposition_bad_input():
    sq, rect, vec = mt.ones((3, 3)), mt.ones((3, 4)), mt.ones(3)
    for f in (mt.linalg.cholesky, mt.linalg.inv, mt.linalg.det):
        with pytest.raises(np.linalg.LinAlgError, match="square"):
            f(rect)
        with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
            f(vec)
    for f in (mt.linalg.qr, mt.linalg.svd, mt.linalg.lu):
        with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
            f(vec)
        with pytest.raises(NotImplementedError, match="stacks"):
            f(mt.ones((2, 3, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        mt.linalg.solve(rect, vec)
    with pytest.raises(ValueError, match="mismatch"):
        mt.linalg.solve(sq, mt.ones(4))
    with pytest.raises(TypeError):
        mt.linalg.inv(mt.ones((3, 3), dtype=np.float16))


# ---- norm -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_vector_norm(client, dtype):
    x = _data(11, dtype)
    t = mt.tensor(x, chunk_size=3)
    for ord in [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5]:  # noqa: A001 - numpy's name
        assert_tensor(mt.linalg.norm(t, ord), np.linalg.norm(x, ord), **_tol(dtype))


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, np.inf, -np.inf, 2, -2])
def test_matrix_norm(client, ord):  # noqa: A002 - numpy's name
    x = _data((7, 5)) - 0.5
    t = mt.tensor(x, chunk_size=(3, 2))
    assert_tensor(mt.linalg.norm(t, ord), np.linalg.norm(x, ord))
    assert_tensor(mt.linalg.norm(t, ord, keepdims=True), np.linalg.norm(x, ord, keepdims=True))


@pytest.mark.parametrize("axis, ord", [(0, None), (-1, np.inf), (1, 1), ((2, 0), None), ((2, 0), 1), ((0, 1), np.inf)])
def test_norm_axis_3d(client, axis, ord):  # noqa: A002 - numpy's name
    x = _data((4, 5, 3)) - 0.5
    t = mt.tensor(x, chunk_size=2)
    assert_tensor(mt.linalg.norm(t, ord, axis=axis), np.linalg.norm(x, ord, axis=axis))
    assert_tensor(mt.linalg.norm(t, ord, axis=axis, keepdims=True), np.linalg.norm(x, ord, axis=axis, keepdims=True))


def test_norm_all_3d(client):
    x = _data((4, 5, 3))
    assert_tensor(mt.linalg.norm(mt.tensor(x, chunk_size=2)), np.linalg.norm(x))


def test_norm_bad_input():
    with pytest.raises(ValueError, match="Invalid norm order"):
        mt.linalg.norm(mt.ones(3), "fro")
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        mt.linalg.norm(mt.ones((2, 2, 2)), 2)
    with pytest.raises(np.exceptions.AxisError):
        mt.linalg.norm(mt.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="Invalid norm order"):
        mt.linalg.norm(mt.ones((2, 2)), 3)


def test_unknown_shapes(client):
    """Inputs whose lengths are known only after execution (boolean indexing)."""
    a = _data((12, 3))
    mask = a[:, 0] > 0.3
    t = mt.tensor(a, chunk_size=(5, 2))
    try:
        tm = t[mt.tensor(mask, chunk_size=5)]
    except Exception as e:  # noqa: BLE001 - any failure means it is not available  # pragma: no cover
        pytest.skip(f"boolean indexing unavailable: {e}")
    sub = a[mask]
    assert_tensor(mt.dot(mt.einsum("ki,kj->ij", tm, tm), mt.ones(3)), (sub.T @ sub) @ np.ones(3))
    q, r = mt.linalg.qr(tm)
    q.execute(), r.execute()
    np.testing.assert_allclose(q.fetch() @ r.fetch(), sub, atol=1e-10)
    assert_tensor(mt.linalg.norm(tm, axis=0), np.linalg.norm(sub, axis=0))


@pytest.mark.parametrize("chunks", [2, (3, 2), (8, 1), 100])
def test_symmetric_products_compute_half_the_blocks(client, chunks):
    """x.T @ x and x @ x.T (however written) compute the blocks on and above the diagonal
    from x's own blocks (no transposed copy; the diagonal's partials are symmetric) and
    mirror the others: on a 4x4 grid 40 partials + 10 sums + 6 mirrors instead of
    64 + 16; values equal numpy's, ints exactly, and C-ordered as numpy's."""
    from mars_dask.tiling.emit import postorder

    a = _data((8, 8))
    x = mt.tensor(a, chunk_size=chunks)
    cases = [(x.T @ x, a.T @ a), (x @ x.T, a @ a.T), (mt.dot(x.T, x), a.T @ a), (x.T.dot(x), a.T @ a),
             (mt.tensordot(x, x.T, axes=1), a @ a.T), (mt.matmul(x.T, x), a.T @ a)]
    for t, expected in cases:
        assert t.op._gram() is not None
        got = t.execute().fetch()
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        assert got.flags.c_contiguous
    if chunks == 2:
        y = x.T @ x
        y._ensure_tiled()
        order, _ = postorder(y.chunks)
        assert len([c for c in order if c.key[0].startswith(y.key)]) == 40 + 10 + 6
    ai = np.arange(30).reshape(6, 5)
    xi = mt.tensor(ai, chunk_size=(4, 2))
    np.testing.assert_array_equal((xi.T @ xi).execute().fetch(), ai.T @ ai)
    np.testing.assert_array_equal((xi @ xi.T).execute().fetch(), ai @ ai.T)
    # not symmetric: another tensor, or a transpose of something else
    b = _data((8, 8)) + 1
    y = mt.tensor(b, chunk_size=chunks)
    for t, expected in [(x.T @ y, a.T @ b), (y.T @ x, b.T @ a), (x.T @ x.T, a.T @ a.T)]:
        assert t.op._gram() is None
        np.testing.assert_allclose(t.execute().fetch(), expected, rtol=1e-12)
