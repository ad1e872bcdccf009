"""``mt.fft``: numpy.fft's transforms, frequencies and shifts on tensors (Mars's
``mars.tensor.fft``); see :mod:`mars_dask.tensor.fft.core`."""

from .core import (
    __all__,
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)
