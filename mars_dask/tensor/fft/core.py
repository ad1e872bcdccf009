"""Discrete Fourier transforms (``mt.fft``): numpy.fft's functions on tensors.

A transform needs each transformed axis whole, so those axes are re-cut into one chunk
(as Mars does) while the other axes keep their chunks (smaller ones if a chunk would
exceed the chunk-size limit); every chunk is then transformed by numpy.fft itself, so
values and dtypes are numpy's (numpy 2 keeps complex64 for float32 input).  Shapes,
arguments and errors are checked when the expression is built, as numpy does.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ...tiling.core import ensure_known, has_unknown
from ..core import Tensor, TensorData, TensorOperand, astensor
from ..utils import normalize_chunk_size, offsets

try:
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - numpy < 1.25
    from numpy import AxisError

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
    "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = (None, "backward", "ortho", "forward")


def _isnan(x) -> bool:
    return isinstance(x, float) and x != x


def _check_norm(norm):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim


def _check_n(n):
    if not _isnan(n) and n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")


# ---- output lengths of the 1-d transforms (numpy.fft's rules) ----------------------------

def _len_c2c(m, n):
    n = m if n is None else n
    _check_n(n)
    return n


def _len_r2c(m, n):  # rfft, ihfft
    n = m if n is None else n
    _check_n(n)
    return n if _isnan(n) else n // 2 + 1


def _len_c2r(m, n):  # irfft, hfft
    n = (m - 1) * 2 if n is None else n
    _check_n(n)
    return n


_LEN_1D = {"fft": _len_c2c, "ifft": _len_c2c, "rfft": _len_r2c, "ihfft": _len_r2c,
           "irfft": _len_c2r, "hfft": _len_c2r}


def _cook_nd(shape: tuple, s, axes, invreal: bool, warn: bool = True):
    """numpy.fft's ``_cook_nd_args`` on a shape: the lengths ``s`` and ``axes`` (normalized)."""
    ndim = len(shape)
    if axes is not None:
        axes = [_axis(a, ndim) for a in axes]
    if s is None:
        shapeless = True
        s = list(shape) if axes is None else [shape[a] for a in axes]
    else:
        shapeless = False
        s = list(s)
    if axes is None:
        if not shapeless and warn:
            warnings.warn(
                "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future "
                "version of NumPy, this will raise an error and `s[i]` will correspond to the size along the "
                "transformed axis specified by `axes[i]`. To retain current behaviour, pass a sequence "
                "[0, ..., k-1] to `axes` for an array of dimension k.", DeprecationWarning, stacklevel=4)
        axes = [_axis(a, ndim) for a in range(-len(s), 0)]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (shape[axes[-1]] - 1) * 2
    if any(x is None for x in s) and warn:
        warnings.warn(
            "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 and will raise an "
            "error in a future version of NumPy. To use the default behaviour of the corresponding 1-D "
            "transform, pass the value matching the default for its `n` parameter. To use the default "
            "behaviour for every axis, the `s` argument can be omitted.", DeprecationWarning, stacklevel=4)
    s = [shape[a] if (x is not None and not _isnan(x) and x == -1) else x for x, a in zip(s, axes)]
    return s, axes


def _nd_steps(name: str, s: list, axes: list) -> list[tuple[str, object, int]]:
    """The 1-d transforms numpy applies, in its order, for an n-d transform."""
    steps = list(range(len(axes)))
    if name in ("fftn", "ifftn"):
        one = name[:-1]
        return [(one, s[i], axes[i]) for i in reversed(steps)]
    if name == "rfftn":
        return [("rfft", s[-1], axes[-1])] + [("fft", s[i], axes[i]) for i in reversed(steps[:-1])]
    # irfftn
    return [("ifft", s[i], axes[i]) for i in steps[:-1]] + [("irfft", s[-1], axes[-1])]


def _out_shape(name: str, shape: tuple, kw: dict, warn: bool = False) -> tuple:
    shape = list(shape)
    if name in _LEN_1D:
        ax = kw["axis"]
        shape[ax] = _LEN_1D[name](shape[ax], kw["n"])
        return tuple(shape)
    s, axes = _cook_nd(tuple(shape), kw["s"], kw["axes"], name == "irfftn", warn=warn)
    for one, n, ax in _nd_steps(name, s, axes):
        shape[ax] = _LEN_1D[one](shape[ax], n)
    return tuple(shape)


# ---- the operand ------------------------------------------------------------------------

def _fft_kernel(x, name, kw):
    return getattr(np.fft, name)(x, **kw)


def _rechunk_now(t: TensorData, nsplits) -> TensorData:
    from ..rechunk import rechunked_now

    return rechunked_now(t, nsplits)


def whole_axes(t: TensorData, axes, itemsize: int) -> TensorData:
    """``t`` (tiled, known shape) with ``axes`` in one chunk each, tiled on the spot.  The
    other axes keep their chunks unless a chunk would exceed the chunk-size limit; then
    they get automatic sizes for that limit (with ``itemsize`` bytes per element)."""
    axes = set(axes)
    if all(len(t.nsplits[a]) == 1 for a in axes):
        return t
    keep = tuple((int(t.shape[a]),) if a in axes else tuple(t.nsplits[a]) for a in range(t.ndim))
    biggest = 1
    for sp in keep:
        biggest *= max(sp) if sp else 0
    auto = normalize_chunk_size(t.shape, {a: int(t.shape[a]) for a in axes}, itemsize)
    auto_biggest = 1
    for sp in auto:
        auto_biggest *= max(sp) if sp else 0
    return _rechunk_now(t, keep if biggest <= auto_biggest else auto)


class TensorFFT(TensorOperand):
    """One numpy.fft transform; ``kw`` holds numpy's keyword arguments (normalized axes)."""

    _op_name = "fft"

    def tile(self):
        (inp,) = self.inputs
        if any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        name, kw = self.name, dict(self.kw)
        if name in _LEN_1D:
            axes = [kw["axis"]]
        else:
            s, axes = _cook_nd(tuple(inp.shape), kw["s"], kw["axes"], name == "irfftn", warn=False)
            kw["axes"] = axes
            if kw["s"] is not None:
                kw["s"] = s
        out = self.outputs[0]
        inp = whole_axes(inp, axes, max(inp.dtype.itemsize, out.dtype.itemsize if out is not None else 16))
        chunks = []
        for idx in inp.chunk_grid():
            c = inp.chunk_at(idx)  # (c.index may be its index in another tensor: concatenate)
            chunks.append(self.new_chunk(idx, _out_shape(name, c.shape, self.kw), _fft_kernel,
                                         (c, name, kw), inputs=[c]))
        full = _out_shape(name, tuple(inp.shape), self.kw)
        nsplits = tuple((full[a],) if a in axes else tuple(inp.nsplits[a]) for a in range(inp.ndim))
        return [(chunks, nsplits)]


def _probe_dtype(name: str, a: Tensor, axes: list, norm) -> np.dtype:
    """The result dtype, asking numpy on a tiny array (raises numpy's error for a dtype
    numpy.fft does not take)."""
    shape = tuple(2 if ax in axes else 1 for ax in range(a.ndim))
    probe = np.ones(shape, dtype=a.dtype)
    func = getattr(np.fft, name)
    if name in _LEN_1D:
        return func(probe, axis=axes[0], norm=norm).dtype
    return func(probe, axes=axes, norm=norm).dtype


def _fft1(name, a, n, axis, norm):
    a = astensor(a)
    _check_norm(norm)
    if a.ndim == 0:
        raise AxisError(axis, 0)
    ax = _axis(axis, a.ndim)
    if n is not None:
        n = operator.index(n)
    kw = {"n": n, "axis": ax, "norm": norm}
    shape = _out_shape(name, a.shape, kw)
    dtype = _probe_dtype(name, a, [ax], norm)
    return TensorFFT([a.data], name=name, kw=kw).new_tensor(shape, dtype)


def _fftnd(name, a, s, axes, norm):
    a = astensor(a)
    _check_norm(norm)
    if s is not None:
        s = [x if x is None else operator.index(x) for x in s]
    if axes is not None:
        axes = [_axis(x, a.ndim) for x in axes]
    kw = {"s": s, "axes": axes, "norm": norm}
    shape = _out_shape(name, a.shape, kw, warn=True)
    _, used = _cook_nd(a.shape, s, axes, name == "irfftn", warn=False)
    if not used:  # numpy: a transform over no axis returns the input (as it is)
        return a.copy()
    dtype = _probe_dtype(name, a, used, norm)
    return TensorFFT([a.data], name=name, kw=kw).new_tensor(shape, dtype)


def fft(a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform (``numpy.fft.fft``)."""
    return _fft1("fft", a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """One-dimensional inverse discrete Fourier transform (``numpy.fft.ifft``)."""
    return _fft1("ifft", a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform of real input (``numpy.fft.rfft``)."""
    return _fft1("rfft", a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """Inverse of :func:`rfft` (``numpy.fft.irfft``)."""
    return _fft1("irfft", a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """FFT of a signal with Hermitian symmetry (``numpy.fft.hfft``)."""
    return _fft1("hfft", a, n, axis, norm)


def ihfft(a, n=None, axis=-1, norm=None):
    """Inverse FFT of a signal with Hermitian symmetry (``numpy.fft.ihfft``)."""
    return _fft1("ihfft", a, n, axis, norm)


def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform (``numpy.fft.fftn``)."""
    return _fftnd("fftn", a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """N-dimensional inverse discrete Fourier transform (``numpy.fft.ifftn``)."""
    return _fftnd("ifftn", a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform of real input (``numpy.fft.rfftn``)."""
    return _fftnd("rfftn", a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of :func:`rfftn` (``numpy.fft.irfftn``)."""
    return _fftnd("irfftn", a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional discrete Fourier transform (``numpy.fft.fft2``)."""
    return _fftnd("fftn", a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional inverse discrete Fourier transform (``numpy.fft.ifft2``)."""
    return _fftnd("ifftn", a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional FFT of real input (``numpy.fft.rfft2``)."""
    return _fftnd("rfftn", a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of :func:`rfft2` (``numpy.fft.irfft2``)."""
    return _fftnd("irfftn", a, s, axes, norm)


# ---- sample frequencies -------------------------------------------------------------------

def _fftfreq_kernel(i, n, half, val):
    return np.where(i < half, i, i - n) * val


def _rfftfreq_kernel(i, val):
    return i * val


def _check_int_n(n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise ValueError("n should be an integer")


def fftfreq(n, d=1.0, gpu=None, chunk_size=None):
    """The sample frequencies of a length-``n`` FFT with sample spacing ``d``
    (``numpy.fft.fftfreq``); ``chunk_size`` as for other tensor constructors."""
    from ..arithmetic import elementwise
    from ..datasource import arange

    _check_int_n(n)
    val = 1.0 / (n * d)
    half = (n - 1) // 2 + 1
    return elementwise(_fftfreq_kernel, arange(n, chunk_size=chunk_size, gpu=gpu), n, half, val)


def rfftfreq(n, d=1.0, gpu=None, chunk_size=None):
    """The sample frequencies of :func:`rfft` (``numpy.fft.rfftfreq``)."""
    from ..arithmetic import elementwise
    from ..datasource import arange

    _check_int_n(n)
    val = 1.0 / (n * d)
    return elementwise(_rfftfreq_kernel, arange(n // 2 + 1, chunk_size=chunk_size, gpu=gpu), val)


# ---- shifts (a roll along each axis: chunk by chunk, no gathering) ------------------------

def _roll_plan(splits: tuple, shift: int) -> list[list[tuple[int, slice]]]:
    """For each output chunk along one axis (same lengths as ``splits``) of
    ``np.roll(x, shift)``: the ``(input chunk index, slice)`` pieces, in order."""
    n = sum(splits)
    if n == 0:
        return [[(i, slice(0, 0))] for i in range(len(splits))]
    start = (-shift) % n  # out[p] = in[(p + start) % n]
    off = offsets(splits)
    # the input as a sequence of (chunk, lo, hi) segments in rotated order
    segs = []
    for lo_g, hi_g in ((start, n), (0, start)):
        for i in range(len(splits)):
            lo, hi = max(lo_g, off[i]), min(hi_g, off[i + 1])
            if hi > lo:
                segs.append((i, lo - off[i], hi - off[i]))
    plan, pos, k = [], 0, 0
    seg_pos = 0  # output position where segs[k] starts
    for length in splits:
        pieces, stop = [], pos + length
        while pos < stop:
            i, lo, hi = segs[k]
            a = lo + (pos - seg_pos)
            take = min(hi - a, stop - pos)
            pieces.append((i, slice(a, a + take)))
            pos += take
            if a + take == hi:
                seg_pos += hi - lo
                k += 1
        if not pieces:
            pieces.append((0, slice(0, 0)))
        plan.append(pieces)
    return plan


class TensorRoll(TensorOperand):
    """``np.roll`` by ``shifts`` (a dict axis -> shift); the output keeps the input's
    chunk lengths.  ``shifts`` may be a callable of the (known) shape."""

    _op_name = "roll"

    def tile(self):
        from ..rechunk import rechunk_chunks

        (inp,) = self.inputs
        if any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        shifts = self.shifts(tuple(inp.shape)) if callable(self.shifts) else self.shifts
        plans = []
        for ax in range(inp.ndim):
            sh = shifts.get(ax, 0)
            if sh % max(1, int(inp.shape[ax])) == 0:
                plans.append([[(i, slice(None))] for i in range(len(inp.nsplits[ax]))])
            else:
                plans.append(_roll_plan(tuple(inp.nsplits[ax]), sh))
        return [rechunk_chunks(self, inp, tuple(tuple(s) for s in inp.nsplits), plans=plans)]


def _shift_axes(x, axes):
    if axes is None:
        return list(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        return [_axis(axes, x.ndim)]
    return [_axis(a, x.ndim) for a in axes]


class _Shifts:
    """The per-axis shifts of fftshift/ifftshift, computed from the (known) shape."""

    def __init__(self, axes, inverse):
        self.axes, self.inverse = axes, inverse

    def __dask_tokenize__(self):
        return ("fftshift", tuple(self.axes), self.inverse)

    def __call__(self, shape):
        out: dict = {}
        for a in self.axes:
            out[a] = out.get(a, 0) + (-(shape[a] // 2) if self.inverse else shape[a] // 2)
        return out


def _shift(x, axes, inverse):
    x = astensor(x)
    axes = _shift_axes(x, axes)
    shifts = _Shifts(axes, inverse)
    if not has_unknown(x.shape):
        shifts = shifts(x.shape)
    return TensorRoll([x.data], shifts=shifts).new_tensor(x.shape, x.dtype)


def fftshift(x, axes=None):
    """Shift the zero-frequency component to the center (``numpy.fft.fftshift``)."""
    return _shift(x, axes, False)


def ifftshift(x, axes=None):
    """The inverse of :func:`fftshift` (``numpy.fft.ifftshift``)."""
    return _shift(x, axes, True)
