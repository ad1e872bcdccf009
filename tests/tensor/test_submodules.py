"""mt.lib, mt.ufunc and the executable tuples returned by mt.special / mt.stats."""

import numpy as np
import pytest
import scipy.special as sp

import mars_dask.tensor as mt
from mars_dask.tensor.lib._executable import ExecutableTuple
from tests.helpers import assert_tensor


def test_submodules_and_their_names():
    import mars_dask.tensor.fft as fft
    import mars_dask.tensor.lib as lib
    import mars_dask.tensor.stats as stats
    import mars_dask.tensor.ufunc as ufunc

    assert set(fft.__all__) == {
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
        "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
    assert set(stats.__all__) == {
        "chisquare", "entropy", "ks_1samp", "ks_2samp", "power_divergence", "rankdata", "ttest_1samp",
        "ttest_ind", "ttest_ind_from_stats", "ttest_rel"}
    assert lib.index_tricks.ndindex is np.ndindex
    assert callable(lib.nd_grid)
    assert np.add in ufunc.ufunc.UFUNC_TO_TENSOR_FUNCS
    for mod in (mt.fft, mt.special, mt.stats):
        for name in mod.__all__:
            assert callable(getattr(mod, name)), (mod, name)


def test_index_tricks(client):
    it = mt.lib.index_tricks
    try:
        it.mgrid
    except NotImplementedError:  # construct.py has no mgrid: named, not an AttributeError
        with pytest.raises(NotImplementedError, match="mgrid"):
            mt.lib.nd_grid()[0:3, 0:2]
        return
    assert_tensor(mt.lib.nd_grid()[0:3, 0:2], np.mgrid[0:3, 0:2])
    assert_tensor(it.mgrid[-1:1:5j], np.mgrid[-1:1:5j])
    o = mt.lib.nd_grid(sparse=True)[0:3, 0:4]
    for a, e in zip(o, np.ogrid[0:3, 0:4]):
        assert_tensor(a, e)
    assert_tensor(it.r_[mt.tensor([1, 2]), 0, [5, 6]], np.r_[[1, 2], 0, [5, 6]])
    assert_tensor(it.c_[mt.tensor([1, 2]), [3, 4]], np.c_[[1, 2], [3, 4]])
    with pytest.raises(AttributeError):
        it.bogus_name


def test_numpy_ufuncs_on_tensors(client):
    x = np.linspace(-2, 3, 11)
    t = mt.tensor(x, chunk_size=4)
    r = np.sin(t)
    assert isinstance(r, mt.Tensor)
    assert_tensor(r, np.sin(x), rtol=1e-12)
    got = np.add.reduce(t).execute().fetch()
    assert np.ndim(got) == 0
    np.testing.assert_allclose(got, np.add.reduce(x), rtol=1e-12)
    assert_tensor(np.multiply.accumulate(t), np.multiply.accumulate(x), rtol=1e-12)
    # Mars's table: logaddexp.reduce/accumulate as log(sum(exp(x)))
    r = np.logaddexp.reduce(t)
    assert isinstance(r, mt.Tensor)
    np.testing.assert_allclose(r.execute().fetch(), np.logaddexp.reduce(x), rtol=1e-12)
    np.testing.assert_allclose(np.logaddexp2.accumulate(t).execute().fetch(), np.logaddexp2.accumulate(x),
                               rtol=1e-12)


def test_ufunc_at(client):
    x = np.arange(10.0)
    t = mt.tensor(x, chunk_size=3)
    np.add.at(t, [0, 4, 9], 5)
    e = x.copy()
    np.add.at(e, [0, 4, 9], 5)
    assert_tensor(t, e)
    np.negative.at(t, [1, 2])
    np.negative.at(e, [1, 2])
    assert_tensor(t, e)
    np.add.at(t, [1, 1, -1, 5], [1.0, 2.0, 3.0, 4.0])  # repeated indices: once per occurrence
    np.add.at(e, [1, 1, -1, 5], [1.0, 2.0, 3.0, 4.0])
    assert_tensor(t, e)
    np.add.at(t, slice(2, 8), 0.5)
    np.add.at(e, slice(2, 8), 0.5)
    assert_tensor(t, e)
    x2 = np.arange(24).reshape(4, 6)
    t2 = mt.tensor(x2, chunk_size=(3, 4))
    e2 = x2.copy()
    np.multiply.at(t2, ([0, 3, 3], [1, 5, 5]), 2)
    np.multiply.at(e2, ([0, 3, 3], [1, 5, 5]), 2)
    np.add.at(t2, [2, 0, 2], np.arange(6))
    np.add.at(e2, [2, 0, 2], np.arange(6))
    assert_tensor(t2, e2)
    with pytest.raises(IndexError):
        np.add.at(t, [10], 1)
    np.add.at(t2, [0], 1.5)  # numpy casts into the int array
    np.add.at(e2, [0], 1.5)
    assert_tensor(t2, e2)


def test_executable_tuple(client):
    x = np.linspace(0.1, 2, 7)
    res = mt.special.fresnel(mt.tensor(x, chunk_size=3))
    assert isinstance(res, ExecutableTuple) and len(res) == 2
    assert res.execute() is res
    got = res.fetch()
    assert isinstance(got, list)
    for g, e in zip(got, sp.fresnel(x)):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    t = mt.stats.ttest_1samp(mt.tensor(x, chunk_size=3), 1.0)
    assert t.statistic is t[0] and t.pvalue is t[1]
    assert repr(t).startswith("Ttest_1sampResult(statistic=")
    val = t.execute().fetch()
    assert type(val).__name__ == "Ttest_1sampResult" and val._fields == ("statistic", "pvalue")
    with pytest.raises(AttributeError):
        t.bogus
    assert ExecutableTuple(()).execute().fetch() == ()
