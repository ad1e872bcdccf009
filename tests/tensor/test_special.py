"""mt.special against scipy.special: every Mars name, values and dtypes, broadcasting,
several chunkings, unknown lengths, multi-output functions and the ufunc keywords."""

import math

import numpy as np
import pytest
import scipy.special as sp

import mars_dask.tensor as mt
from mars_dask.tensor.special.core import _SIGNATURES
from tests.helpers import assert_tensor

RNG = np.random.default_rng(1)
U = RNG.uniform(0.1, 0.9, 10)  # in (0, 1): valid for every function below
V = RNG.uniform(0.5, 3.0, 10)
N = np.arange(10) % 4


def _args(name):
    """Arguments valid for ``name``: arrays (to chunk) and scalars."""
    nargs = len(_SIGNATURES[name])
    special = {
        "yn": (N, V), "kn": (N, V), "polygamma": (N, V), "multigammaln": (V + 2, 3),
        "ellip_harm": (5.0, 8.0, 1, 1, V + 3), "ellip_harm_2": (5.0, 8.0, 1, 1, V + 3),
        "ellip_normal": (5.0, 8.0, 1, 1), "betainc": (V, V + 1, U), "betaincinv": (V, V + 1, U),
        "gammaincinv": (V, U), "gammainccinv": (V, U), "hyp2f1": (V, 1.5, 3.0, -U),
        "ellipkinc": (U, U), "ellipeinc": (U, U), "elliprj": (V, V + 1, V + 2, U + 1),
        "voigt_profile": (U, V, 0.5), "wofz": (U + 1j * V,),
    }
    if name in special:
        return special[name]
    return (V, U, V + 1, U + 2)[:nargs]


NAMES = sorted(_SIGNATURES)


def test_every_mars_name_is_there():
    import mars_dask.tensor.special as mts

    for name in ("gammaln", "erf", "erfc", "entr", "rel_entr", "xlogy", "betaln", "airy", "fresnel",
                 "elliprj", "ellip_harm", "multigammaln", "kl_div", "hankel2e"):
        assert name in mts.__all__
    assert all(callable(getattr(mts, n)) for n in mts.__all__)


@pytest.mark.parametrize("name", NAMES)
def test_matches_scipy(client, name):
    args = _args(name)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    if not arrays:  # ellip_normal takes scalars: broadcast one against an array
        args = (np.full(10, args[0]),) + tuple(args[1:])
        arrays = [0]
    expected = getattr(sp, name)(*args)
    for chunks in (None, 3, 1):
        targs = [mt.tensor(a, chunk_size=chunks) if i in arrays else a for i, a in enumerate(args)]
        res = getattr(mt.special, name)(*targs)
        if isinstance(expected, tuple):
            assert len(res) == len(expected)
            res.execute()
            got = res.fetch()
            for r, g, e in zip(res, got, expected):
                assert r.dtype == e.dtype
                np.testing.assert_allclose(g, e, rtol=1e-12)
        else:
            assert_tensor(res, expected, rtol=1e-12)


def test_broadcasting_and_weak_scalars(client):
    x = RNG.uniform(0.1, 2, (4, 5))
    t = mt.tensor(x, chunk_size=(3, 2))
    assert_tensor(mt.special.xlogy(t, mt.tensor(x[0], chunk_size=2)), sp.xlogy(x, x[0]), rtol=1e-12)
    assert_tensor(mt.special.jv(2, t), sp.jv(2, x), rtol=1e-12)
    f4 = x.astype(np.float32)
    t4 = mt.tensor(f4, chunk_size=2)
    assert_tensor(mt.special.gammaln(t4), sp.gammaln(f4), rtol=1e-6)
    assert_tensor(mt.special.xlogy(2, t4), sp.xlogy(2, f4), rtol=1e-6)
    assert_tensor(mt.special.erf(mt.tensor(np.arange(6), chunk_size=4)), sp.erf(np.arange(6)), rtol=1e-12)
    assert_tensor(mt.special.erf([0.5, 1.0]), sp.erf([0.5, 1.0]), rtol=1e-12)


def test_unknown_length(client):
    x = RNG.random(30)
    t = mt.tensor(x, chunk_size=7)
    u = t[t > 0.5]
    r = mt.special.gammaln(u)
    assert math.isnan(r.shape[0])
    assert_tensor(r, sp.gammaln(x[x > 0.5]), rtol=1e-12)
    assert_tensor(mt.special.rel_entr(u, u + 1), sp.rel_entr(x[x > 0.5], x[x > 0.5] + 1), rtol=1e-12)
    s, c = mt.special.fresnel(u).execute().fetch()
    es, ec = sp.fresnel(x[x > 0.5])
    np.testing.assert_allclose(s, es, rtol=1e-12)
    np.testing.assert_allclose(c, ec, rtol=1e-12)


def test_0d(client):
    r = mt.special.erf(0.5)
    assert r.shape == ()
    assert float(r.execute().fetch()) == float(sp.erf(0.5))


def test_ufunc_keywords(client):
    x = np.linspace(-1, 1, 9)
    t = mt.tensor(x, chunk_size=4)
    # dtype= computes in that dtype, as scipy
    r = mt.special.erf(t, dtype=np.float32)
    expected = sp.erf(x, dtype=np.float32)
    assert_tensor(r, expected, rtol=1e-6)
    # out= and where=
    out = mt.tensor(np.full(9, -5.0), chunk_size=3)
    res = mt.special.erf(t, out=out, where=t > 0)
    assert res is out
    expected = np.full(9, -5.0)
    sp.erf(x, out=expected, where=x > 0)
    assert_tensor(out, expected, rtol=1e-12)
    out32 = mt.zeros(9, dtype=np.float32, chunk_size=5)
    mt.special.gammaln(t + 2, out=out32)
    assert_tensor(out32, sp.gammaln(x + 2).astype(np.float32), rtol=1e-6)
    # multi-output out=
    o1, o2 = mt.zeros(9, chunk_size=4), mt.zeros(9, chunk_size=4)
    mt.special.fresnel(t, out=(o1, o2))
    es, ec = sp.fresnel(x)
    assert_tensor(o1, es, rtol=1e-12)
    assert_tensor(o2, ec, rtol=1e-12)


def test_keyword_arguments_and_errors(client):
    x = np.linspace(1, 3, 5)
    t = mt.tensor(x, chunk_size=2)
    assert_tensor(mt.special.jv(v=1, z=t), sp.jv(1, x), rtol=1e-12)
    assert_tensor(mt.special.ellip_harm(5.0, 8.0, 1, 1, t + 3, signm=-1), sp.ellip_harm(5.0, 8.0, 1, 1, x + 3, -1),
                  rtol=1e-12)
    with pytest.raises(TypeError):
        mt.special.erf(t, t)
    with pytest.raises(TypeError):
        mt.special.jv(t)
    with pytest.raises(TypeError):
        mt.special.erf(t, bogus=1)
    with pytest.raises(ValueError):
        sp.multigammaln(x, 2.5)
    with pytest.raises(ValueError):
        mt.special.multigammaln(t, 2.5)
    with pytest.raises(TypeError):
        mt.special.erf(t, where=t > 1)  # numpy leaves the rest undefined: needs out=


def test_importing_mt_imports_no_scipy_nor_numpy_submodules():
    """Every worker imports mars_dask.tensor at its first task (a process started by
    execute() pays it in the first job): scipy.special (~50 ms) is imported at the first
    mt.special call, and numpy's lazy submodules (f2py, ma, testing: ~40 ms) not at all."""
    import subprocess
    import sys

    code = ("import sys, mars_dask.tensor; "
            "print(sorted(m for m in ('scipy.special', 'numpy.f2py', 'numpy.ma', 'numpy.testing') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_function_the_installed_scipy_lacks_says_so_when_called(monkeypatch):
    monkeypatch.delattr(sp, "gammaln")
    with pytest.raises(NotImplementedError, match="scipy.special.gammaln"):
        mt.special.gammaln(mt.tensor(V))
