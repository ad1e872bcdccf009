"""mt.random: numpy's RandomState API, counter-based so values ignore the chunking."""

import json
import re
import warnings

import numpy as np
import pytest
from scipy import stats

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tensor.random import _dist_kernel, _sample_kernel, _selection_kernel, _tile_shape
from mars_dask.tools.api_coverage import NAMES_FILE, out_reason


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
    # along an axis: whole columns move, as Mars's shuffle(x, axis=1)
    x = np.arange(24).reshape(4, 6)
    t2 = mt.tensor(x, chunk_size=(3, 4))
    mt.random.RandomState(9).shuffle(t2, axis=1)
    got2 = values(t2)
    assert sorted(got2[0]) == list(range(6)) and not np.array_equal(got2, x)
    np.testing.assert_array_equal(got2, x[:, got2[0]])
    # numpy arrays and lists are shuffled in place, as numpy does
    arr = np.arange(20.0)
    mt.random.RandomState(3).shuffle(arr)
    assert sorted(arr) == list(range(20)) and not np.array_equal(arr, np.arange(20.0))
    lst = list("abcdefghij")
    mt.random.RandomState(3).shuffle(lst)
    assert sorted(lst) == list("abcdefghij") and lst != list("abcdefghij")
    with pytest.raises(TypeError):
        mt.random.shuffle(3)


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
    with pytest.raises(np.exceptions.AxisError, match="1-dimensional"):
        rs.permutation(np.float64(3.0))
    with pytest.raises(np.exceptions.AxisError):
        rs.permutation(np.ones((2, 3)), axis=2)
    with pytest.raises(NotImplementedError, match="GPU"):
        rs.rand(3, gpu=True)
    with pytest.raises(NotImplementedError, match="GPU"):
        rs.gamma(2.0, gpu=True)


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


# ---- the distributions ------------------------------------------------------------------------

#: (method, parameters, the scipy distribution the draws must follow)
CONTINUOUS = [
    ("standard_exponential", (), stats.expon()),
    ("exponential", (2.0,), stats.expon(scale=2)),
    ("standard_gamma", (0.3,), stats.gamma(0.3)),
    ("gamma", (2.5, 3.0), stats.gamma(2.5, scale=3)),
    ("beta", (0.5, 2.0), stats.beta(0.5, 2)),
    ("chisquare", (3.0,), stats.chi2(3)),
    ("f", (5.0, 7.0), stats.f(5, 7)),
    ("standard_t", (4.0,), stats.t(4)),
    ("standard_cauchy", (), stats.cauchy()),
    ("gumbel", (1.0, 2.0), stats.gumbel_r(1, 2)),
    ("laplace", (1.0, 2.0), stats.laplace(1, 2)),
    ("logistic", (1.0, 2.0), stats.logistic(1, 2)),
    ("lognormal", (0.5, 0.7), stats.lognorm(0.7, scale=np.exp(0.5))),
    ("pareto", (3.0,), stats.lomax(3)),
    ("power", (2.5,), stats.powerlaw(2.5)),
    ("rayleigh", (2.0,), stats.rayleigh(scale=2)),
    ("weibull", (1.5,), stats.weibull_min(1.5)),
    ("triangular", (-1.0, 0.5, 2.0), stats.triang(0.5, loc=-1, scale=3)),
    ("wald", (2.0, 3.0), stats.invgauss(2 / 3, scale=3)),
    ("vonmises", (0.0, 2.0), stats.vonmises(2.0)),
    ("noncentral_chisquare", (3.0, 2.0), stats.ncx2(3, 2)),
    ("noncentral_chisquare", (0.5, 2.0), stats.ncx2(0.5, 2)),  # df <= 1: a Poisson mixture
    ("noncentral_f", (5.0, 7.0, 2.0), stats.ncf(5, 7, 2)),
]
DISCRETE = [
    ("poisson", (3.0,), stats.poisson(3)),  # inversion
    ("poisson", (50.0,), stats.poisson(50)),  # PTRS
    ("binomial", (10, 0.3), stats.binom(10, 0.3)),  # inversion
    ("binomial", (100, 0.7), stats.binom(100, 0.7)),  # BTRS on 1 - p
    ("negative_binomial", (3.5, 0.4), stats.nbinom(3.5, 0.4)),
    ("geometric", (0.2,), stats.geom(0.2)),
    ("logseries", (0.8,), stats.logser(0.8)),
    ("zipf", (2.5,), stats.zipf(2.5)),
    ("hypergeometric", (7, 12, 5), stats.hypergeom(19, 7, 5)),  # urn
    ("hypergeometric", (120, 70, 150), stats.hypergeom(190, 120, 150)),  # HRUA
]
ALL = CONTINUOUS + DISCRETE
ids = [f"{n}{a}" for n, a, _ in ALL]


N_THEORY = 20_000


@pytest.fixture(scope="module")
def theory_draws(client):
    """Every distribution of ALL drawn once, in one execute (keeps the file fast)."""
    ts = [getattr(mt.random.RandomState(11), name)(*args, size=N_THEORY, chunk_size=6000) for name, args, _ in ALL]
    return dict(zip(ids, values(*ts)))


@pytest.mark.parametrize("name,args,dist", ALL, ids=ids)
def test_distribution_follows_theory(theory_draws, name, args, dist):
    n = N_THEORY
    x = theory_draws[f"{name}{args}"]
    assert x.shape == (n,) and x.dtype == np.asarray(getattr(np.random.RandomState(0), name)(*args)).dtype
    if x.dtype.kind == "f":
        assert stats.kstest(x, dist.cdf).pvalue > 1e-4  # fixed seed: deterministic; a wrong law gives ~0
        return
    # discrete: the counts of every value expected 5+ times, chi-square against the pmf
    ks = np.arange(x.min(), x.min() + 400)
    obs = np.bincount(x - x.min(), minlength=len(ks))[: len(ks)]
    exp = dist.pmf(ks) * n
    m = exp >= 5
    chi = ((obs[m] - exp[m]) ** 2 / exp[m]).sum()
    assert stats.chi2.sf(chi, m.sum() - 1) > 1e-4
    assert np.all(dist.pmf(np.unique(x)) > 0)  # nothing outside the support
    if np.isfinite(dist.var()):
        assert abs(x.mean() - dist.mean()) < 5 * np.sqrt(dist.var() / n)


def _tensor_variant(name, args, cols):
    """``args`` with the first parameter varying along the last axis, as a chunked tensor."""
    if not args:
        return None
    if isinstance(args[0], int):  # counts (binomial n, hypergeometric ngood): grow them
        first = np.round(args[0] * np.linspace(1.0, 1.5, cols)).astype(np.int64)
    else:
        first = args[0] * np.linspace(0.5, 1.0, cols) if args[0] else np.linspace(-1, 1, cols)
    return (mt.tensor(first, chunk_size=4),) + tuple(args[1:])


UNIQUE = list({n: (n, a) for n, a, _ in ALL}.values())
CHUNKINGS = [None, ((1, 22), (5, 12)), (23, 3)]  # one chunk, uneven, narrow (1-element: below)
SHAPE = (23, 17)


@pytest.fixture(scope="module")
def chunking_draws(client):
    """For every distribution, with scalar and with tensor parameters: the draws of one seed
    under each of CHUNKINGS, and one of another seed.  One execute for all."""
    def draw(name, seed, a, cs):
        return getattr(mt.random.RandomState(seed), name)(*a, size=SHAPE, chunk_size=cs)

    built = {}
    for name, args in UNIQUE:
        targs = _tensor_variant(name, args, SHAPE[1])
        built[name] = ([draw(name, 42, args, cs) for cs in CHUNKINGS],
                       [draw(name, 42, targs, cs) for cs in CHUNKINGS] if targs is not None else [],
                       draw(name, 43, args, None))
    flat = [t for same, tens, other in built.values() for t in same + tens + [other]]
    got = iter(values(*flat))
    return {name: ([next(got) for _ in same], [next(got) for _ in tens], next(got))
            for name, (same, tens, other) in built.items()}


@pytest.mark.parametrize("name,args", UNIQUE, ids=[u[0] for u in UNIQUE])
def test_distribution_values_ignore_the_chunking(chunking_draws, name, args):
    same, tens, other = chunking_draws[name]
    dtype = np.asarray(getattr(np.random.RandomState(0), name)(*args)).dtype
    for g in same + tens + [other]:
        assert g.shape == SHAPE and g.dtype == dtype
    for g in same[1:]:
        np.testing.assert_array_equal(g, same[0])
    for g in tens[1:]:
        np.testing.assert_array_equal(g, tens[0])
    assert not np.array_equal(other, same[0])  # another seed, other values
    if tens:
        assert not np.array_equal(tens[0], same[0])  # the tensor parameters are used


def test_one_element_chunks(client):
    """Every distribution, 1-element chunks against one chunk (one execute for all)."""
    ts = []
    for name, args in UNIQUE:
        ts += [getattr(mt.random.RandomState(7), name)(*args, size=(3, 4), chunk_size=cs) for cs in (1, None)]
    got = values(*ts)
    for (name, _), ones, whole in zip(UNIQUE, got[::2], got[1::2]):
        np.testing.assert_array_equal(ones, whole, err_msg=name)


BIG = (300, 300)  # several tiles (150 x 300; rows: 100 x 150 or 150 x 150)
BIG_CHUNKINGS = [1000, 77, (128, 300)]  # one chunk; cutting tiles everywhere; a tile's leading rows
ROWS = [("dirichlet", ([0.5, 1.0, 2.0],)), ("multinomial", (10, [0.2, 0.3, 0.5])),
        ("multivariate_normal", ([0.0, 1.0], [[2.0, 0.3], [0.3, 1.0]]))]


def test_values_ignore_the_chunking_across_tiles(client):
    """A draw larger than one tile: every distribution, exact values under chunkings that cut
    the tiles anywhere (one execute for all)."""
    assert _tile_shape(BIG) == (150, 300)
    ts = [getattr(mt.random.RandomState(3), name)(*args, size=BIG, chunk_size=cs)
          for name, args in UNIQUE + ROWS for cs in BIG_CHUNKINGS]
    got = values(*ts)
    n = len(BIG_CHUNKINGS)
    for j, (name, _) in enumerate(UNIQUE + ROWS):
        first = got[j * n]
        assert first.shape[:2] == BIG
        for g in got[j * n + 1:(j + 1) * n]:
            np.testing.assert_array_equal(g, first, err_msg=name)
        assert len(np.unique(first)) > 10, name  # tiles are not repeats of one another
        if first.dtype.kind == "f":
            assert len(np.unique(first)) > 0.99 * first.size, name


def test_tensor_parameters_across_tiles(client):
    """Tensor parameters (full-shape, broadcast rows and columns, chunked unlike the output)
    over several tiles: the same values whatever the chunks of the output and parameters."""
    rng = np.random.default_rng(0)
    k = rng.uniform(0.5, 5.0, size=BIG)
    col = rng.uniform(1.0, 3.0, size=(BIG[0], 1))
    n = np.arange(BIG[1]) % 50

    def draws(out_cs, par_cs):
        rs = mt.random.RandomState(9)
        return [rs.gamma(mt.tensor(k, chunk_size=par_cs), mt.tensor(col, chunk_size=par_cs), chunk_size=out_cs),
                rs.binomial(mt.tensor(n, chunk_size=par_cs), 0.3, size=BIG, chunk_size=out_cs),
                rs.poisson(mt.tensor(k, chunk_size=par_cs)[:, :1] * 3, size=BIG, chunk_size=out_cs)]

    variants = [(1000, 1000), (77, 64), ((128, 300), 100), (None, 41)]
    got = values(*[t for oc, pc in variants for t in draws(oc, pc)])
    ref = got[:3]
    for v in range(1, len(variants)):
        for j in range(3):
            np.testing.assert_array_equal(got[3 * v + j], ref[j], err_msg=str((variants[v], j)))
    g, b, p = ref
    # the parameters are each element's own
    np.testing.assert_allclose((g / (k * col)).mean(), 1.0, rtol=0.02)
    assert (b <= n).all() and (b[:, n == 0] == 0).all()
    lam = k[:, :1] * 3
    np.testing.assert_allclose(p.mean(axis=1), lam[:, 0], rtol=0.25)
    assert not np.array_equal(values(mt.random.RandomState(9).gamma(2.0, size=BIG)), g)


def test_draws_repeat_across_executes(client, chunking_draws):
    """A new graph with the same seed (other chunks) executed again: the same values."""
    again = values(*[getattr(mt.random.RandomState(42), name)(*args, size=SHAPE, chunk_size=(7, 6))
                     for name, args in UNIQUE])
    for (name, _), g in zip(UNIQUE, again):
        np.testing.assert_array_equal(g, chunking_draws[name][0][0], err_msg=name)


def test_tensor_and_array_parameters_broadcast(client):
    rs = mt.random.RandomState(12)
    shapes = np.array([[0.5], [2.0], [8.0]])  # (3, 1) and (2, 1, 1): broadcast against size
    scales = np.array([[[1.0]], [[10.0]]])
    a = rs.gamma(mt.tensor(shapes, chunk_size=1), mt.tensor(scales), size=(2, 3, 4000), chunk_size=(1, 2, 1500))
    b = rs.poisson(np.array([0.5, 5.0, 500.0]))  # size from the parameters
    c = rs.binomial(mt.tensor([[3], [300]]), [0.1, 0.5, 0.95], chunk_size=2)
    assert a.shape == (2, 3, 4000) and b.shape == (3,) and c.shape == (2, 3)
    va, vb, vc = values(a, b, c)
    # gamma(k, s): mean k*s, sd sqrt(k)*s; the (k, s) of each element is its own
    np.testing.assert_allclose(va.mean(axis=-1), (shapes * scales)[..., 0], rtol=0.08)
    assert vb.dtype == np.int64 and 0 <= vb[0] < 10 and 400 < vb[2] < 600
    assert vc.dtype == np.int64 and (vc[0] <= 3).all() and (vc[1] <= 300).all() and vc[1, 2] > 250


def test_unknown_shape_parameters(client):
    arr = np.linspace(0.1, 3.0, 40)
    x = mt.tensor(arr, chunk_size=7)
    sub = x[x > 1.0]
    t = mt.random.RandomState(5).exponential(sub)
    assert np.isnan(t.shape[0])
    ref = mt.random.RandomState(5).exponential(mt.tensor(arr[arr > 1.0], chunk_size=4))
    got, want = values(t, ref)
    assert got.shape == (int((arr > 1.0).sum()),)
    np.testing.assert_array_equal(got, want)  # values follow positions and parameters only
    u = mt.random.RandomState(5).poisson(sub, size=(3, got.size), chunk_size=2)
    assert values(u).shape == (3, got.size)


# each: (method, parameters) numpy accepts; the shapes and dtypes must be numpy's
SHAPE_CASES = [(n, a) for n, a in UNIQUE] + [("dirichlet", ([0.5, 1.0, 2.0],)),
                                              ("multinomial", (10, [0.2, 0.3, 0.5])),
                                              ("multivariate_normal", ([0.0, 1.0], [[2.0, 0.3], [0.3, 1.0]]))]


@pytest.mark.parametrize("name,args", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shapes_and_dtypes_match_numpy(name, args):
    rs, nrs = mt.random.RandomState(0), np.random.RandomState(0)
    variants = [((), {}), ((), {"size": (3, 4)}), ((), {"size": 5}), ((), {"size": (2, 0)})]
    if args and name not in ("dirichlet", "multinomial", "multivariate_normal"):
        col = np.asarray(args[0]) * np.ones(4, dtype=np.asarray(args[0]).dtype)
        variants += [((col,) + tuple(args[1:]), {}), ((col,) + tuple(args[1:]), {"size": (3, 4)})]
        if len(args) > 1:
            rowp = np.asarray(args[1]) * np.ones((2, 1), dtype=np.asarray(args[1]).dtype)
            variants += [((col, rowp) + tuple(args[2:]), {})]
    for vargs, kw in variants:
        a = vargs or args
        want = np.asarray(getattr(nrs, name)(*a, **kw))
        got = getattr(rs, name)(*a, **kw)
        assert got.shape == want.shape and got.dtype == want.dtype, (a, kw)
    assert getattr(rs, name)(*args, size=3, dtype=np.float32).dtype == np.float32  # Mars's dtype=


@pytest.mark.parametrize("name,dist_args", [("gamma", (2.0,)), ("poisson", (4.0,)), ("standard_cauchy", ()),
                                            ("hypergeometric", (5, 5, 3))])
def test_scalar_draws_fetch_as_numpy_scalars(client, name, dist_args):
    t = getattr(mt.random.RandomState(1), name)(*dist_args)
    v = values(t)
    want = np.asarray(getattr(np.random.RandomState(0), name)(*dist_args))
    assert t.shape == () and np.ndim(v) == 0 and v.dtype == want.dtype
    assert isinstance(v, np.generic)  # as numpy gives a scalar (not a 0-d array)


# invalid parameters: numpy's exception and message, at build time for scalars and arrays
BAD = [("beta", (0, 1)), ("beta", (1, -1)), ("binomial", (-1, 0.5)), ("binomial", (5, 1.5)),
       ("binomial", (5, np.nan)), ("chisquare", (0,)), ("exponential", (-1,)), ("f", (0, 1)), ("f", (1, 0)),
       ("gamma", (-1,)), ("gamma", (1, -1)), ("geometric", (0,)), ("geometric", (np.nan,)),
       ("gumbel", (0, -1)), ("hypergeometric", (1, 1, 3)), ("hypergeometric", (-1, 5, 1)),
       ("hypergeometric", (5, -1, 1)), ("hypergeometric", (5, 5, 0)), ("laplace", (0, -1)),
       ("logistic", (0, -1)), ("lognormal", (0, -1)), ("logseries", (1,)), ("logseries", (np.nan,)),
       ("negative_binomial", (0, 0.5)), ("negative_binomial", (1, 1.5)), ("noncentral_chisquare", (0, 1)),
       ("noncentral_chisquare", (1, -1)), ("noncentral_f", (1, 1, -1)), ("noncentral_f", (0, 1, 1)),
       ("normal", (0, -1)), ("pareto", (0,)), ("poisson", (-1,)), ("poisson", (np.nan,)), ("poisson", (1e19,)),
       ("power", (0,)), ("rayleigh", (-1,)), ("standard_gamma", (-1,)), ("standard_t", (0,)),
       ("triangular", (1, 0, 2)), ("triangular", (0, 3, 2)), ("triangular", (0, 0, 0)), ("vonmises", (0, -1)),
       ("wald", (0, 1)), ("wald", (1, 0)), ("weibull", (-1,)), ("zipf", (1,)), ("zipf", (np.nan,))]


@pytest.mark.parametrize("name,args", BAD, ids=[f"{n}{a}" for n, a in BAD])
def test_invalid_parameters_raise_as_numpy(name, args):
    with pytest.raises(ValueError) as want:
        getattr(np.random.RandomState(0), name)(*args)
    msg = re.escape(str(want.value))
    with pytest.raises(ValueError, match=msg):
        getattr(mt.random.RandomState(0), name)(*args)
    arrays = tuple(np.array([a, a]) for a in args)
    with pytest.raises(ValueError, match=msg):
        getattr(mt.random.RandomState(0), name)(*arrays, size=(3, 2))


def test_invalid_tensor_parameters_raise_on_execute(client):
    t = mt.random.RandomState(0).gamma(mt.tensor([1.0, -1.0, 2.0], chunk_size=1), size=(2, 3))
    with pytest.raises(ValueError, match="shape < 0"):
        values(t)
    with pytest.raises(ValueError):  # size and parameters that do not broadcast
        mt.random.RandomState(0).gamma(np.ones(3), size=(2, 2))
    with pytest.raises(TypeError):
        mt.random.RandomState(0).gamma("a")


def test_row_distributions(client):
    rs = mt.random.RandomState(21)
    alpha = np.array([0.5, 1.0, 2.0])
    ds = [mt.random.RandomState(8).dirichlet(alpha, size=(400, 30), chunk_size=cs) for cs in (64, (400, 7), None)]
    pv = [0.2, 0.3, 0.5]
    ms = [mt.random.RandomState(8).multinomial(20, pv, size=3000, chunk_size=cs) for cs in (1000, 7, None)]
    mean, cov = np.array([1.0, -1.0]), np.array([[2.0, 0.5], [0.5, 1.0]])
    vs = [mt.random.RandomState(8).multivariate_normal(mean, cov, size=(40, 500), chunk_size=cs)
          for cs in ((13, 100), (40, 500, 2))]
    assert ds[0].shape == (400, 30, 3) and ms[0].shape == (3000, 3) and vs[0].shape == (40, 500, 2)
    assert ds[0].dtype == np.float64 and ms[0].dtype == np.int64 and vs[0].dtype == np.float64
    small = rs.dirichlet([0.001, 0.001], size=100)  # gamma draws that underflow: still rows summing to 1
    scalar = rs.multivariate_normal(mean, cov)
    got = values(*ds, *ms, *vs, small, scalar)
    d, m, v, sm, sc = got[0], got[3], got[6], got[8], got[9]
    for g in got[1:3]:
        np.testing.assert_array_equal(g, d)
    for g in got[4:6]:
        np.testing.assert_array_equal(g, m)
    np.testing.assert_array_equal(got[7], v)
    np.testing.assert_allclose(d.sum(-1), 1.0)
    np.testing.assert_allclose(d.reshape(-1, 3).mean(0), alpha / alpha.sum(), atol=0.01)
    assert (m.sum(-1) == 20).all() and (m >= 0).all()
    np.testing.assert_allclose(m.mean(0), 20 * np.array(pv), atol=0.1)
    np.testing.assert_allclose(np.cov(m.T)[0], 20 * np.array([0.16, -0.06, -0.1]), atol=0.25)
    flat = v.reshape(-1, 2)
    np.testing.assert_allclose(flat.mean(0), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(flat.T), cov, atol=0.05)
    np.testing.assert_allclose(sm.sum(-1), 1.0)
    assert np.isfinite(sm).all()
    assert sc.shape == (2,)


def test_row_distribution_errors():
    rs = mt.random.RandomState(0)
    with pytest.raises(ValueError, match="alpha <= 0"):
        rs.dirichlet([1.0, 0.0])
    with pytest.raises(ValueError, match="n < 0"):
        rs.multinomial(-1, [0.5, 0.5])
    with pytest.raises(ValueError, match="pvals"):
        rs.multinomial(5, [-0.5, 1.5])
    with pytest.raises(ValueError, match="1 dimensional"):
        rs.multivariate_normal([[0.0]], [[1.0]])
    with pytest.raises(ValueError, match="same length"):
        rs.multivariate_normal([0.0], np.eye(2))
    bad_cov = [[1.0, 2.0], [2.0, 1.0]]
    with pytest.warns(RuntimeWarning, match="positive-semidefinite"):
        rs.multivariate_normal([0.0, 0.0], bad_cov)
    with pytest.raises(ValueError, match="positive-semidefinite"):
        rs.multivariate_normal([0.0, 0.0], bad_cov, check_valid="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs.multivariate_normal([0.0, 0.0], bad_cov, check_valid="ignore")


def test_permutation_along_an_axis(client):
    x = np.arange(60).reshape(5, 12)
    ps = [mt.random.RandomState(4).permutation(mt.tensor(x, chunk_size=cs), axis=1) for cs in (5, (2, 7), 1)]
    p3 = mt.random.RandomState(4).permutation(x, axis=-1)
    assert ps[0].shape == x.shape and ps[0].dtype == x.dtype
    got = values(*ps, p3)
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0])
    assert sorted(got[0][0]) == list(range(12)) and not np.array_equal(got[0], x)
    np.testing.assert_array_equal(got[0], x[:, got[0][0]])  # whole columns move together


def test_random_integers_and_bytes(client):
    rs = mt.random.RandomState(6)
    a, b = values(rs.random_integers(3, size=3000, chunk_size=700), rs.random_integers(-2, 2, size=(40, 50)))
    with pytest.warns(DeprecationWarning):  # numpy's, not Mars's
        want = np.random.RandomState(0).random_integers(3, size=2)
    assert a.dtype == want.dtype
    assert set(np.unique(a)) == {1, 2, 3} and set(np.unique(b)) == {-2, -1, 0, 1, 2}
    bs = mt.random.RandomState(1).bytes(10)
    assert isinstance(bs, bytes) and len(bs) == 10
    assert mt.random.RandomState(1).bytes(10) == bs and mt.random.RandomState(2).bytes(10) != bs


def test_mars_names_are_all_there():
    names = json.loads(NAMES_FILE.read_text())["tensor.random"]
    user = [n for n in names if out_reason(n) is None]
    assert len(user) >= 44
    missing = [n for n in user if not hasattr(mt.random, n)]
    assert missing == []
    assert set(user) <= set(mt.random.__all__)
    for n in user:  # the module functions draw from the global state
        if n not in ("RandomState", "seed"):
            assert hasattr(mt.random.RandomState, {"random": "random_sample"}.get(n, n))


def test_sampler_kernel_tiles_are_a_pure_function_of_position():
    """The parameterised kernel alone: a chunk equals the matching slice of the whole, for
    chunks cutting tiles (the tile's leading rows only, several tiles, one partial tile),
    with parameters broadcast per element."""
    k = np.linspace(0.2, 4.0, 7)
    gshape, tshape = (10, 7), (4, 3)
    for name, args in [("gamma", (k, 2.0)), ("poisson", (k * 10,)), ("binomial", (np.arange(7) * 9, 0.4)),
                       ("hypergeometric", (np.arange(7) * 4 + 10, 20, 12)), ("vonmises", (0.0, k))]:
        spec = tuple(None if np.ndim(a) else a for a in args)
        tens = [a for a in args if np.ndim(a)]
        whole = _dist_kernel(gshape, (0, 0), gshape, tshape, 99, name, spec, np.float64,
                             *[([a], (1,), (0,)) for a in tens])
        for offs, shape in [((3, 2), (4, 4)), ((0, 0), (1, 1)), ((9, 6), (1, 1)), ((5, 0), (2, 7))]:
            lo, hi = (offs[1] // 3) * 3, min(7, -(-(offs[1] + shape[1]) // 3) * 3)
            part = _dist_kernel(shape, offs, gshape, tshape, 99, name, spec, np.float64,
                                *[([a[lo:hi]], (1,), (lo,)) for a in tens])
            np.testing.assert_array_equal(part, whole[offs[0]:offs[0] + shape[0], offs[1]:offs[1] + shape[1]],
                                          err_msg=name)


@pytest.mark.parametrize("dist, spec", [("gamma", [2.0, 1.0]), ("gamma", [0.5, 3.0]), ("standard_gamma", [2.5]),
                                        ("exponential", [2.0]), ("standard_exponential", [])])
def test_draws_into_a_reused_buffer_equal_numpys_own_method(monkeypatch, dist, spec):
    """gamma/exponential tiles drawn by ``standard_*(out=buffer)`` and scaled are bit for bit
    numpy's ``gamma``/``exponential`` of the tile (the general path), for chunks inside a
    tile, across tiles and at the ragged edge."""
    from mars_dask.tensor import random as rnd

    gshape = (1000, 900)
    tshape = rnd._tile_shape(gshape)
    for offs, shape in [((100, 200), (300, 300)), ((0, 0), (37, 900)), ((977, 0), (23, 900))]:
        fast = rnd._dist_kernel(shape, offs, gshape, tshape, 123, dist, spec, np.dtype("f8"))
        monkeypatch.setattr(rnd, "_INTO", {})
        general = rnd._dist_kernel(shape, offs, gshape, tshape, 123, dist, spec, np.dtype("f8"))
        monkeypatch.undo()
        assert fast.dtype == general.dtype and fast.shape == shape
        np.testing.assert_array_equal(fast, general)
