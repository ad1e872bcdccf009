import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mars_dask.tensor as mt
from tests.helpers import assert_tensor

A3 = np.arange(60, dtype=np.float64).reshape(3, 4, 5)


def _unknown(t):
    return any(isinstance(s, float) and math.isnan(s) for s in t.shape)


# ---- basic indexing -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    [
        1,
        -1,
        (slice(None, None, -1),),
        (slice(1, None, 2), -1),
        (None, 0, Ellipsis, slice(4, 0, -3)),
        (Ellipsis, 2),
        (slice(-2, None), slice(None), slice(None, None, -2)),
        (slice(5, 1),),  # empty
        (0, 0, 0),
        (np.int64(-2), None, slice(1, 3), None),
    ],
)
@pytest.mark.parametrize("chunk", [2, (3, 3, 5)])
def test_basic_getitem(client, index, chunk):
    x = mt.tensor(A3, chunk_size=chunk)
    assert_tensor(x[index], A3[index])


def test_basic_getitem_1d_and_empty(client):
    a = np.arange(10)
    x = mt.tensor(a, chunk_size=3)
    for idx in [slice(2, 9, 3), slice(None, None, -4), slice(8, 2, -1), 7, slice(100, 200)]:
        assert_tensor(x[idx], a[idx])
    e = np.ones((0, 4))
    xe = mt.tensor(e, chunk_size=2)
    assert_tensor(xe[:, 1:3], e[:, 1:3])
    assert_tensor(xe[::-1, 2], e[::-1, 2])
    s = mt.tensor(np.array(3.5))
    assert_tensor(s[()], np.array(3.5))
    assert_tensor(s[None], np.array([3.5]))


def test_slice_touches_only_needed_chunks(client):
    x = mt.tensor(np.arange(20), chunk_size=4)
    y = x[5:7]
    y.execute()
    assert y.nsplits == ((2,),)
    (c,) = y.chunks
    assert [i.key for i in c.inputs] == [x.chunks[1].key]
    z = x[::-5]  # 19, 14, 9, 4: one piece per chunk, in reverse chunk order
    assert_tensor(z, np.arange(20)[::-5])
    assert z.nsplits == ((1, 1, 1, 1),)


def test_getitem_errors_at_build_time():
    x = mt.tensor(A3, chunk_size=2)
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, -5]
    with pytest.raises(IndexError, match="out of bounds"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, :, [-6]]
    with pytest.raises(IndexError, match="only integers"):
        x[1.5]
    with pytest.raises(IndexError, match="integer"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.ones(4, dtype=bool)]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[mt.ones(4, dtype=bool)]
    with pytest.raises(ValueError, match="step"):
        x[::0]
    with pytest.raises(IndexError):
        x[mt.ones(3)]  # float tensor


# ---- integer arrays ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    [
        ([2, 0, 1, 0],),
        (slice(None), [3, 0, 3]),
        ([0, 2], slice(None), [1, 4]),  # several arrays, adjacent? no -> front
        (0, slice(None), [1, 2]),  # int + array separated by a slice -> front
        (slice(1, None), [[0, 1], [3, 2]], 2),
        ([[0, 1], [2, 2]], [[1], [3]]),  # broadcasting
        (Ellipsis, []),
        (np.array(1), [0, -1]),
        (None, [-1, 0], None, slice(None, None, -2)),
        (A3[..., 0] > 20,),  # numpy masks become integer arrays
        (A3 > 30,),
        (slice(None), np.array([True, False, True, True])),
    ],
)
def test_integer_array_indexing(client, index):
    x = mt.tensor(A3, chunk_size=2)
    assert_tensor(x[index], A3[index])


def test_integer_array_indexing_1d_shapes(client):
    a = np.arange(7) * 10
    x = mt.tensor(a, chunk_size=3)
    idx = np.array([6, 0, 3, 3, -7, 5])
    t = x[idx]
    assert t.shape == (6,)
    assert_tensor(t, a[idx])
    assert_tensor(x[np.zeros(0, dtype=int)], a[[]])
    assert_tensor(mt.tensor(np.ones((0, 3)), chunk_size=2)[:, [2, 0]], np.ones((0, 3))[:, [2, 0]])


@pytest.mark.parametrize(
    "make",
    [
        lambda: (mt.tensor([2, 0, -1], chunk_size=2),),
        lambda: (1, mt.tensor([[2, 0], [1, 3]], chunk_size=1), slice(1, None)),
        lambda: (mt.tensor([2, 0]), slice(None), mt.tensor([1, 1], chunk_size=1)),
        lambda: (mt.tensor([2, 1], chunk_size=1), slice(None), [4, 0]),
        lambda: (slice(None), mt.tensor(np.array([[3], [0]])), [0, 2, 4]),
    ],
)
def test_integer_tensor_indexing(client, make):
    x = mt.tensor(A3, chunk_size=2)
    index = make()
    np_index = tuple(i.execute().fetch() if isinstance(i, mt.Tensor) else i for i in index)
    assert_tensor(x[index], A3[np_index])


def test_integer_tensor_index_out_of_bounds_raises_on_execute(client):
    x = mt.tensor(np.arange(5), chunk_size=2)
    with pytest.raises(IndexError):
        x[mt.tensor([0, 7])].execute()


# ---- boolean masks / unknown shapes ---------------------------------------------------------------


def test_bool_mask_tensor(client):
    a = np.random.RandomState(0).rand(7, 6)
    x = mt.tensor(a, chunk_size=(3, 4))
    m = x[x > 0.5]
    assert _unknown(m) and m.shape[0] != m.shape[0]
    assert_tensor(m, a[a > 0.5])
    assert m.shape == (int((a > 0.5).sum()),)  # known after execution
    assert_tensor(x[:, x[0] > 0.3], a[:, a[0] > 0.3])
    assert_tensor(x[x[:, 0] > 0.5, 1:], a[a[:, 0] > 0.5, 1:])
    assert_tensor(x[x[:, 0] > 0.5, 2], a[a[:, 0] > 0.5, 2])
    # mask chunks differ from x's: aligned with a rechunk
    mask = mt.tensor(a > 0.2, chunk_size=(2, 5))
    assert_tensor(x[mask], a[a > 0.2])
    # mask combined with an integer array: via nonzero
    assert_tensor(x[mt.tensor(a[:, 0] > 0.4), [1]], a[a[:, 0] > 0.4, [1]])


def test_bool_mask_3d_and_empty(client):
    x = mt.tensor(A3, chunk_size=2)
    assert_tensor(x[x > 31], A3[A3 > 31])
    assert_tensor(x[x > 1000], A3[A3 > 1000])
    assert_tensor(x[0, x[0] > 5], A3[0, A3[0] > 5])
    e = mt.tensor(np.ones((0, 2)), chunk_size=2)
    assert_tensor(e[e > 0], np.ones((0, 2))[np.ones((0, 2)) > 0])


def test_indexing_unknown_shapes(client):
    a = np.arange(30.)
    x = mt.tensor(a, chunk_size=4)
    m = x[x % 3 == 0]  # 10 elements, lengths unknown
    e = a[a % 3 == 0]
    assert_tensor(m[2:7], e[2:7])
    assert_tensor(m[::-3], e[::-3])
    assert_tensor(m[-1], e[-1])
    assert_tensor(m[[1, 0, 9]], e[[1, 0, 9]])
    assert_tensor(m[m > 10], e[e > 10])
    assert_tensor(m[None, :], e[None, :])
    xi = mt.tensor(np.arange(30), chunk_size=4)
    mi = xi[xi % 3 == 0]  # an integer index tensor of unknown length
    assert_tensor(x[mi], a[np.arange(30)[np.arange(30) % 3 == 0]])


# ---- nonzero, argwhere, take, compress --------------------------------------------------------


@pytest.mark.parametrize("shape,chunk", [((11,), 4), ((5, 6), (2, 4)), ((3, 4, 5), 2), ((0, 3), 2)])
def test_nonzero_argwhere(client, shape, chunk):
    a = (np.arange(int(np.prod(shape))).reshape(shape) % 3 == 1).astype(int)
    x = mt.tensor(a, chunk_size=chunk)
    res = mt.nonzero(x)
    assert len(res) == len(shape)
    for t, e in zip(res, np.nonzero(a)):
        assert_tensor(t, e)
    assert_tensor(mt.argwhere(x), np.argwhere(a))
    assert_tensor(mt.flatnonzero(x), np.flatnonzero(a))
    for t, e in zip(mt.where(x > 0), np.where(a > 0)):
        assert_tensor(t, e)


def test_nonzero_errors():
    with pytest.raises(ValueError, match="0d"):
        mt.nonzero(mt.tensor(np.array(1)))


def test_take(client):
    a = np.arange(24).reshape(4, 6)
    x = mt.tensor(a, chunk_size=(3, 4))
    assert_tensor(mt.take(x, [5, 0, 13]), np.take(a, [5, 0, 13]))
    assert_tensor(mt.take(x, [[1, 0], [3, 3]], axis=0), np.take(a, [[1, 0], [3, 3]], axis=0))
    assert_tensor(mt.take(x, [-1, 2], axis=-1), np.take(a, [-1, 2], axis=-1))
    assert_tensor(mt.take(x, 2, axis=1), np.take(a, 2, axis=1))
    assert_tensor(mt.take(x, mt.tensor([3, 1]), axis=1), np.take(a, [3, 1], axis=1))
    with pytest.raises(IndexError):
        mt.take(x, [6], axis=1)
    with pytest.raises(np.exceptions.AxisError):
        mt.take(x, [0], axis=2)


def test_compress(client):
    a = np.arange(12).reshape(3, 4)
    x = mt.tensor(a, chunk_size=2)
    assert_tensor(mt.compress([True, False, True], x, axis=0), np.compress([True, False, True], a, axis=0))
    assert_tensor(mt.compress([False, True], x, axis=1), np.compress([False, True], a, axis=1))
    assert_tensor(mt.compress([1, 0, 1, 1, 0], x), np.compress([1, 0, 1, 1, 0], a))
    c = mt.tensor([True, False, False, True])
    assert_tensor(mt.compress(c, x, axis=1), np.compress([True, False, False, True], a, axis=1))
    with pytest.raises(ValueError):
        mt.compress([[True]], x)


# ---- setitem -------------------------------------------------------------------------------------


def test_setitem_basic(client):
    a = A3.copy()
    x = mt.tensor(a, chunk_size=2)
    old = mt.Tensor(x.data)
    x[1:, ::-2, 3] = 100
    a[1:, ::-2, 3] = 100
    assert_tensor(x, a)
    assert_tensor(old, A3)  # another handle to the old data keeps the old values
    x[0] = mt.tensor(np.arange(5.0), chunk_size=3)
    a[0] = np.arange(5.0)
    assert_tensor(x, a)
    x[None, 2, 1:3] = np.arange(10).reshape(2, 5)
    a[None, 2, 1:3] = np.arange(10).reshape(2, 5)
    assert_tensor(x, a)
    x[..., -1] = np.arange(4)[None, :]  # broadcast value
    a[..., -1] = np.arange(4)[None, :]
    assert_tensor(x, a)
    x[1, 1, 1] = mt.tensor(np.array(-7.0))
    a[1, 1, 1] = -7.0
    assert_tensor(x, a)


def test_setitem_reuses_untouched_chunks(client):
    x = mt.tensor(np.arange(20), chunk_size=5)
    x.execute()
    before = list(x.chunks)
    x[6:8] = 0
    x.execute()
    assert [c is b for c, b in zip(x.chunks, before)] == [True, False, True, True]
    e = np.arange(20)
    e[6:8] = 0
    assert_tensor(x, e)


def test_setitem_casts_like_numpy(client):
    a = np.arange(6)
    x = mt.tensor(a, chunk_size=4)
    x[1:4] = np.array([1.7, 2.2, -3.9])
    a[1:4] = np.array([1.7, 2.2, -3.9])
    assert x.dtype == a.dtype
    assert_tensor(x, a)
    x[:] = mt.tensor([0.5, 1.5, 2.5, 3.5, 4.5, 5.5], chunk_size=3)
    a[:] = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
    assert_tensor(x, a)


def test_setitem_mask(client):
    a = np.random.RandomState(1).rand(5, 7)
    x = mt.tensor(a.copy(), chunk_size=(2, 3))
    x[x > 0.5] = 0
    a[a > 0.5] = 0
    assert_tensor(x, a)
    x[:, a[0] > 0.1] = -1.0
    a[:, a[0] > 0.1] = -1.0
    assert_tensor(x, a)
    mask = mt.tensor(a < 0.2, chunk_size=4)  # chunks differ from x's
    x[mask] = mt.tensor(np.array(9.0))  # a 0-d tensor value
    a[a < 0.2] = 9.0
    assert_tensor(x, a)


def test_setitem_unknown_shape(client):
    a = np.arange(12.0)
    x = mt.tensor(a, chunk_size=5)
    m = x[x > 3]
    m[1:3] = -1
    e = a[a > 3]
    e[1:3] = -1
    assert_tensor(m, e)


def test_setitem_errors_at_build_time():
    x = mt.tensor(A3, chunk_size=2)
    with pytest.raises(ValueError, match="could not broadcast"):
        x[0] = np.ones(3)
    with pytest.raises(ValueError, match="could not broadcast"):
        x[:, 0] = mt.ones((2, 5))
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0] = 1
    with pytest.raises(IndexError, match="out of bounds"):
        x[5] = 1
    with pytest.raises(ValueError):
        x[0] = "abc"
    with pytest.raises(NotImplementedError):
        x[x > 1] = np.ones(3)
    i8 = mt.tensor(np.zeros(3, dtype=np.int8))
    with pytest.raises(OverflowError):
        i8[0] = 1000


# ---- property tests against numpy ------------------------------------------------------------


@st.composite
def _array_and_chunks(draw, min_side=0, max_side=6):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=max_side))
    chunks = tuple(draw(st.integers(1, 4)) for _ in shape)
    arr = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return arr, chunks


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_property_basic_indexing(client, data):
    arr, chunks = data.draw(_array_and_chunks())
    index = data.draw(hnp.basic_indices(arr.shape, allow_newaxis=True, allow_ellipsis=True))
    assert_tensor(mt.tensor(arr, chunk_size=chunks)[index], arr[index])


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_property_integer_array_indexing(client, data):
    arr, chunks = data.draw(_array_and_chunks(min_side=1))
    index = data.draw(
        hnp.integer_array_indices(arr.shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4))
    )
    # sometimes replace trailing arrays by slices, mixing basic and advanced indices
    k = data.draw(st.integers(1, len(index)))
    index = index[:k] + tuple(slice(None, None, -1) for _ in index[k:])
    assert_tensor(mt.tensor(arr, chunk_size=chunks)[index], arr[index])


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_property_mask_indexing(client, data):
    arr, chunks = data.draw(_array_and_chunks(max_side=4))
    nd = data.draw(st.integers(1, arr.ndim))
    mask = data.draw(hnp.arrays(np.bool_, arr.shape[:nd]))
    x = mt.tensor(arr, chunk_size=chunks)
    assert_tensor(x[mask], arr[mask])
    assert_tensor(x[mt.tensor(mask, chunk_size=chunks[:nd])], arr[mask])


# ---- choose, extract, unravel_index, argwhere's memory order -----------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_choose(client, chunk):
    idx = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 0, 2]])
    choices = [np.arange(12).reshape(3, 4), np.full(4, -1.5), 7, np.arange(3)[:, None] * 100]
    t = mt.tensor(idx, chunk_size=chunk)
    tch = [mt.tensor(c, chunk_size=chunk) if isinstance(c, np.ndarray) else c for c in choices]
    assert_tensor(mt.choose(t, tch), np.choose(idx, choices))
    big = idx * 3 - 2
    for mode in ("wrap", "clip"):
        assert_tensor(mt.choose(mt.tensor(big, chunk_size=chunk), tch, mode=mode), np.choose(big, choices, mode=mode))
    stacked = np.arange(24).reshape(2, 3, 4)
    assert_tensor(mt.choose(t % 2, mt.tensor(stacked, chunk_size=chunk)), np.choose(idx % 2, stacked))
    out = mt.zeros((3, 4))
    mt.choose(t, tch, out=out)
    assert_tensor(out, np.choose(idx, choices))
    u = mt.tensor([0, 1, 1, 0, 2])
    uu = u[u < 2]
    assert_tensor(mt.choose(uu, [10, 20]), np.choose(np.array([0, 1, 1, 0]), [10, 20]))
    with pytest.raises(ValueError, match="invalid entry"):
        mt.choose(mt.tensor(big, chunk_size=chunk), tch).execute()
    with pytest.raises(ValueError):
        mt.choose(t, tch, mode="bad")
    with pytest.raises(TypeError):
        mt.choose(mt.tensor([0.5]), [1, 2])


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_extract(client, chunk):
    a = np.arange(12).reshape(3, 4)
    x = mt.tensor(a, chunk_size=chunk)
    cond = a % 3 == 0
    assert_tensor(mt.extract(mt.tensor(cond, chunk_size=2), x), np.extract(cond, a))
    assert_tensor(mt.extract(cond, x), np.extract(cond, a))
    assert_tensor(mt.extract(a % 2, x), np.extract(a % 2, a))
    assert_tensor(mt.extract([True, False, True], x), np.extract([True, False, True], a))
    u = x[x > 4]
    assert_tensor(mt.extract(u % 2 == 0, u), np.extract(a[a > 4] % 2 == 0, a[a > 4]))
    with pytest.raises(IndexError):
        mt.extract(np.ones(13, bool), x)


@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_unravel_index(client, chunk):
    flat = np.array([22, 41, 37, 0, 5])
    t = mt.tensor(flat, chunk_size=chunk)
    for dims, order in [((7, 6), "C"), ((7, 6), "F"), ((6, 7, 1), "C"), (42, "C")]:
        got, exp = mt.unravel_index(t, dims, order=order), np.unravel_index(flat, dims, order=order)
        assert len(got) == len(exp)
        for g, e in zip(got, exp):
            assert_tensor(g, e)
    for g, e in zip(mt.unravel_index(1621, (6, 7, 8, 9)), np.unravel_index(1621, (6, 7, 8, 9))):
        assert g.shape == () and g.dtype == e.dtype
        got = g.execute().fetch()
        assert got == e and np.ndim(got) == 0
    u = t[t > 4]
    for g, e in zip(mt.unravel_index(u, (7, 6)), np.unravel_index(flat[flat > 4], (7, 6))):
        assert_tensor(g, e)
    with pytest.raises(ValueError):
        mt.unravel_index(t, (7, 6), order="X")
    with pytest.raises(TypeError):
        mt.unravel_index(mt.tensor([1.5]), (7, 6))
    with pytest.raises(ValueError, match="out of bounds"):
        mt.unravel_index(t, (2, 3))[0].execute()


@pytest.mark.parametrize("shape,chunk", [((5, 6), (2, 4)), ((3, 4, 5), 2), ((7,), 3)])
def test_argwhere_memory_order(client, shape, chunk):
    a = np.arange(int(np.prod(shape))).reshape(shape) % 3
    t = mt.argwhere(mt.tensor(a, chunk_size=chunk))
    assert t.order == "F"
    got = assert_tensor(t, np.argwhere(a))
    exp = np.argwhere(a)
    assert got.flags.f_contiguous == exp.flags.f_contiguous
    assert got.flags.c_contiguous == exp.flags.c_contiguous
