"""mt.random: numpy's RandomState API, counter-based so values ignore the chunking."""

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tensor.random import _sample_kernel, _selection_kernel


def values(*tensors):
    """Execute ``tensors`` as one graph and fetch them."""
    mars_dask.execute(*tensors)
    out = [t.fetch() for t in tensors]
    return out[0] if len(out) == 1 else out


# each: (name, draw(rs, shape, chunk_size) -> tensor, expected dtype)
DRAWS = [
    ("rand", lambda rs, shape, cs: rs.rand(*shape, chunk_size=cs), np.float64),
    ("rand32", lambda rs, shape, cs: rs.rand(*shape, chunk_size=cs, dtype=np.float32), np.float32),
    ("randn", lambda rs, shape, cs: rs.randn(*shape, chunk_size=cs), np.float64),
    ("random_sample", lambda rs, shape, cs: rs.random_sample(shape, chunk_size=cs), np.float64),
    ("randint", lambda rs, shape, cs: rs.randint(-5, 17, size=shape, chunk_size=cs), np.int64),
    ("randint8", lambda rs, shape, cs: rs.randint(100, size=shape, dtype=np.uint8, chunk_size=cs), np.uint8),
    ("uniform", lambda rs, shape, cs: rs.uniform(-2, 3, size=shape, chunk_size=cs), np.float64),
    ("normal", lambda rs, shape, cs: rs.normal(10, 2, size=shape, chunk_size=cs), np.float64),
    ("choice", lambda rs, shape, cs: rs.choice(7, size=shape, chunk_size=cs), np.int64),
    ("choice_p", lambda rs, shape, cs: rs.choice([1.5, 2.5, 4.0], size=shape, p=[0.2, 0.5, 0.3], chunk_size=cs),
     np.float64),
    ("choice_noreplace", lambda rs, shape, cs: rs.choice(1000, size=shape, replace=False, chunk_size=cs), np.int64),
    ("choice_noreplace_p",
     lambda rs, shape, cs: rs.choice(900, size=shape, replace=False, p=np.full(900, 1 / 900), chunk_size=cs),
     np.int64),
]


@pytest.mark.parametrize("name,draw,dtype", DRAWS, ids=[d[0] for d in DRAWS])
def test_same_values_whatever_the_chunking(client, name, draw, dtype):
    shape = (23, 17)
    ts = [draw(mt.random.RandomState(42), shape, cs) for cs in [5, (23, 3), ((1, 22), (17,)), None]]
    other = draw(mt.random.RandomState(43), shape, 4)
    for t in ts + [other]:
        assert t.shape == shape and t.dtype == dtype
    assert ts[0].key == draw(mt.random.RandomState(42), shape, 5).key  # seeded: deterministic keys
    *got, diff = values(*ts, other)
    for g in got:
        assert g.shape == shape and g.dtype == dtype
        np.testing.assert_array_equal(g, got[0])
    assert not np.array_equal(diff, got[0])  # another seed gives other values


def test_module_functions_use_global_state(client):
    mt.random.seed(0)
    a = mt.random.rand(100, 70, chunk_size=13)
    b = mt.random.rand(100, 70, chunk_size=13)
    mt.random.seed(0)
    c = mt.random.rand(100, 70, chunk_size=(100, 7))
    va, vb, vc = values(a, b, c)
    np.testing.assert_array_equal(va, vc)  # re-seeding repeats, whatever the chunks
    assert not np.array_equal(va, vb)  # successive calls differ
    # unseeded states: random keys, different values
    mt.random.seed(None)
    x, y = mt.random.rand(50), mt.random.rand(50)
    assert x.key != y.key
    vx, vy = values(x, y)
    assert not np.array_equal(vx, vy)
    assert mt.random.RandomState().rand(5).key != mt.random.RandomState().rand(5).key


def test_uniform_statistics(client):
    rs = mt.random.RandomState(1)
    u, u32, lo = values(rs.rand(400, 250, chunk_size=(128, 100)), rs.random(100_000, dtype=np.float32),
                        rs.uniform(-3, 5, size=100_000, chunk_size=30_000))
    for x in (u, u32):
        assert 0 <= x.min() and x.max() < 1
        assert abs(x.mean() - 0.5) < 0.005 and abs(x.std() - 12**-0.5) < 0.005
        counts = np.histogram(x, bins=10, range=(0, 1))[0]
        assert counts.min() > 0.9 * x.size / 10
    assert -3 <= lo.min() and lo.max() < 5 and abs(lo.mean() - 1) < 0.05
    assert abs(lo.std() - 8 * 12**-0.5) < 0.03
    # neighbouring elements are not correlated
    assert abs(np.corrcoef(u.ravel()[:-1], u.ravel()[1:])[0, 1]) < 0.01


def test_normal_statistics(client):
    rs = mt.random.RandomState(2)
    z, n, n32 = values(rs.randn(100_000, chunk_size=33_333), rs.normal(10, 2, size=(300, 300)),
                       rs.standard_normal(100_000, dtype=np.float32))
    for x in (z, n32):
        assert abs(x.mean()) < 0.015 and abs(x.std() - 1) < 0.015
        assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01  # the shape, not just the moments
        assert np.isfinite(x).all()
    assert n32.dtype == np.float32
    assert abs(n.mean() - 10) < 0.03 and abs(n.std() - 2) < 0.03


def test_randint_range_and_coverage(client):
    rs = mt.random.RandomState(3)
    a, b, c, d, e = values(
        rs.randint(5, 15, size=(100, 100), chunk_size=33),
        rs.randint(3, size=10_000, dtype=np.int8),
        rs.randint(0, 2, size=1000, dtype=bool),
        rs.randint(-(2**63), 2**63 - 1, size=1000),
        rs.randint(0, 2**64, size=1000, dtype=np.uint64),
    )
    assert set(np.unique(a)) == set(range(5, 15))
    assert abs(np.bincount(a.ravel() - 5).min() - 1000) < 150
    assert set(np.unique(b)) == {0, 1, 2} and b.dtype == np.int8
    assert c.dtype == bool and 400 < c.sum() < 600
    assert d.min() < -(2**61) and d.max() > 2**61  # the full int64 range is reached
    assert e.dtype == np.uint64 and e.max() > 2**63


def test_choice(client):
    rs = mt.random.RandomState(4)
    pool = np.array([10, 20, 30, 40], dtype=np.int16)
    a, b, c, d, e = values(
        rs.choice(5, size=20_000, p=[0.1, 0.2, 0.3, 0.4, 0.0], chunk_size=6000),
        rs.choice(pool, size=(50, 40), chunk_size=17),
        rs.choice(mt.tensor(pool, chunk_size=3), size=1000),
        rs.choice(30, size=(5, 6), replace=False, chunk_size=4),
        rs.choice(pool, 0),
    )
    freq = np.bincount(a, minlength=5) / a.size
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.015)
    assert b.dtype == np.int16 and set(np.unique(b)) == set(pool)
    assert set(np.unique(c)) == set(pool)
    assert d.shape == (5, 6) and sorted(d.ravel()) == list(range(30))
    assert e.shape == (0,) and e.dtype == np.int16
    # without replacement, weighted: zero-weight items never drawn; heavy items first
    f = values(rs.choice(pool, size=2, replace=False, p=[0.5, 0.5, 0, 0]))
    assert sorted(f) == [10, 20]
    g = values(rs.choice(10, size=5, replace=False, p=np.r_[np.full(5, 0.196), np.full(5, 0.004)], chunk_size=2))
    assert len(set(g)) == 5 and (g < 5).sum() >= 4


def test_orderings_are_uniform():
    """All 24 orderings of 4 items come up about equally often over many keys (kernel only)."""
    counts = {}
    for key in range(2400):
        perm = tuple(_selection_kernel(4, 4, key * 7919 + 1, None))
        counts[perm] = counts.get(perm, 0) + 1
    assert len(counts) == 24 and min(counts.values()) > 60  # expected 100 each


def test_permutation(client):
    rs = mt.random.RandomState(5)
    p, q = values(rs.permutation(100), rs.permutation(mt.arange(100, chunk_size=7)))
    assert sorted(p) == list(range(100)) and not np.array_equal(p, np.arange(100))
    assert sorted(q) == list(range(100))
    x = np.arange(60).reshape(12, 5)
    a = mt.random.RandomState(6).permutation(mt.tensor(x, chunk_size=(5, 2)))
    b = mt.random.RandomState(6).permutation(mt.tensor(x, chunk_size=(3, 5)))
    c = mt.random.RandomState(6).permutation(x)
    assert a.shape == (12, 5) and a.dtype == x.dtype
    va, vb, vc = values(a, b, c)
    assert sorted(va[:, 0]) == list(range(0, 60, 5))
    np.testing.assert_array_equal(va, x[va[:, 0] // 5])  # whole rows move together
    np.testing.assert_array_equal(va, vb)  # same permutation whatever the chunks
    np.testing.assert_array_equal(va, vc)
    assert values(rs.permutation(0)).shape == (0,)


def test_permutation_unknown_length(client):
    x = mt.arange(20, chunk_size=6)
    try:
        sub = x[x > 9]
    except Exception:  # noqa: BLE001 - any failure here means it is not available
        pytest.skip("boolean indexing not available")
    got = values(mt.random.RandomState(0).permutation(sub))
    assert sorted(got) == list(range(10, 20))


def test_shuffle(client):
    t = mt.tensor(np.arange(30), chunk_size=7)
    mt.random.RandomState(9).shuffle(t)
    got = values(t)
    assert sorted(got) == list(range(30)) and not np.array_equal(got, np.arange(30))
    with pytest.raises(TypeError):
        mt.random.shuffle(np.arange(3))


def test_shapes_and_sizes(client):
    rs = mt.random.RandomState(7)
    s = rs.rand()
    assert s.shape == () and s.dtype == np.float64
    e = rs.randn(0, 3)
    z = rs.randint(4, size=(2, 0, 3), chunk_size=1)
    u = rs.uniform(np.array([0.0, 10.0]), 20, chunk_size=1)  # size from the parameters
    n = rs.normal(mt.tensor([0.0, 100.0]), 1, size=(3, 2), chunk_size=2)
    vs, ve, vz, vu, vn = values(s, e, z, u, n)
    assert vs.shape == () and 0 <= vs < 1
    assert ve.shape == (0, 3) and vz.shape == (2, 0, 3)
    assert vu.shape == (2,) and 0 <= vu[0] < 20 and 10 <= vu[1] < 20
    assert vn.shape == (3, 2) and (np.abs(vn[:, 1] - 100) < 10).all() and (np.abs(vn[:, 0]) < 10).all()
    assert rs.rand(3, 4).shape == rs.rand((3, 4)).shape == (3, 4)


def test_bad_arguments_raise_at_build_time():
    rs = mt.random.RandomState(0)
    with pytest.raises(ValueError, match="negative"):
        rs.rand(-1)
    with pytest.raises(ValueError, match="negative"):
        rs.uniform(size=(2, -3))
    with pytest.raises(TypeError):
        rs.random_sample(2.5)
    with pytest.raises(TypeError, match="dtype"):
        rs.rand(3, dtype=np.int32)
    with pytest.raises(ValueError, match="low >= high"):
        rs.randint(5, 5)
    with pytest.raises(ValueError, match="low >= high"):
        rs.randint(0)
    with pytest.raises(ValueError, match="out of bounds"):
        rs.randint(0, 300, dtype=np.int8)
    with pytest.raises(ValueError, match="out of bounds"):
        rs.randint(-1, 3, dtype=np.uint8)
    with pytest.raises(TypeError, match="dtype"):
        rs.randint(0, 3, dtype=np.float64)
    with pytest.raises(ValueError, match="scale < 0"):
        rs.normal(0, -1)
    with pytest.raises(ValueError, match="sum to 1"):
        rs.choice(3, p=[0.5, 0.2, 0.2])
    with pytest.raises(ValueError, match="non-negative"):
        rs.choice(3, p=[1.5, -0.5, 0])
    with pytest.raises(ValueError, match="same size"):
        rs.choice(3, p=[0.5, 0.5])
    with pytest.raises(ValueError, match="larger sample"):
        rs.choice(5, size=6, replace=False)
    with pytest.raises(ValueError, match="non-zero"):
        rs.choice(3, size=2, replace=False, p=[1.0, 0, 0])
    with pytest.raises(ValueError, match="empty"):
        rs.choice([], size=2)
    with pytest.raises(ValueError, match="1-dimensional"):
        rs.choice(np.ones((2, 2)))
    with pytest.raises(ValueError, match="chunk_size"):
        rs.rand(10, chunk_size=0)
    with pytest.raises(ValueError, match="broadcast"):
        rs.uniform(np.zeros(3), 1, size=(2, 2))
    with pytest.raises(ValueError):
        mt.random.RandomState(-1)
    with pytest.raises(TypeError):
        mt.random.seed(1.5)
    with pytest.raises(ValueError, match="negative"):
        rs.permutation(-2)
    with pytest.raises(ValueError, match="1-dimensional"):
        rs.permutation(np.float64(3.0))


def test_kernel_is_a_pure_function_of_position():
    """The kernel alone: a chunk equals the matching slice of the whole, for chunk
    shapes that cross the kernel's internal blocks (rows longer and shorter than a block)."""
    for dist, args, dtype in [("uniform", (), np.float64), ("normal", (), np.float64),
                              ("randint", (-3, 1000), np.int32), ("bits", (), np.uint64)]:
        whole = _sample_kernel((3, 70_000), (0, 0), (3, 70_000), 99, dist, args, dtype)
        part = _sample_kernel((2, 65_600), (1, 4000), (3, 70_000), 99, dist, args, dtype)
        np.testing.assert_array_equal(part, whole[1:, 4000:69_600])
        cube = _sample_kernel((4, 5, 6), (0, 0, 0), (4, 5, 6), 7, dist, args, dtype)
        piece = _sample_kernel((2, 3, 2), (1, 2, 3), (4, 5, 6), 7, dist, args, dtype)
        np.testing.assert_array_equal(piece, cube[1:3, 2:5, 3:5])
