"""scipy.stats' tests and helpers that Mars exposes (``mt.stats``), built from tensor
operations: chunked reductions give the sufficient statistics (counts, means, variances,
sums), and a final element-wise step applies scipy's formulas and distributions
(``scipy.special.stdtr``/``chdtrc``, ``scipy.stats.distributions``), so the values are
scipy's.  Tests return an executable tuple with Mars's result names (``statistic``,
``pvalue``); ``.execute().fetch()`` gives the named tuple of values.

Inputs of unknown length (e.g. ``t[t > 0.5]``) work: the sample sizes are then counted
lazily.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...tiling.core import has_unknown
from ..core import Tensor, TensorOperand, astensor
from ..lib._executable import ExecutableTuple

__all__ = [
    "chisquare", "entropy", "ks_1samp", "ks_2samp", "power_divergence", "rankdata", "ttest_1samp",
    "ttest_ind", "ttest_ind_from_stats", "ttest_rel",
]

_ALTERNATIVES = ("two-sided", "less", "greater")


def _ew(func, *args, **kwargs):
    from ..arithmetic import elementwise

    return elementwise(func, *args, **kwargs)


def _result(items, name):
    return ExecutableTuple(items, ("statistic", "pvalue"), name)


def _floating(t: Tensor, *others) -> Tensor:
    """scipy's ``xp_promote(..., force_floating=True)``: integers/bools become float64."""
    dt = np.result_type(t.dtype, *[o.dtype if isinstance(o, Tensor) else o for o in others])
    if dt.kind not in "fc":
        dt = np.result_type(dt, np.float64)
    return t if t.dtype == dt else t.astype(dt)


def _ones_kernel(x):
    return np.ones(x.shape, dtype=np.int64)


def _count(a: Tensor, axis):
    """The number of elements along ``axis`` (``None``: all): an int, or a lazy 0-d/n-d
    int64 tensor when the length is only known after execution."""
    n = a.size if axis is None else a.shape[axis]
    if isinstance(n, float) and math.isnan(n):
        return _ew(_ones_kernel, a, dtype=np.int64).sum(axis=axis)
    return int(n)


def _ravel_if_none(axis, *ts):
    if axis is None:
        return 0, [t.ravel() for t in ts]
    return axis, list(ts)


def _check_alternative(alternative):
    if alternative not in _ALTERNATIVES:
        raise ValueError("`alternative` must be 'less', 'greater', or 'two-sided'.")


def _check_nan_policy(nan_policy):
    if nan_policy != "propagate":
        if nan_policy in ("omit", "raise"):
            raise NotImplementedError(
                f"nan_policy={nan_policy!r} is not supported (as in Mars): only 'propagate' is")
        raise ValueError("nan_policy must be one of {'propagate', 'raise', 'omit'}")


# ---- t-tests ------------------------------------------------------------------------------

def _t_pvalue(t, df, alternative):
    from scipy import special

    df = np.asarray(df, dtype=t.dtype)
    if alternative == "less":
        return special.stdtr(df, t)
    if alternative == "greater":
        return special.stdtr(df, -t)
    return 2 * special.stdtr(df, -np.abs(t))


def _t_finish_kernel(d, denom, df, alternative):
    """scipy's ``t = d / denom`` and its p-value (``_ttest_finish``)."""
    d, denom = np.asarray(d), np.asarray(denom)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(d, denom)
    return t, np.asarray(_t_pvalue(t, df, alternative), dtype=t.dtype)


def _equal_var_denom(v1, n1, v2, n2):
    v1 = np.where(np.asarray(n1 == 1), 0.0, v1)
    v2 = np.where(np.asarray(n2 == 1), 0.0, v2)
    df = n1 + n2 - 2.0
    svar = ((n1 - 1) * v1 + (n2 - 1) * v2) / df
    denom = np.sqrt(svar * (1.0 / n1 + 1.0 / n2))
    return np.asarray(df, dtype=denom.dtype), denom


def _unequal_var_denom(v1, n1, v2, n2):
    vn1 = v1 / n1
    vn2 = v2 / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vn1 + vn2) ** 2 / (vn1 ** 2 / (n1 - 1) + vn2 ** 2 / (n2 - 1))
    df = np.where(np.isnan(df), 1.0, df)
    denom = np.sqrt(vn1 + vn2)
    return df, denom


def _ttest_ind_kernel(m1, v1, n1, m2, v2, n2, equal_var, alternative):
    m1, v1, m2, v2 = (np.asarray(x) for x in (m1, v1, m2, v2))
    with np.errstate(divide="ignore", invalid="ignore"):
        if equal_var:
            df, denom = _equal_var_denom(v1, n1, v2, n2)
        else:
            df, denom = _unequal_var_denom(v1, n1, v2, n2)
        t = np.divide(m1 - m2, denom)
    return t, np.asarray(_t_pvalue(t, df, alternative), dtype=t.dtype)


def _quiet_var(a, axis):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return a.var(axis=axis, ddof=1)


def ttest_1samp(a, popmean, axis=0, nan_policy="propagate", alternative="two-sided"):
    """The t-test for the mean of ONE group of scores (``scipy.stats.ttest_1samp``)."""
    _check_nan_policy(nan_policy)
    _check_alternative(alternative)
    a = astensor(a)
    a = _floating(a, *([popmean] if isinstance(popmean, Tensor) else []))
    axis, (a,) = _ravel_if_none(axis, a)
    n = _count(a, axis)
    d = a.mean(axis=axis) - popmean
    v = _quiet_var(a, axis)
    denom = _ew(np.sqrt, v / n)
    t, p = _ew(_t_finish_kernel, d, denom, n - 1, alternative, nout=2)
    return _result((t, p), "Ttest_1sampResult")


def ttest_rel(a, b, axis=0, nan_policy="propagate", alternative="two-sided"):
    """The t-test on TWO RELATED samples of scores (``scipy.stats.ttest_rel``)."""
    _check_nan_policy(nan_policy)
    _check_alternative(alternative)
    a, b = astensor(a), astensor(b)
    res = ttest_1samp(_floating(a, b) - _floating(b, a), 0.0, axis=axis, alternative=alternative)
    return _result(tuple(res), "Ttest_relResult")


def ttest_ind(a, b, axis=0, equal_var=True, alternative="two-sided", nan_policy="propagate"):
    """The t-test for the means of two independent samples (``scipy.stats.ttest_ind``)."""
    _check_nan_policy(nan_policy)
    _check_alternative(alternative)
    a, b = astensor(a), astensor(b)
    a, b = _floating(a, b), _floating(b, a)
    axis, (a, b) = _ravel_if_none(axis, a, b)
    n1, n2 = _count(a, axis), _count(b, axis)
    v1, v2 = _quiet_var(a, axis), _quiet_var(b, axis)
    m1, m2 = a.mean(axis=axis), b.mean(axis=axis)
    t, p = _ew(_ttest_ind_kernel, m1, v1, n1, m2, v2, n2, bool(equal_var), alternative, nout=2)
    return _result((t, p), "Ttest_indResult")


def _ttest_from_stats_kernel(mean1, std1, nobs1, mean2, std2, nobs2, equal_var, alternative):
    from scipy import stats

    r = stats.ttest_ind_from_stats(mean1, std1, nobs1, mean2, std2, nobs2, equal_var=equal_var,
                                   alternative=alternative)
    return np.asarray(r.statistic), np.asarray(r.pvalue)


def ttest_ind_from_stats(mean1, std1, nobs1, mean2, std2, nobs2, equal_var=True, alternative="two-sided"):
    """The t-test for means of two independent samples from descriptive statistics
    (``scipy.stats.ttest_ind_from_stats``, applied element-wise)."""
    _check_alternative(alternative)
    args = [x if isinstance(x, Tensor) or np.ndim(x) == 0 else astensor(x)
            for x in (mean1, std1, nobs1, mean2, std2, nobs2)]
    t, p = _ew(_ttest_from_stats_kernel, *args, bool(equal_var), alternative, nout=2)
    return _result((t, p), "Ttest_indResult")


# ---- power divergence / chi-square ----------------------------------------------------------

_POWER_DIV_LAMBDA_NAMES = {
    "pearson": 1,
    "log-likelihood": 0,
    "freeman-tukey": -0.5,
    "mod-log-likelihood": -1,
    "neyman": -2,
    "cressie-read": 2 / 3,
}


def _chi2_sf_kernel(stat, df):
    from scipy import special

    stat = np.asarray(stat)
    return np.asarray(special.chdtrc(np.asarray(df, dtype=stat.dtype), stat), dtype=stat.dtype)


def _sum_check_kernel(stat, bad, rtol):
    if np.any(bad):
        raise ValueError(
            "For each axis slice, the sum of the observed frequencies must agree with the sum of the "
            f"expected frequencies to a relative tolerance of {rtol}")
    return stat


def _rel_diff_kernel(s1, s2):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(s1 - s2) / np.minimum(s1, s2)


def _power_divergence(f_obs, f_exp, ddof, axis, lambda_, sum_check, name):
    from .. import special

    if isinstance(lambda_, str):
        if lambda_ not in _POWER_DIV_LAMBDA_NAMES:
            names = repr(list(_POWER_DIV_LAMBDA_NAMES.keys()))[1:-1]
            raise ValueError(f"invalid string for lambda_: {lambda_!r}. Valid strings are {names}")
        lambda_ = _POWER_DIV_LAMBDA_NAMES[lambda_]
    elif lambda_ is None:
        lambda_ = 1

    f_obs = astensor(f_obs)
    # scipy promotes with ddof too; a Python number is weak (NEP 50)
    ddof_dt = ddof.dtype if isinstance(ddof, Tensor) else (np.asarray(ddof).dtype if isinstance(ddof, np.ndarray)
                                                             else np.float16)
    if f_exp is not None:
        f_exp = astensor(f_exp)
        f_obs, f_exp = _floating(f_obs, f_exp, ddof_dt), _floating(f_exp, f_obs, ddof_dt)
        from ..manipulation import broadcast_arrays

        if tuple(f_obs.shape) != tuple(f_exp.shape):
            f_obs, f_exp = broadcast_arrays(f_obs, f_exp)
        axis, (f_obs, f_exp) = _ravel_if_none(axis, f_obs, f_exp)
    else:
        f_obs = _floating(f_obs, ddof_dt)
        axis, (f_obs,) = _ravel_if_none(axis, f_obs)
    if not -f_obs.ndim <= axis < f_obs.ndim:
        from numpy.exceptions import AxisError

        raise AxisError(axis, f_obs.ndim)

    bad = None
    if f_exp is not None:
        if sum_check:
            rtol = np.finfo(np.result_type(f_obs.dtype, f_exp.dtype)).eps ** 0.5
            obs_sum = f_obs.astype(np.float64).sum(axis=axis)
            exp_sum = f_exp.sum(axis=axis)
            bad = (_ew(_rel_diff_kernel, obs_sum, exp_sum) > rtol).any()
    else:
        f_exp = f_obs.mean(axis=axis, keepdims=True)

    if lambda_ == 1:
        terms = (f_obs - f_exp) ** 2 / f_exp
    elif lambda_ == 0:
        terms = 2.0 * special.xlogy(f_obs, f_obs / f_exp)
    elif lambda_ == -1:
        terms = 2.0 * special.xlogy(f_exp, f_exp / f_obs)
    else:
        terms = f_obs * ((f_obs / f_exp) ** lambda_ - 1)
        terms = terms / (0.5 * lambda_ * (lambda_ + 1))

    stat = terms.sum(axis=axis)
    if bad is not None:
        stat = _ew(_sum_check_kernel, stat, bad, rtol, dtype=stat.dtype)
    num_obs = _count(terms, axis)
    df = num_obs - 1 - ddof
    p = _ew(_chi2_sf_kernel, stat, df)
    return _result((stat, p), "Power_divergenceResult")


def power_divergence(f_obs, f_exp=None, ddof=0, axis=0, lambda_=None):
    """Cressie-Read power divergence statistic and goodness of fit test
    (``scipy.stats.power_divergence``)."""
    return _power_divergence(f_obs, f_exp, ddof, axis, lambda_, True, "power_divergence")


def chisquare(f_obs, f_exp=None, ddof=0, axis=0, *, sum_check=True):
    """One-way chi-square test (``scipy.stats.chisquare``)."""
    return _power_divergence(f_obs, f_exp, ddof, axis, "pearson", sum_check, "chisquare")


# ---- entropy --------------------------------------------------------------------------------

def entropy(pk, qk=None, base=None, axis=0):
    """Shannon entropy, or the relative entropy of ``pk`` and ``qk``
    (``scipy.stats.entropy``)."""
    from .. import special

    if base is not None and not isinstance(base, Tensor) and base <= 0:
        raise ValueError("`base` must be a positive number or `None`.")
    pk = astensor(pk)
    if qk is not None:
        from ..manipulation import broadcast_arrays

        qk = astensor(qk)
        dt = np.result_type(pk.dtype, qk.dtype)
        pk, qk = pk.astype(dt) if pk.dtype != dt else pk, qk.astype(dt) if qk.dtype != dt else qk
        if tuple(pk.shape) != tuple(qk.shape):
            pk, qk = broadcast_arrays(pk, qk)
        axis, (pk, qk) = _ravel_if_none(axis, pk, qk)
        qk = qk / qk.sum(axis=axis, keepdims=True)
    else:
        axis, (pk,) = _ravel_if_none(axis, pk)
    pk = pk / pk.sum(axis=axis, keepdims=True)
    vec = special.entr(pk) if qk is None else special.rel_entr(pk, qk)
    s = vec.sum(axis=axis)
    if base is not None:
        if isinstance(base, Tensor):
            from ..arithmetic import log

            s = s / log(base)
        else:
            s = s / math.log(base)
    return s


# ---- Kolmogorov-Smirnov ----------------------------------------------------------------------

def _cdf_kernel(x, *, cdf, cdf_args):
    return np.asarray(cdf(x, *cdf_args))


def _scalar(x):
    """The value of a 0-d block (or of the one-element probe used for dtypes)."""
    return np.asarray(x).reshape(-1)[0]


def _ks_1samp_kernel(dplus, dminus, n, alternative, mode, dtype):
    from scipy.stats import distributions

    n, dplus, dminus = int(_scalar(n)), _scalar(dplus), _scalar(dminus)
    if alternative == "greater":
        return np.asarray(dplus), np.asarray(distributions.ksone.sf(dplus, n), dtype=dtype)
    if alternative == "less":
        return np.asarray(dminus), np.asarray(distributions.ksone.sf(dminus, n), dtype=dtype)
    d = np.where(dplus > dminus, dplus, dminus)
    if mode == "exact":
        prob = distributions.kstwo.sf(d, n)
    elif mode == "asymp":
        prob = distributions.kstwobign.sf(d * math.sqrt(n))
    else:
        prob = 2 * distributions.ksone.sf(d, n)
    return np.asarray(d), np.clip(np.asarray(prob, dtype=dtype), 0.0, 1.0)


def _normalize_alternative(alternative, message):
    alternative = {"t": "two-sided", "g": "greater", "l": "less"}.get(alternative.lower()[:1], alternative)
    if alternative not in _ALTERNATIVES:
        raise ValueError(message.format(alternative=alternative))
    return alternative


def _ranks_1based(x):
    """1.0, 2.0, ..., n along a 1-d tensor (n may be unknown)."""
    return _ew(_ones_kernel, x, dtype=np.int64).cumsum().astype(np.float64)


def ks_1samp(x, cdf, args=(), alternative="two-sided", mode="auto", *, method=None):
    """One-sample Kolmogorov-Smirnov test of ``x`` against the continuous ``cdf``
    (``scipy.stats.ks_1samp``; ``method`` is scipy's newer name for ``mode``)."""
    from ..sort import sort

    if method is not None:
        mode = method
    alternative = _normalize_alternative(alternative, "Unexpected value alternative={alternative!r}")
    if mode == "auto":
        mode = "exact"
    if mode not in ("exact", "asymp", "approx"):
        raise ValueError(f"Invalid value for mode: {mode}")
    x = astensor(x)
    if x.ndim != 1:
        raise ValueError("ks_1samp: x must be 1-d (as in Mars)")
    x = _floating(sort(x))
    n = _count(x, 0)
    cdfvals = _ew(_cdf_kernel, x, cdf=cdf, cdf_args=tuple(args), dtype=x.dtype)
    ranks = _ranks_1based(x)
    dplus = (ranks / n - cdfvals).max()
    dminus = (cdfvals - (ranks - 1.0) / n).max()
    d, p = _ew(_ks_1samp_kernel, dplus, dminus, n, alternative, mode, x.dtype, nout=2)
    return _result((d, p), "KstestResult")


def _ks_2samp_kernel(min_s, max_s, n1, n2, alternative, mode):
    from math import gcd

    from scipy.stats import distributions
    from scipy.stats._stats_py import _attempt_exact_2kssamp

    n1, n2 = int(_scalar(n1)), int(_scalar(n2))
    if min(n1, n2) == 0:
        raise ValueError("Data passed to ks_2samp must not be empty")
    min_s, max_s = float(_scalar(min_s)), float(_scalar(max_s))
    if alternative == "less" or (alternative == "two-sided" and min_s > max_s):
        d = min_s
    else:
        d = max_s
    g = gcd(n1, n2)
    n1g, n2g = n1 // g, n2 // g
    prob = -np.inf
    if mode == "auto":
        mode = "exact" if max(n1, n2) <= 10000 else "asymp"
    elif mode == "exact" and n1g >= np.iinfo(np.int32).max / n2g:
        mode = "asymp"
        warnings.warn(f"Exact ks_2samp calculation not possible with samples sizes {n1} and {n2}. "
                      "Switching to 'asymp'.", RuntimeWarning, stacklevel=2)
    if mode == "exact":
        success, d, prob = _attempt_exact_2kssamp(n1, n2, g, d, alternative)
        if not success:
            mode = "asymp"
            warnings.warn(f"ks_2samp: Exact calculation unsuccessful. Switching to method={mode}.",
                          RuntimeWarning, stacklevel=2)
    if mode == "asymp":
        m, n = sorted([float(n1), float(n2)], reverse=True)
        en = m * n / (m + n)
        if alternative == "two-sided":
            prob = distributions.kstwo.sf(d, np.round(en))
        else:
            z = np.sqrt(en) * d
            expt = -2 * z ** 2 - 2 * z * (m + 2 * n) / np.sqrt(m * n * (m + n)) / 3.0
            prob = np.exp(expt)
    return np.asarray(np.float64(d)), np.asarray(np.clip(prob, 0, 1), dtype=np.float64)


def ks_2samp(data1, data2, alternative="two-sided", mode="auto", *, method=None):
    """Two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``, 1-d samples)."""
    from ..arithmetic import clip, maximum, minimum
    from ..sort import searchsorted, sort

    if method is not None:
        mode = method
    if mode not in ("auto", "exact", "asymp"):
        raise ValueError(f"Invalid value for mode: {mode}")
    alternative = _normalize_alternative(alternative, "Invalid value for alternative: {alternative}")
    data1, data2 = astensor(data1), astensor(data2)
    if data1.ndim != 1 or data2.ndim != 1:
        raise ValueError("ks_2samp: the samples must be 1-d (as in Mars)")
    data1, data2 = sort(data1), sort(data2)
    n1, n2 = _count(data1, 0), _count(data2, 0)
    if isinstance(n1, int) and isinstance(n2, int) and min(n1, n2) == 0:
        raise ValueError("Data passed to ks_2samp must not be empty")
    # scipy's cdf differences at data_all = concatenate([data1, data2]), one half at a time
    halves = [searchsorted(data1, d, side="right") / n1 - searchsorted(data2, d, side="right") / n2
              for d in (data1, data2)]
    min_s = clip(-minimum(halves[0].min(), halves[1].min()), 0, 1)
    max_s = maximum(halves[0].max(), halves[1].max())
    d, p = _ew(_ks_2samp_kernel, min_s, max_s, n1, n2, alternative, mode, nout=2)
    return _result((d, p), "KstestResult")


# ---- rankdata -------------------------------------------------------------------------------

_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def _rank_from_positions(left, right, method):
    if method == "min":
        return left + 1
    if method == "max":
        return right
    # scipy: ordinal rank of the first tie (float) + (count - 1) / 2
    return (left + 1).astype(np.float64) + ((right - left).astype(np.float64) - 1) / 2


def _nan_ranks_kernel(ranks, has_nan, method):
    if not np.any(has_nan):
        return ranks
    if method != "average":
        raise ValueError(
            f"rankdata(method={method!r}): the data contain NaN, for which scipy returns float64 NaN "
            "ranks; this lazily typed result is int64 (as scipy's without NaN). Use method='average' "
            "or remove the NaN first")
    return np.full_like(ranks, np.nan)


def _rankdata_kernel(x, method, axis):
    from scipy.stats import rankdata as sp_rankdata

    return sp_rankdata(x, method=method, axis=axis)


def _rank_dtype(method):
    return np.dtype(np.float64) if method == "average" else np.dtype(np.int64)


class TensorRankAlongAxis(TensorOperand):
    """scipy's rankdata along one axis: the axis is made whole, each chunk ranked."""

    _op_name = "rankdata"

    def tile(self):
        from ...tiling.core import ensure_known
        from ..fft.core import whole_axes

        (inp,) = self.inputs
        if any(has_unknown(s) for s in inp.nsplits):
            yield from ensure_known(inp)
        inp = whole_axes(inp, [self.axis], max(8, inp.dtype.itemsize))
        dtype = self.outputs[0].dtype if self.outputs[0] is not None else _rank_dtype(self.method)
        chunks = []
        for idx in inp.chunk_grid():
            c = inp.chunk_at(idx)
            chunks.append(self.new_chunk(idx, c.shape, _checked_rank_kernel, (c, self.method, self.axis, dtype),
                                         inputs=[c]))
        return [(chunks, tuple(tuple(s) for s in inp.nsplits))]


def _checked_rank_kernel(x, method, axis, dtype):
    r = _rankdata_kernel(x, method, axis)
    if r.dtype != dtype:
        _nan_ranks_kernel(np.zeros(1, dtype=dtype), True, method)
    return r


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """Ranks of the data, ties handled by ``method`` (``scipy.stats.rankdata``): float64
    for ``'average'``, int64 otherwise."""
    from ..sort import argsort, searchsorted, sort, unique

    if method not in _RANK_METHODS:
        raise ValueError(f'unknown method "{method}"')
    _check_nan_policy(nan_policy)
    a = astensor(a)
    dtype = _rank_dtype(method)
    if axis is not None:
        if not -a.ndim <= axis < a.ndim:
            from numpy.exceptions import AxisError

            raise AxisError(axis, a.ndim)
        if a.size == 0:
            from ..datasource import empty

            return empty(a.shape, dtype=dtype)
        op = TensorRankAlongAxis([a.data], method=method, axis=axis % a.ndim)
        return op.new_tensor(a.shape, dtype)
    arr = a.ravel()
    if method == "ordinal":
        ranks = argsort(argsort(arr, kind="stable")) + 1
    else:
        s = sort(arr)
        if method == "dense":
            ranks = searchsorted(unique(arr), arr, side="left") + 1
        else:
            left = searchsorted(s, arr, side="left")
            right = searchsorted(s, arr, side="right")
            ranks = _rank_from_positions(left, right, method)
    if arr.dtype.kind in "fc":
        from ..arithmetic import isnan

        ranks = _ew(_nan_ranks_kernel, ranks, isnan(arr).any(), method, dtype=dtype)
    return ranks
