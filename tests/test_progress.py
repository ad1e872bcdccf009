"""execute()'s arguments and progress bar (mars_dask._progress):

- unknown keywords of ``execute()`` / ``fetch()`` raise ``TypeError`` (as any Python call);
  Mars's ``wait`` / ``new_session_kwargs`` are accepted only with the values that mean what
  happens here; bad values are refused before any work starts;
- ``show_progress=True`` draws a bar ending at ``N/N`` (N: the chunks executed), ``False``
  prints nothing, ``"auto"`` prints nothing for a call shorter than
  ``mars-dask.session.progress-after`` and a bar for a longer one; the bar is closed when a
  kernel fails, whose exception propagates unchanged.

The bar is tqdm's text bar on stderr, read here with ``capsys``. Results are compared with
numpy in every case.
"""

from __future__ import annotations

import re

import dask
import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask import _progress
from mars_dask.tensor.arithmetic import elementwise
from tests.worker import _kernels as K


def _last_bar(err: str) -> str:
    """The last state tqdm drew (it redraws the line after a carriage return)."""
    parts = [p for p in re.split(r"[\r\n]", err) if p.strip()]
    assert parts, "no progress output"
    return parts[-1]


def _counts(bar: str) -> tuple[int, int]:
    m = re.search(r"(?<!\d)(\d+)/(\d+)(?!\d)", bar)
    assert m, bar
    return int(m.group(1)), int(m.group(2))


class Boom(Exception):
    pass


def _explode(x):
    raise Boom("kernel failed on purpose")


# -- arguments -------------------------------------------------------------------------------
def test_unknown_keywords_raise_type_error(client):
    t = mt.ones((4,), chunk_size=2) + 1
    with pytest.raises(TypeError, match=r"execute\(\) got an unexpected keyword argument 'bogus'"):
        mars_dask.execute(t, bogus=1)
    with pytest.raises(TypeError, match=r"execute\(\) got an unexpected keyword argument 'bogus'"):
        t.execute(bogus=1)
    assert not t.data.is_executed  # refused before any work
    t.execute()
    with pytest.raises(TypeError, match=r"fetch\(\) got an unexpected keyword argument 'bogus'"):
        t.fetch(bogus=1)
    with pytest.raises(TypeError, match=r"fetch\(\) got an unexpected keyword argument 'bogus'"):
        mars_dask.fetch(t, bogus=1)
    np.testing.assert_array_equal(mars_dask.fetch(t, session=mars_dask.get_session()), np.full(4, 2.0))


def test_mars_options_accepted_with_what_they_mean_here(client):
    t = mt.ones((4,), chunk_size=2) * 3
    with pytest.raises(NotImplementedError, match="blocks"):
        t.execute(wait=False)
    with pytest.raises(NotImplementedError, match="blocks"):
        mars_dask.execute(t, wait=False)
    with pytest.raises(TypeError, match="distributed Client"):
        mars_dask.execute(t, new_session_kwargs={"n_cpu": 2})
    with pytest.raises(ValueError, match="show_progress"):
        t.execute(show_progress="yes")
    with pytest.raises(ValueError, match="progress_update_interval"):
        t.execute(progress_update_interval=0)
    assert not t.data.is_executed  # refused before any work
    # the values that mean what happens here, and the positional session of Mars
    assert t.execute(mars_dask.get_session(), wait=True, new_session_kwargs=None, show_progress=False,
                     progress_update_interval=0.5) is t
    np.testing.assert_array_equal(t.fetch(), np.full(4, 3.0))
    s, d = mars_dask.execute(t + 1, t * 2, wait=True, new_session_kwargs={}, show_progress=False)
    np.testing.assert_array_equal(s.fetch(), np.full(4, 4.0))
    np.testing.assert_array_equal(d.fetch(), np.full(4, 6.0))


# -- the bar ---------------------------------------------------------------------------------
def test_show_progress_true_ends_at_all_chunks(client, capsys):
    t = mt.ones((100, 10), chunk_size=10)
    t.execute(show_progress=True)
    n = len(t.chunks)
    assert n > 1
    err = capsys.readouterr().err
    assert _counts(_last_bar(err)) == (n, n), err
    np.testing.assert_array_equal(t.fetch(), np.ones((100, 10)))
    assert _progress._current.get() is None


def test_config_show_progress_is_the_default(client, capsys):
    t = mt.arange(30, chunk_size=7) * 2
    with dask.config.set({"mars-dask.session.show-progress": True}):
        t.execute()
    n = len(t.chunks)
    assert _counts(_last_bar(capsys.readouterr().err)) == (n, n)
    np.testing.assert_array_equal(t.fetch(), np.arange(30) * 2)


@pytest.mark.parametrize("show", [False, "auto", None])
def test_no_output_when_off_or_fast(client, capsys, show):
    # auto: a bar only after progress-after; generous here (the machine is shared), the job
    # takes a fraction of a second
    with dask.config.set({"mars-dask.session.progress-after": "20s"}):
        t = (mt.ones((100, 10), chunk_size=10) + 1).execute(show_progress=show)
    out, err = capsys.readouterr()
    assert (out, err) == ("", "")
    np.testing.assert_array_equal(t.fetch(), np.full((100, 10), 2.0))


def test_auto_shows_the_bar_for_a_slow_call(client, capsys):
    x = mt.ones((8,), chunk_size=1)
    s = elementwise(K.slow_add_one, x, dtype=float, delay=0.3)  # 8 x 0.3 s on 2 workers
    with dask.config.set({"mars-dask.session.progress-after": "0.2s"}):
        s.execute(show_progress="auto", progress_update_interval=0.1)
    n = len(s.chunks)
    err = capsys.readouterr().err
    assert _counts(_last_bar(err)) == (n, n), err
    np.testing.assert_array_equal(s.fetch(), np.full(8, 2.0))


def test_iterative_tiling_grows_the_total(client, capsys):
    rs = np.random.RandomState(0)
    a = rs.rand(30, 20)
    x = mt.tensor(a, chunk_size=7)
    r = x[x > 0.5].reshape(-1, 1)  # reshape needs the filter's sizes: tiled iteratively
    r.execute(show_progress=True)
    done, total = _counts(_last_bar(capsys.readouterr().err))
    assert done == total > len(r.chunks)  # the chunks executed for their shapes count too
    np.testing.assert_array_equal(r.fetch(), a[a > 0.5].reshape(-1, 1))


def test_bar_closed_and_error_unchanged_when_a_kernel_fails(client, capsys):
    from tqdm import tqdm

    t = elementwise(_explode, mt.ones((4,), chunk_size=2), dtype=float)
    with pytest.raises(Boom, match="on purpose"):
        t.execute(show_progress=True)
    assert not t.data.is_executed
    assert capsys.readouterr().err  # the bar was shown ...
    assert not [b for b in list(tqdm._instances) if b.desc == "execute"]  # ... and closed
    assert _progress._current.get() is None


def test_jupyter_uses_the_notebook_bar_only_with_ipywidgets(monkeypatch):
    IPython = pytest.importorskip("IPython")
    from tqdm import tqdm
    from tqdm.notebook import tqdm as tqdm_notebook

    assert _progress._bar_class() is tqdm  # not in a kernel

    class ZMQInteractiveShell:
        pass

    monkeypatch.setattr(IPython, "get_ipython", ZMQInteractiveShell)
    real_find_spec = _progress.importlib.util.find_spec
    monkeypatch.setattr(_progress.importlib.util, "find_spec",
                        lambda name: None if name == "ipywidgets" else real_find_spec(name))
    assert _progress._bar_class() is tqdm  # no ipywidgets: the text bar
    monkeypatch.setattr(_progress.importlib.util, "find_spec",
                        lambda name: object() if name == "ipywidgets" else real_find_spec(name))
    assert _progress._bar_class() is tqdm_notebook
