"""``mt.stats``: the scipy.stats functions Mars exposes (``mars.tensor.stats``); see
:mod:`mars_dask.tensor.stats.core`."""

from .core import (
    __all__,
    chisquare,
    entropy,
    ks_1samp,
    ks_2samp,
    power_divergence,
    rankdata,
    ttest_1samp,
    ttest_ind,
    ttest_ind_from_stats,
    ttest_rel,
)
