"""mt.fft against numpy.fft: values, dtypes, shapes, chunk layouts and errors."""

import math
import warnings

import numpy as np
import pytest

import mars_dask.tensor as mt
from mars_dask.session import execute
from tests.helpers import assert_tensor

RNG = np.random.default_rng(0)
C2 = RNG.normal(size=(6, 8)) + 1j * RNG.normal(size=(6, 8))
R2 = RNG.normal(size=(6, 8))
R3 = RNG.normal(size=(3, 4, 5))
X1 = RNG.random(25)

# one chunk, uneven chunks, 1-element chunks
CHUNKS = [None, (4, 3), 1]

CASES = [
    ("fft", C2, {}),
    ("fft", R2, {"n": 5, "axis": 0}),
    ("ifft", C2, {"n": 11, "norm": "ortho"}),
    ("rfft", R2, {}),
    ("rfft", R2, {"n": 7, "axis": 0, "norm": "forward"}),
    ("irfft", C2, {}),
    ("irfft", C2, {"n": 9, "axis": 0}),
    ("hfft", C2, {}),
    ("hfft", C2, {"n": 5, "norm": "ortho"}),
    ("ihfft", R2, {"axis": 0}),
    ("fftn", C2, {}),
    ("fftn", C2, {"s": (4, 10), "axes": (1, 0)}),
    ("fftn", C2, {"axes": (0, 0)}),
    ("ifftn", C2, {"axes": (0,), "norm": "forward"}),
    ("fft2", R2, {}),
    ("ifft2", C2, {"s": (3, 3)}),
    ("rfft2", R2, {}),
    ("irfft2", C2, {"s": (6, 9)}),
    ("rfftn", R2, {"axes": (0,)}),
    ("irfftn", C2, {}),
    ("irfftn", C2, {"s": (5, -1), "axes": (0, 1)}),
]


def _check_all(pairs, rtol=1e-10, atol=1e-12):
    """``(tensor, numpy result)`` pairs: metadata before, values after one joint execute."""
    for r, e in pairs:
        assert r.dtype == e.dtype and r.ndim == e.ndim
        assert all(math.isnan(a) or a == b for a, b in zip(r.shape, e.shape)), (r.shape, e.shape)
    execute(*[r for r, _ in pairs])
    for r, e in pairs:
        got = r.fetch()
        assert got.dtype == e.dtype and got.shape == e.shape
        np.testing.assert_allclose(got, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,data,kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_transforms_match_numpy(client, name, data, kw):
    expected = getattr(np.fft, name)(data, **kw)
    # one chunk, uneven chunks, 1-element chunks
    _check_all([(getattr(mt.fft, name)(mt.tensor(data, chunk_size=c), **kw), expected) for c in CHUNKS])


def test_3d_transforms(client):
    t = mt.tensor(R3, chunk_size=(2, 3, 2))
    assert_tensor(mt.fft.rfftn(t), np.fft.rfftn(R3), rtol=1e-10, atol=1e-12)
    assert_tensor(mt.fft.fftn(t, axes=(0, 2)), np.fft.fftn(R3, axes=(0, 2)), rtol=1e-10, atol=1e-12)
    spec = np.fft.rfftn(R3)
    back = mt.fft.irfftn(mt.tensor(spec, chunk_size=2), s=R3.shape, axes=(0, 1, 2))
    assert_tensor(back, np.fft.irfftn(spec, s=R3.shape, axes=(0, 1, 2)), rtol=1e-10, atol=1e-12)


def test_only_the_transformed_axis_is_rechunked(client):
    t = mt.tensor(R2, chunk_size=(4, 3))
    r = mt.fft.fft(t, axis=1)
    r._ensure_tiled()
    assert r.nsplits == ((4, 2), (8,))
    r = mt.fft.rfft(t, axis=0)
    r._ensure_tiled()
    assert r.nsplits == ((4,), (3, 3, 2))
    assert_tensor(r, np.fft.rfft(R2, axis=0), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32, np.bool_])
def test_dtypes_follow_numpy(client, dtype):
    x = (R2 * 3).astype(dtype) if dtype is not np.complex64 else C2.astype(dtype)
    t = mt.tensor(x, chunk_size=(4, 3))
    for name in ("fft", "ifft", "hfft") + (("rfft", "ihfft") if dtype is not np.complex64 else ("irfft",)):
        expected = getattr(np.fft, name)(x)
        res = getattr(mt.fft, name)(t)
        assert res.dtype == expected.dtype, (name, res.dtype, expected.dtype)
    assert_tensor(mt.fft.fft(t), np.fft.fft(x), rtol=1e-5, atol=1e-5)


def test_unknown_length_input(client):
    t = mt.tensor(X1, chunk_size=6)
    u = t[t > 0.5]
    assert math.isnan(u.shape[0])
    x = X1[X1 > 0.5]
    r = mt.fft.fft(u)
    assert math.isnan(r.shape[0])
    assert_tensor(r, np.fft.fft(x), rtol=1e-10, atol=1e-12)
    assert_tensor(mt.fft.rfft(u), np.fft.rfft(x), rtol=1e-10, atol=1e-12)
    r = mt.fft.irfft(u, n=8)
    assert r.shape == (8,)
    assert_tensor(r, np.fft.irfft(x, n=8), rtol=1e-10, atol=1e-12)
    assert_tensor(mt.fft.fftshift(u), np.fft.fftshift(x))
    assert_tensor(mt.fft.ifftshift(u), np.fft.ifftshift(x))


@pytest.mark.parametrize("axes", [None, 0, -1, (0, 1), (1, 1), ()])
@pytest.mark.parametrize("chunks", [None, (4, 3), 1], ids=["one", "uneven", "ones"])
def test_shifts(client, axes, chunks):
    x = np.arange(7 * 6).reshape(7, 6)
    t = mt.tensor(x, chunk_size=chunks)
    r = mt.fft.fftshift(t, axes=axes)
    assert_tensor(r, np.fft.fftshift(x, axes=axes))
    assert_tensor(mt.fft.ifftshift(t, axes=axes), np.fft.ifftshift(x, axes=axes))
    if chunks is not None:
        assert r.nsplits == t.nsplits  # chunk by chunk: no gathering


def test_shift_of_empty(client):
    assert_tensor(mt.fft.fftshift(mt.tensor(np.zeros((0, 3)), chunk_size=2)), np.fft.fftshift(np.zeros((0, 3))))


@pytest.mark.parametrize("n,d", [(8, 1.0), (9, 0.1), (1, 2.0), (10, np.float32(0.5))])
def test_frequencies(client, n, d):
    assert_tensor(mt.fft.fftfreq(n, d, chunk_size=3), np.fft.fftfreq(n, d), exact=True)
    assert_tensor(mt.fft.rfftfreq(n, d, chunk_size=2), np.fft.rfftfreq(n, d), exact=True)
    assert_tensor(mt.fft.fftfreq(n, d), np.fft.fftfreq(n, d), exact=True)


def test_roundtrip_with_chunks(client):
    t = mt.tensor(C2, chunk_size=(1, 3))
    assert_tensor(mt.fft.ifft(mt.fft.fft(t)), C2, rtol=1e-10, atol=1e-12)


def test_input_from_concatenate(client):
    # concatenate reuses its inputs' chunks (whose .index is their place in the inputs)
    t = mt.concatenate([mt.tensor(R2[:3], chunk_size=(3, 8)), mt.tensor(R2[3:], chunk_size=(3, 8))])
    assert_tensor(mt.fft.fft(t), np.fft.fft(R2), rtol=1e-10, atol=1e-12)
    assert_tensor(mt.fft.rfft(t, axis=0), np.fft.rfft(R2, axis=0), rtol=1e-10, atol=1e-12)


def test_errors_are_numpys():
    t = mt.tensor(R2, chunk_size=3)
    ct = mt.tensor(C2, chunk_size=3)
    with pytest.raises(ValueError, match="Invalid norm"):
        mt.fft.fft(t, norm="bogus")
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        mt.fft.fft(t, n=0)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        mt.fft.irfft(mt.tensor(np.ones((3, 1)), chunk_size=2))
    with pytest.raises(np.exceptions.AxisError):
        mt.fft.fft(t, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        mt.fft.fftn(t, axes=(0, -3))
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        mt.fft.fftn(t, s=(2, 2), axes=(0,))
    with pytest.raises(TypeError):
        np.fft.rfft(C2)
    with pytest.raises(TypeError):
        mt.fft.rfft(ct)
    with pytest.raises(ValueError, match="n should be an integer"):
        mt.fft.fftfreq(2.5)
    with pytest.raises(np.exceptions.AxisError):
        mt.fft.fftshift(t, axes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(DeprecationWarning, match="axes"):
            np.fft.fftn(R2, s=(2, 2))
        with pytest.raises(DeprecationWarning, match="axes"):
            mt.fft.fftn(t, s=(2, 2))
