import math

import numpy as np
import pytest

import mars_dask.tensor as mt
from tests.helpers import assert_tensor

A3 = np.arange(60, dtype=np.float64).reshape(3, 4, 5)


def _isnan(x):
    return isinstance(x, float) and math.isnan(x)


def _unknown_1d(n=20, chunk=3):
    """A 1-d tensor whose length is unknown until executed, and its numpy value."""
    a = np.arange(n, dtype=np.float64)
    x = mt.tensor(a, chunk_size=chunk)
    return x[x % 2 == 0], a[a % 2 == 0]


# ---- transposes --------------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [None, (2, 0, 1), (-1, 1, 0), (0, 1, 2)])
def test_transpose(client, axes):
    x = mt.tensor(A3, chunk_size=(2, 3, 2))
    assert_tensor(mt.transpose(x, axes), np.transpose(A3, axes))


def test_transpose_methods_and_shapes(client):
    x = mt.tensor(A3, chunk_size=2)
    assert_tensor(x.T, A3.T)
    assert_tensor(x.transpose(1, 0, 2), A3.transpose(1, 0, 2))
    assert_tensor(mt.swapaxes(x, 0, -1), np.swapaxes(A3, 0, -1))
    assert_tensor(x.swapaxes(1, 2), A3.swapaxes(1, 2))
    assert_tensor(mt.moveaxis(x, 0, -1), np.moveaxis(A3, 0, -1))
    assert_tensor(mt.moveaxis(x, [0, 1], [-1, 0]), np.moveaxis(A3, [0, 1], [-1, 0]))
    e = np.ones((0, 3))
    assert_tensor(mt.tensor(e, chunk_size=2).T, e.T)
    u, ua = _unknown_1d()
    assert_tensor(mt.transpose(u[:, None]), ua[:, None].T)


def test_transpose_errors():
    x = mt.tensor(A3)
    with pytest.raises(ValueError, match="axes don't match"):
        mt.transpose(x, (0, 1))
    with pytest.raises(ValueError, match="repeated"):
        mt.transpose(x, (0, 0, 1))
    with pytest.raises(np.exceptions.AxisError):
        mt.transpose(x, (0, 1, 3))
    with pytest.raises(np.exceptions.AxisError):
        mt.swapaxes(x, 0, 3)
    with pytest.raises(ValueError):
        mt.moveaxis(x, [0, 1], [0])


# ---- reshape ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,chunk,new",
    [
        ((3, 4, 5), (2, 3, 2), (12, 5)),
        ((3, 4, 5), 2, (3, 20)),
        ((3, 4, 5), 2, (-1,)),
        ((3, 4, 5), (1, 4, 5), (6, 2, 5)),
        ((12,), 5, (3, -1)),
        ((12,), 5, (2, 2, 3)),
        ((6, 4), (4, 3), (4, 6)),
        ((2, 0, 3), 2, (0, 6)),
        ((1,), 1, ()),
        ((7, 1), 3, (1, 7)),
    ],
)
def test_reshape(client, shape, chunk, new):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    x = mt.tensor(a, chunk_size=chunk)
    assert_tensor(x.reshape(new), a.reshape(new))
    assert_tensor(mt.reshape(x, new, order="F"), np.reshape(a, new, order="F"))


def test_reshape_is_blockwise_when_chunks_align(client):
    x = mt.tensor(np.arange(24).reshape(4, 6), chunk_size=(2, 6))
    y = x.reshape(2, 2, 6)
    y.execute()
    assert len(y.chunks) == len(x.chunks)
    for c in y.chunks:  # each output chunk reads exactly one input chunk
        assert len(c.inputs) == 1 and c.inputs[0].key[0] == x.key


def test_ravel_flatten(client):
    x = mt.tensor(A3, chunk_size=2)
    assert_tensor(mt.ravel(x), A3.ravel())
    assert_tensor(x.ravel(), A3.ravel())
    assert_tensor(x.flatten(), A3.flatten())
    assert_tensor(mt.ravel(x, order="F"), np.ravel(A3, order="F"))


def test_reshape_unknown(client):
    u, ua = _unknown_1d()
    r = u.reshape(-1, 2)
    bad = u.reshape(3, 3)  # only detectable once the length is known
    assert _isnan(r.shape[0]) and r.shape[1] == 2
    assert_tensor(r, ua.reshape(-1, 2))
    assert_tensor(u.reshape(5, 2), ua.reshape(5, 2))
    with pytest.raises(ValueError, match="cannot reshape"):
        bad.execute()


def test_reshape_errors():
    x = mt.tensor(A3)
    with pytest.raises(ValueError, match="cannot reshape"):
        x.reshape(7, 9)
    with pytest.raises(ValueError, match="one unknown"):
        x.reshape(-1, -1)
    with pytest.raises(ValueError, match="cannot reshape"):
        x.reshape(-1, 7)
    with pytest.raises(ValueError):
        x.reshape(60, order="Z")


# ---- squeeze / expand_dims / atleast ------------------------------------------------------------


def test_squeeze_expand_dims(client):
    a = np.arange(6.0).reshape(1, 3, 1, 2)
    x = mt.tensor(a, chunk_size=2)
    assert_tensor(mt.squeeze(x), np.squeeze(a))
    assert_tensor(x.squeeze(axis=-2), a.squeeze(axis=-2))
    assert_tensor(mt.squeeze(x, axis=(0, 2)), np.squeeze(a, axis=(0, 2)))
    assert_tensor(mt.expand_dims(x, 0), np.expand_dims(a, 0))
    assert_tensor(mt.expand_dims(x, -1), np.expand_dims(a, -1))
    assert_tensor(mt.expand_dims(x, (0, 3, -1)), np.expand_dims(a, (0, 3, -1)))
    u, ua = _unknown_1d()
    assert_tensor(mt.expand_dims(u, 1), ua[:, None])
    assert_tensor(mt.squeeze(mt.expand_dims(u, 0)), ua)
    with pytest.raises(ValueError, match="size not equal to one"):
        mt.squeeze(x, axis=1)
    with pytest.raises(np.exceptions.AxisError):
        mt.expand_dims(x, 6)
    with pytest.raises(ValueError, match="duplicate"):
        mt.expand_dims(x, (1, 1))


def test_atleast(client):
    for a in [np.array(3.0), np.arange(4), np.arange(6).reshape(2, 3), A3]:
        x = mt.tensor(a, chunk_size=2)
        assert_tensor(mt.atleast_1d(x), np.atleast_1d(a))
        assert_tensor(mt.atleast_2d(x), np.atleast_2d(a))
        assert_tensor(mt.atleast_3d(x), np.atleast_3d(a))
    r = mt.atleast_2d(mt.tensor(1), mt.tensor([1, 2]))
    assert isinstance(r, list) and [t.shape for t in r] == [(1, 1), (1, 2)]


# ---- broadcasting --------------------------------------------------------------------------------


def test_broadcast_to(client):
    a = np.arange(4.0).reshape(4, 1)
    x = mt.tensor(a, chunk_size=3)
    assert_tensor(mt.broadcast_to(x, (4, 5)), np.broadcast_to(a, (4, 5)))
    assert_tensor(mt.broadcast_to(x, (2, 4, 3)), np.broadcast_to(a, (2, 4, 3)))
    assert_tensor(mt.broadcast_to(x, (4, 0)), np.broadcast_to(a, (4, 0)))
    assert_tensor(mt.broadcast_to(mt.tensor(2.0), (3,)), np.broadcast_to(2.0, (3,)))
    xs, ys = mt.broadcast_arrays(x, mt.tensor(np.arange(3), chunk_size=2))
    es = np.broadcast_arrays(a, np.arange(3))
    assert_tensor(xs, es[0])
    assert_tensor(ys, es[1])
    with pytest.raises(ValueError, match="broadcast"):
        mt.broadcast_to(x, (3, 5))
    with pytest.raises(ValueError, match="broadcast"):
        mt.broadcast_to(x, (4,))
    with pytest.raises(ValueError):
        mt.broadcast_arrays(x, mt.ones(3), mt.ones(2))


def test_broadcast_to_unknown(client):
    u, ua = _unknown_1d()
    bad = mt.broadcast_to(u, (2, 3))  # only detectable once the length is known
    assert_tensor(mt.broadcast_to(u, (2, 10)), np.broadcast_to(ua, (2, 10)))
    with pytest.raises(ValueError, match="broadcast"):
        bad.execute()


# ---- concatenate & stacks --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate(client, axis):
    a = np.arange(12).reshape(3, 4)
    b = np.arange(12, 24).reshape(3, 4) * 0.5
    x = mt.tensor(a, chunk_size=2)
    y = mt.tensor(b, chunk_size=(3, 3))  # misaligned chunks on the other axis
    assert_tensor(mt.concatenate([x, y], axis=axis), np.concatenate([a, b], axis=axis))
    empty = (slice(None), slice(0, 0)) if axis in (1, -1) else (slice(0, 0),)
    assert_tensor(mt.concatenate([x, x, x[empty]], axis=axis), np.concatenate([a, a, a[empty]], axis=axis))


def test_concatenate_reuses_chunks_and_unknown_lengths(client):
    x = mt.tensor(np.arange(10.0), chunk_size=4)
    y = mt.concatenate([x, x[2:]])
    y.execute()
    assert y.chunks[0] is x.chunks[0]
    u, ua = _unknown_1d()
    c = mt.concatenate([u, x, u])
    assert _isnan(c.shape[0])
    assert_tensor(c, np.concatenate([ua, np.arange(10.0), ua]))
    # 2-d: unknown along the axis, aligned on the other
    u2 = u[:, None] * mt.ones((1, 3), chunk_size=2)
    b2 = ua[:, None] * np.ones((1, 3))
    assert_tensor(mt.concatenate([u2, u2 + 1], axis=0), np.concatenate([b2, b2 + 1], axis=0))


def test_chunks_handed_on_by_concatenate_sit_at_their_place(client):
    """A consumer that places its chunks by ``c.index`` (sort along rows, searchsorted) got two
    chunks with one key when concatenate handed on the second input's chunks (a row twice)."""
    rs = np.random.RandomState(0)
    a_np, b_np = rs.rand(4, 6), rs.rand(3, 6)
    a, b = mt.tensor(a_np, chunk_size=2), mt.tensor(b_np, chunk_size=2)
    c = mt.concatenate([a, b])
    assert_tensor(mt.sort(c, axis=1), np.sort(np.concatenate([a_np, b_np]), axis=1))
    assert all(ch.index == idx for ch, idx in zip(c.chunks, c.data.chunk_grid()))
    assert c.chunks[0] is a.chunks[0]  # a chunk already at its place is handed on as it is
    v = mt.concatenate([mt.tensor([0.5, 0.1], chunk_size=1), mt.tensor([0.9, 0.3], chunk_size=1)])
    assert_tensor(mt.searchsorted(mt.tensor(np.linspace(0, 1, 11), chunk_size=3), v),
                  np.searchsorted(np.linspace(0, 1, 11), [0.5, 0.1, 0.9, 0.3]))


def test_concatenate_errors():
    x = mt.ones((2, 3))
    with pytest.raises(ValueError, match="same number of dimensions"):
        mt.concatenate([x, mt.ones(3)])
    with pytest.raises(ValueError, match="must match exactly"):
        mt.concatenate([x, mt.ones((2, 4))], axis=0)
    with pytest.raises(ValueError, match="zero-dimensional"):
        mt.concatenate([mt.tensor(1), mt.tensor(2)])
    with pytest.raises(ValueError, match="at least one"):
        mt.concatenate([])
    with pytest.raises(np.exceptions.AxisError):
        mt.concatenate([x, x], axis=2)


def test_stacks(client):
    a = np.arange(6).reshape(2, 3)
    b = a * 10
    x, y = mt.tensor(a, chunk_size=2), mt.tensor(b, chunk_size=(1, 3))
    for axis in (0, 1, 2, -1):
        assert_tensor(mt.stack([x, y], axis=axis), np.stack([a, b], axis=axis))
    assert_tensor(mt.vstack([x, y]), np.vstack([a, b]))
    assert_tensor(mt.hstack([x, y]), np.hstack([a, b]))
    assert_tensor(mt.dstack([x, y]), np.dstack([a, b]))
    v = mt.tensor(np.arange(3), chunk_size=2)
    assert_tensor(mt.vstack([v, v]), np.vstack([np.arange(3)] * 2))
    assert_tensor(mt.hstack([v, v]), np.hstack([np.arange(3)] * 2))
    assert_tensor(mt.column_stack([v, v]), np.column_stack([np.arange(3)] * 2))
    with pytest.raises(ValueError, match="same shape"):
        mt.stack([x, v])
    with pytest.raises(np.exceptions.AxisError):
        mt.stack([x, y], axis=3)


# ---- split ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "func,arg,axis",
    [
        ("split", 2, 1),
        ("split", [1, 3], 1),
        ("split", [2, -1, 10], -1),
        ("array_split", 3, 2),
        ("array_split", 4, 0),
        ("array_split", [], 0),
    ],
)
def test_split(client, func, arg, axis):
    x = mt.tensor(A3, chunk_size=2)
    got = getattr(mt, func)(x, arg, axis=axis)
    exp = getattr(np, func)(A3, arg, axis=axis)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert_tensor(g, e)


def test_split_unknown_and_errors(client):
    u, ua = _unknown_1d()
    parts = mt.array_split(u, 3)
    assert all(_isnan(p.shape[0]) for p in parts)
    for g, e in zip(parts, np.array_split(ua, 3)):
        assert_tensor(g, e)
    for g, e in zip(mt.split(u, [2, 7]), np.split(ua, [2, 7])):
        assert_tensor(g, e)
    a = np.arange(12).reshape(3, 4)
    for g, e in zip(mt.hsplit(mt.tensor(a, chunk_size=3), 2), np.hsplit(a, 2)):
        assert_tensor(g, e)
    for g, e in zip(mt.vsplit(mt.tensor(a, chunk_size=3), [1]), np.vsplit(a, [1])):
        assert_tensor(g, e)
    with pytest.raises(ValueError, match="equal division"):
        mt.split(mt.ones(5), 2)
    with pytest.raises(ValueError, match="larger than 0"):
        mt.array_split(mt.ones(5), 0)
    with pytest.raises(np.exceptions.AxisError):
        mt.split(mt.ones(5), 5, axis=1)


# ---- flip, repeat, tile --------------------------------------------------------------------------


def test_flips(client):
    x = mt.tensor(A3, chunk_size=2)
    assert_tensor(mt.flip(x), np.flip(A3))
    assert_tensor(mt.flip(x, 1), np.flip(A3, 1))
    assert_tensor(mt.flip(x, (0, -1)), np.flip(A3, (0, -1)))
    assert_tensor(mt.fliplr(x), np.fliplr(A3))
    assert_tensor(mt.flipud(x), np.flipud(A3))
    with pytest.raises(ValueError):
        mt.fliplr(mt.ones(3))


def test_repeat(client):
    a = np.arange(12).reshape(3, 4)
    x = mt.tensor(a, chunk_size=(2, 3))
    assert_tensor(mt.repeat(x, 2), np.repeat(a, 2))
    assert_tensor(mt.repeat(x, 3, axis=0), np.repeat(a, 3, axis=0))
    assert_tensor(mt.repeat(x, [1, 0, 2, 3], axis=1), np.repeat(a, [1, 0, 2, 3], axis=1))
    assert_tensor(mt.repeat(x, 0, axis=-1), np.repeat(a, 0, axis=-1))
    u, ua = _unknown_1d()
    assert_tensor(mt.repeat(u, 2), np.repeat(ua, 2))
    with pytest.raises(ValueError):
        mt.repeat(x, [1, 2], axis=1)
    with pytest.raises(ValueError):
        mt.repeat(x, -1)


def test_tile(client):
    a = np.arange(6).reshape(2, 3)
    x = mt.tensor(a, chunk_size=2)
    for reps in [2, (2, 1), (1, 3), (2, 1, 2), 0, (1, 0)]:
        assert_tensor(mt.tile(x, reps), np.tile(a, reps))
    assert_tensor(mt.tile(mt.tensor(np.arange(3)), (2, 2)), np.tile(np.arange(3), (2, 2)))
    with pytest.raises(ValueError):
        mt.tile(x, -1)


# ---- append, insert, delete --------------------------------------------------------------------------


CHUNKINGS = [None, 1, 3]  # one chunk, 1-element chunks, uneven chunks


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_append(client, chunk):
    a = np.arange(12).reshape(3, 4)
    x = mt.tensor(a, chunk_size=chunk)
    assert_tensor(mt.append(x, [1.5, 2]), np.append(a, [1.5, 2]))
    assert_tensor(mt.append(x, [[7, 8, 9, 10]], axis=0), np.append(a, [[7, 8, 9, 10]], axis=0))
    assert_tensor(mt.append(x, mt.ones((3, 1), dtype=int), axis=1), np.append(a, np.ones((3, 1), dtype=int), axis=1))
    u, ua = _unknown_1d()
    assert_tensor(mt.append(u, [1, 2]), np.append(ua, [1, 2]))
    with pytest.raises(ValueError):
        mt.append(x, [1, 2], axis=0)


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_insert(client, chunk):
    a = np.arange(12).reshape(3, 4)
    x = mt.tensor(a, chunk_size=chunk)
    cases = [
        (1, 5, None), (-1, 5, None), (12, [8, 9], None), (1, 5, 1), (1, [[1], [2], [3]], 1),
        (1, [1, 2, 3], 1), ([1], [[1], [2], [3]], 1), ([1, 3, 1], 5.5, 1), ([0, 4, 2], [7, 8, 9], 1),
        (slice(1, 3), [7, 8], 1), (slice(None, None, 2), 0, 0), ([], 1, 0), (np.array([True, False, True, False]), 9, 1),
        ([3, 0], [[1, 2, 3, 4], [5, 6, 7, 8]], 0), (4, [9, 9, 9], 1), (np.int64(2), 1, 0),
    ]
    for obj, values, axis in cases:
        assert_tensor(mt.insert(x, obj, values, axis=axis), np.insert(a, obj, values, axis=axis))
    # tensor values and tensor indices
    assert_tensor(mt.insert(x, [1, 3], mt.tensor([[10], [20], [30]], chunk_size=2), axis=1),
                  np.insert(a, [1, 3], [[10], [20], [30]], axis=1))
    assert_tensor(mt.insert(x, mt.tensor([4, 0, -1], chunk_size=2), [7, 8, 9], axis=1),
                  np.insert(a, [4, 0, -1], [7, 8, 9], axis=1))
    assert_tensor(mt.insert(x, mt.tensor(2), [1, 2, 3], axis=1), np.insert(a, 2, [1, 2, 3], axis=1))
    u, ua = _unknown_1d()
    assert_tensor(mt.insert(u, [0, 2, -1], [1, 2, 3]), np.insert(ua, [0, 2, -1], [1, 2, 3]))
    assert_tensor(mt.insert(u, 3, 7.0), np.insert(ua, 3, 7.0))


def test_insert_errors(client):
    x = mt.tensor(np.arange(12).reshape(3, 4), chunk_size=2)
    with pytest.raises(IndexError):
        mt.insert(x, 5, 1, axis=1)
    with pytest.raises(IndexError):
        mt.insert(x, [0, -6], 1, axis=1)
    with pytest.raises(ValueError):
        mt.insert(x, [[0, 1]], 1, axis=1)
    with pytest.raises(ValueError):
        mt.insert(x, [0, 1], [1, 2, 3], axis=1)
    with pytest.raises(np.exceptions.AxisError):
        mt.insert(x, 0, 1, axis=2)
    bad = mt.insert(x, mt.tensor([9]), 1, axis=1)
    with pytest.raises(IndexError):
        bad.execute()


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_delete(client, chunk):
    a = np.arange(24).reshape(4, 6)
    x = mt.tensor(a, chunk_size=chunk)
    cases = [
        (1, None), (-1, None), ([0, 5, 5, 23], None), (1, 0), (-2, 1), ([0, 2, 2, -1], 1),
        (slice(1, 5, 2), 1), (slice(None, None, -2), 1), (slice(2, 2), 0), (slice(None), 0),
        ([], 1), ([True, False, True, False], 0), (np.array([1, 3]), 1),
    ]
    for obj, axis in cases:
        assert_tensor(mt.delete(x, obj, axis=axis), np.delete(a, obj, axis=axis))
    assert_tensor(mt.delete(x, mt.tensor([4, 0, 4, -1], chunk_size=3), axis=1), np.delete(a, [4, 0, 4, -1], axis=1))
    assert_tensor(mt.delete(x, mt.tensor([True, False, False, True]), axis=0),
                  np.delete(a, [True, False, False, True], axis=0))
    u, ua = _unknown_1d()
    assert_tensor(mt.delete(u, [0, -1, 3]), np.delete(ua, [0, -1, 3]))
    assert_tensor(mt.delete(u, slice(1, None, 3)), np.delete(ua, slice(1, None, 3)))


def test_delete_errors(client):
    x = mt.tensor(np.arange(12).reshape(3, 4), chunk_size=2)
    with pytest.raises(IndexError):
        mt.delete(x, 4, axis=1)
    with pytest.raises(IndexError):
        mt.delete(x, [0, -5], axis=1)
    with pytest.raises(ValueError):
        mt.delete(x, [True, False], axis=1)
    with pytest.raises(IndexError):
        mt.delete(x, [0.5], axis=1)
    bad = mt.delete(x, mt.tensor([7]), axis=1)
    with pytest.raises(IndexError):
        bad.execute()


# ---- roll, rollaxis, dsplit ---------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_roll(client, chunk):
    a = np.arange(24).reshape(4, 6)
    x = mt.tensor(a, chunk_size=chunk)
    for shift, axis in [(2, None), (-7, None), (0, None), (1, 0), (-1, 1), (13, 1), ((1, 2), (0, 1)),
                        ((1, -3), (1, 1)), (2, (0, 1)), (25, None)]:
        assert_tensor(mt.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    u, ua = _unknown_1d()
    assert_tensor(mt.roll(u, 3), np.roll(ua, 3))
    assert_tensor(mt.roll(u[:, None] * np.ones(2), -1, axis=0), np.roll(ua[:, None] * np.ones(2), -1, axis=0))
    assert_tensor(mt.roll(u[:, None] * np.ones(2), 3), np.roll(ua[:, None] * np.ones(2), 3))
    with pytest.raises(ValueError):
        mt.roll(x, [[1]], axis=0)
    with pytest.raises(np.exceptions.AxisError):
        mt.roll(x, 1, axis=2)


def test_roll_keeps_chunks(client):
    x = mt.tensor(np.arange(100), chunk_size=10)
    r = mt.roll(x, 15).execute()
    assert max(r.nsplits[0]) <= 10


def test_rollaxis_dsplit(client):
    a = np.arange(24).reshape(2, 3, 4)
    x = mt.tensor(a, chunk_size=2)
    for axis, start in [(2, 0), (0, 3), (1, -1), (-1, 1), (1, 1), (0, 0)]:
        assert_tensor(mt.rollaxis(x, axis, start), np.rollaxis(a, axis, start))
    with pytest.raises(np.exceptions.AxisError):
        mt.rollaxis(x, 0, 4)
    with pytest.raises(np.exceptions.AxisError):
        mt.rollaxis(x, 3)
    for got, exp in zip(mt.dsplit(x, 2), np.dsplit(a, 2)):
        assert_tensor(got, exp)
    for got, exp in zip(mt.dsplit(x, [1, 3]), np.dsplit(a, [1, 3])):
        assert_tensor(got, exp)
    with pytest.raises(ValueError):
        mt.dsplit(mt.ones((2, 3)), 2)
    with pytest.raises(ValueError):
        mt.dsplit(x, 3)


# ---- diff, ediff1d ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_diff(client, chunk):
    a = (np.arange(30) ** 2 % 17).reshape(5, 6)
    x = mt.tensor(a, chunk_size=chunk)
    for n, axis in [(1, -1), (2, -1), (1, 0), (3, 0), (4, 1), (6, 1), (9, 0)]:
        assert_tensor(mt.diff(x, n=n, axis=axis), np.diff(a, n=n, axis=axis))
    assert mt.diff(x, n=0) is x
    b = a > 5
    assert_tensor(mt.diff(mt.tensor(b, chunk_size=chunk)), np.diff(b))
    u8 = a.astype(np.uint8)
    assert_tensor(mt.diff(mt.tensor(u8, chunk_size=chunk), axis=0), np.diff(u8, axis=0))
    assert_tensor(mt.diff(x, prepend=0, append=[[1], [2], [3], [4], [5]]),
                  np.diff(a, prepend=0, append=[[1], [2], [3], [4], [5]]))
    assert_tensor(mt.diff(x, axis=0, prepend=1.5), np.diff(a, axis=0, prepend=1.5))
    u, ua = _unknown_1d()
    assert_tensor(mt.diff(u, 2), np.diff(ua, 2))
    with pytest.raises(ValueError):
        mt.diff(x, n=-1)
    with pytest.raises(ValueError):
        mt.diff(mt.tensor(1))
    with pytest.raises(np.exceptions.AxisError):
        mt.diff(x, axis=2)


def test_diff_moves_only_heads(client):
    x = mt.tensor(np.arange(40.0), chunk_size=10)
    d = mt.diff(x)
    d._ensure_tiled()
    assert d.nsplits == ((10, 10, 10, 9),)
    for c in d.chunks:
        # each output chunk reads its own chunk and a one-element slice of the next one
        assert all(i.shape in ((10,), (1,)) for i in c.inputs)
    assert_tensor(d, np.diff(np.arange(40.0)))


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_ediff1d(client, chunk):
    a = np.array([[1, 2, 4], [7, 0, 3]], dtype=np.int32)
    x = mt.tensor(a, chunk_size=chunk)
    assert_tensor(mt.ediff1d(x), np.ediff1d(a))
    assert_tensor(mt.ediff1d(x, to_begin=-99, to_end=[88, 99]), np.ediff1d(a, to_begin=-99, to_end=[88, 99]))
    assert_tensor(mt.ediff1d(x, to_end=mt.tensor([5, 6])), np.ediff1d(a, to_end=np.array([5, 6])))
    f = a.astype(np.float32)
    assert_tensor(mt.ediff1d(mt.tensor(f, chunk_size=chunk), to_begin=np.nan), np.ediff1d(f, to_begin=np.nan))
    u, ua = _unknown_1d()
    assert_tensor(mt.ediff1d(u, to_end=0.5), np.ediff1d(ua, to_end=0.5))
    with pytest.raises(TypeError):
        mt.ediff1d(x, to_begin=1.5)
    with pytest.raises(TypeError):
        mt.ediff1d(mt.tensor([True, False]))
