"""mt.stats against scipy.stats: statistics and p-values, Mars's result tuples, several
chunkings and unknown lengths, and errors."""

import math

import numpy as np
import pytest
import scipy.stats as st

import mars_dask.tensor as mt
from mars_dask.session import execute

RNG = np.random.default_rng(2)
A = RNG.normal(0.3, 1.0, (8, 3))
B = RNG.normal(0.0, 1.5, (6, 3))
CHUNKS = [None, (5, 2), 1]
CHUNK_IDS = ["one", "uneven", "ones"]


def _check(res, expected, fields=("statistic", "pvalue"), rtol=1e-10):
    """``res`` (Mars's executable tuple) executed and fetched equals scipy's ``expected``."""
    return _check_all([(res, expected)], fields, rtol)[0]


def _check_all(pairs, fields=("statistic", "pvalue"), rtol=1e-10):
    """Several ``(result, scipy's result)`` pairs, executed in one graph (fast tests)."""
    execute(*[t for res, _ in pairs for t in res])
    out = []
    for res, expected in pairs:
        assert tuple(res._fields) == fields
        got = res.fetch()
        assert type(got).__name__ == repr(res).split("(")[0]
        for f in fields:
            g, e = getattr(got, f), getattr(expected, f)
            assert np.shape(g) == np.shape(e), (f, np.shape(g), np.shape(e))
            assert np.asarray(g).dtype == np.asarray(e).dtype, (f, np.asarray(g).dtype, np.asarray(e).dtype)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-300)
        out.append(got)
    return out


def _unknown(x, chunk):
    t = mt.tensor(x, chunk_size=chunk)
    u = t[t > -0.5]
    assert math.isnan(u.shape[0])
    return u, x[x > -0.5]


@pytest.mark.parametrize("chunks,alternative", zip(CHUNKS, ["two-sided", "less", "greater"]), ids=CHUNK_IDS)
def test_ttests(client, chunks, alternative):
    a, b = mt.tensor(A, chunk_size=chunks), mt.tensor(B, chunk_size=chunks)
    a2 = mt.tensor(A[:6], chunk_size=chunks)
    pairs = [
        (mt.stats.ttest_1samp(a, 0.2, alternative=alternative), st.ttest_1samp(A, 0.2, alternative=alternative)),
        (mt.stats.ttest_1samp(a, 0.2, axis=1), st.ttest_1samp(A, 0.2, axis=1)),
        (mt.stats.ttest_rel(a2, b, alternative=alternative), st.ttest_rel(A[:6], B, alternative=alternative)),
    ]
    for eq in (True, False):
        pairs.append((mt.stats.ttest_ind(a, b, equal_var=eq, alternative=alternative),
                      st.ttest_ind(A, B, equal_var=eq, alternative=alternative)))
    _check_all(pairs)


def test_ttest_results_and_scalars(client):
    a = mt.tensor(A[:, 0], chunk_size=5)
    res = mt.stats.ttest_1samp(a, 0.0)
    assert res.statistic is res[0] and res.pvalue is res[1]
    t, p = res.execute().fetch()
    e = st.ttest_1samp(A[:, 0], 0.0)
    assert np.ndim(t) == 0 and np.ndim(p) == 0
    np.testing.assert_allclose([t, p], [e.statistic, e.pvalue], rtol=1e-10)
    _check(mt.stats.ttest_ind(a, mt.tensor(B[:, 0], chunk_size=4), axis=None), st.ttest_ind(A[:, 0], B[:, 0], axis=None))
    f4, g4 = A.astype(np.float32) + 1, B.astype(np.float32) + 1
    _check_all([
        (mt.stats.ttest_ind(mt.tensor(A, chunk_size=5), mt.tensor(B, chunk_size=4), axis=None),
         st.ttest_ind(A, B, axis=None)),
        # float32 stays float32, as scipy
        (mt.stats.ttest_1samp(mt.tensor(f4, chunk_size=3), 0.5), st.ttest_1samp(f4, 0.5)),
        (mt.stats.chisquare(mt.tensor(np.abs(f4), chunk_size=3)), st.chisquare(np.abs(f4))),
        (mt.stats.power_divergence(mt.tensor(np.abs(g4), chunk_size=3), lambda_=0, ddof=1),
         st.power_divergence(np.abs(g4), lambda_=0, ddof=1)),
    ], rtol=2e-5)


def test_ttests_unknown_length(client):
    u, x = _unknown(A[:, 0], 5)
    v, y = _unknown(B[:, 1], 4)
    _check(mt.stats.ttest_1samp(u, 0.1), st.ttest_1samp(x, 0.1))
    _check(mt.stats.ttest_ind(u, v, equal_var=False), st.ttest_ind(x, y, equal_var=False))


def test_ttest_ind_from_stats(client):
    _check(mt.stats.ttest_ind_from_stats(15.0, np.sqrt(87.5), 13, 12.0, np.sqrt(39.0), 11),
           st.ttest_ind_from_stats(15.0, np.sqrt(87.5), 13, 12.0, np.sqrt(39.0), 11), rtol=1e-14)
    m1 = RNG.normal(size=6)
    m = mt.tensor(m1, chunk_size=4)
    _check(mt.stats.ttest_ind_from_stats(m, 1.5, 10, 0.0, mt.tensor(m1 ** 2 + 1, chunk_size=2), 7,
                                         equal_var=False, alternative="less"),
           st.ttest_ind_from_stats(m1, 1.5, 10, 0.0, m1 ** 2 + 1, 7, equal_var=False, alternative="less"),
           rtol=1e-14)


F_OBS = np.array([[16, 18, 16, 14, 12, 12], [32, 24, 16, 28, 20, 24]]).T


@pytest.mark.parametrize("chunks", [None, (4, 1), 1], ids=CHUNK_IDS)
def test_power_divergence(client, chunks):
    f = mt.tensor(F_OBS, chunk_size=chunks)
    pairs = []
    for lambda_ in (None, "log-likelihood", "freeman-tukey", "mod-log-likelihood", "neyman", "cressie-read", 0.7):
        pairs.append((mt.stats.power_divergence(f, lambda_=lambda_), st.power_divergence(F_OBS, lambda_=lambda_)))
        pairs.append((mt.stats.power_divergence(f, lambda_=lambda_, axis=None, ddof=1),
                      st.power_divergence(F_OBS, lambda_=lambda_, axis=None, ddof=1)))
    _check_all(pairs)


def test_chisquare(client):
    obs = mt.tensor([16, 18, 16, 14, 12, 12], chunk_size=4)
    _check(mt.stats.chisquare(obs), st.chisquare([16, 18, 16, 14, 12, 12]))
    _check(mt.stats.chisquare(obs, f_exp=[16, 16, 16, 16, 16, 8]),
           st.chisquare([16, 18, 16, 14, 12, 12], f_exp=[16, 16, 16, 16, 16, 8]))
    fexp = [[16, 16, 16, 16, 16, 8], [8, 20, 20, 16, 12, 12]]
    _check(mt.stats.chisquare(obs, f_exp=mt.tensor(fexp, chunk_size=(1, 5)), axis=1),
           st.chisquare([16, 18, 16, 14, 12, 12], f_exp=fexp, axis=1))
    _check(mt.stats.chisquare(mt.tensor(F_OBS, chunk_size=2), ddof=1), st.chisquare(F_OBS, ddof=1))
    u, x = _unknown(RNG.uniform(1, 5, 20), 6)
    _check(mt.stats.chisquare(u), st.chisquare(x))
    # scipy's check that observed and expected frequencies have the same sum
    with pytest.raises(ValueError):
        st.chisquare([16, 18, 16, 14, 12, 12], f_exp=[16, 16, 16, 16, 16, 80])
    with pytest.raises(ValueError, match="sum of the observed frequencies"):
        mt.stats.chisquare(obs, f_exp=[16, 16, 16, 16, 16, 80]).execute()
    _check(mt.stats.chisquare(obs, f_exp=[16, 16, 16, 16, 16, 80], sum_check=False),
           st.chisquare([16, 18, 16, 14, 12, 12], f_exp=[16, 16, 16, 16, 16, 80], sum_check=False))
    with pytest.raises(ValueError, match="invalid string for lambda_"):
        mt.stats.power_divergence(obs, lambda_="bogus")


@pytest.mark.parametrize("chunks", [None, 3, 1], ids=CHUNK_IDS)
def test_entropy(client, chunks):
    p = RNG.uniform(0, 1, (5, 3))
    q = RNG.uniform(0, 1, (5, 3))
    tp, tq = mt.tensor(p, chunk_size=chunks), mt.tensor(q, chunk_size=chunks)
    u, xu = _unknown(RNG.uniform(-1, 1, 12), 5)
    pairs = [(mt.stats.entropy(mt.tensor([1, 2, 3, 4], chunk_size=chunks)), st.entropy([1, 2, 3, 4])),
             (mt.stats.entropy(u + 1), st.entropy(xu + 1))]
    for kw in ({}, {"base": 2}, {"axis": 1}, {"axis": None}):
        pairs.append((mt.stats.entropy(tp, **kw), st.entropy(p, **kw)))
        pairs.append((mt.stats.entropy(tp, tq, **kw), st.entropy(p, q, **kw)))
    execute(*[r for r, _ in pairs])
    for r, e in pairs:
        assert r.dtype == e.dtype and r.shape == np.shape(e)
        got = r.fetch()
        assert np.shape(got) == np.shape(e)
        np.testing.assert_allclose(got, e, rtol=1e-12)
    with pytest.raises(ValueError, match="base"):
        mt.stats.entropy(tp, base=-1)


@pytest.mark.parametrize("chunk", [None, 4, 1], ids=CHUNK_IDS)
def test_ks(client, chunk):
    x = RNG.normal(0.2, 1, 9)
    y = RNG.normal(0.0, 1.3, 7)
    tx, ty = mt.tensor(x, chunk_size=chunk), mt.tensor(y, chunk_size=chunk)
    pairs = []
    for alternative in ("two-sided", "less", "greater"):
        pairs.append((mt.stats.ks_1samp(tx, st.norm.cdf, alternative=alternative),
                      st.ks_1samp(x, st.norm.cdf, alternative=alternative)))
        pairs.append((mt.stats.ks_2samp(tx, ty, alternative=alternative), st.ks_2samp(x, y, alternative=alternative)))
    _check_all(pairs)


def test_ks_modes_and_unknown_lengths(client):
    x = RNG.normal(0.2, 1, 15)
    y = RNG.normal(0.0, 1.3, 11)
    tx = mt.tensor(x, chunk_size=4)
    u, xu = _unknown(x, 4)
    v, yv = _unknown(y, 5)
    pairs = [(mt.stats.ks_1samp(tx, st.norm.cdf, args=(0.1, 2.0), mode=mode),
              st.ks_1samp(x, st.norm.cdf, args=(0.1, 2.0), method=mode)) for mode in ("asymp", "approx", "exact")]
    pairs += [
        (mt.stats.ks_2samp(tx, mt.tensor(y, chunk_size=3), mode="asymp"), st.ks_2samp(x, y, method="asymp")),
        (mt.stats.ks_1samp(u, st.norm.cdf), st.ks_1samp(xu, st.norm.cdf)),
        (mt.stats.ks_2samp(u, v), st.ks_2samp(xu, yv)),
    ]
    _check_all(pairs)
    with pytest.raises(ValueError):
        mt.stats.ks_2samp(tx, tx, mode="bogus")
    with pytest.raises(ValueError):
        mt.stats.ks_1samp(tx, st.norm.cdf, alternative="bogus")


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata(client, method):
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8])
    f = RNG.random(12)
    u, xu = _unknown(f, 5)
    pairs = [(mt.stats.rankdata(mt.tensor(x, chunk_size=c), method=method), st.rankdata(x, method=method))
             for c in (None, 5, 1)]
    x2 = x.reshape(3, 4)
    pairs += [(mt.stats.rankdata(mt.tensor(x2, chunk_size=(2, 3)), method=method, axis=axis),
               st.rankdata(x2, method=method, axis=axis)) for axis in (0, 1, None)]
    pairs.append((mt.stats.rankdata(u, method=method), st.rankdata(xu, method=method)))
    execute(*[r for r, _ in pairs])
    for r, e in pairs:
        assert r.dtype == e.dtype
        np.testing.assert_array_equal(r.fetch(), e)


def test_rankdata_nan_and_errors(client):
    x = np.array([1.0, np.nan, 2.0, 2.0])
    np.testing.assert_array_equal(mt.stats.rankdata(mt.tensor(x, chunk_size=3)).execute().fetch(),
                                  st.rankdata(x))
    with pytest.raises(ValueError, match="unknown method"):
        mt.stats.rankdata(x, method="bogus")
    with pytest.raises(NotImplementedError):
        mt.stats.rankdata(x, nan_policy="omit")
