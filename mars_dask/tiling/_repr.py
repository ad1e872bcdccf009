"""What ``repr()``, ``str()`` and Jupyter's ``_repr_html_`` show for a tileable.

Two rules, Mars 0.10's, with Dask's habit of never computing to print something:

- A tileable that is not executed shows its *structure*: operand, shape (``nan`` where a
  length is known only after execution), dtype(s), chunks and key. Printing it never
  computes and never contacts the cluster: at most the tileable is tiled on the client (as
  ``dask.is_dask_collection`` already does), to tell its chunks.
- An executed tileable shows its *data*, exactly as numpy/pandas print the whole object,
  but only what they would show travels: each chunk holding a shown row or element is
  sliced on its worker (one small task per chunk) and only those slices are gathered. The
  slices make a small stand-in that numpy/pandas abbreviate the same way (same values at
  the same ends, same truncation decision); the few size facts in its text (``[N rows x M
  columns]``, ``Length: N``, ``length=N``, ``shape=``, a lost ``freq``) are set back to the
  real ones.

The display options (pandas' ``display.max_rows``/``min_rows``/``max_columns``/
``max_seq_items``, numpy's ``threshold``/``edgeitems``) bound what is fetched. Options asking
for more than :data:`MAX_FETCH_ITEMS` values (e.g. ``max_rows=None`` on a huge frame) get the
structure with a note instead, as does data that cannot be fetched (Client closed, worker
lost, :data:`FETCH_TIMEOUT`): a repr never raises and never fetches a whole large object.
Not followed: pandas' ``display.large_repr = "info"``.
"""

from __future__ import annotations

import html as _html
import itertools
import math
import shutil

import numpy as np
import pandas as pd

#: seconds a repr waits for its slices before showing the structure instead
FETCH_TIMEOUT = 30
#: at most this many values (elements, or rows x columns) are fetched for one repr
MAX_FETCH_ITEMS = 1_000_000


# ---- entry points (Tileable.__repr__ / __str__ / _repr_html_) ----------------------------


def text(t, as_str: bool = False) -> str:
    """``repr(t)`` (``as_str``: ``str(t)``, which differs from repr for tensors only)."""
    try:
        if not t.data.is_executed:
            return structure(t)
        return _data_text(t, as_str)
    except Exception as e:  # noqa: BLE001 - a repr never raises: say why no data is shown
        try:
            return f"{structure(t)}\n({_why(e)})"
        except Exception:  # noqa: BLE001
            return f"{type(t).__name__} <key={_key(t)}> ({_why(e)})"


def html(t) -> str | None:
    """``t._repr_html_()``: pandas' HTML for an executed DataFrame; ``None`` (Jupyter then
    shows the text repr) for other executed tileables, as pandas' Series/Index and numpy's
    arrays have no HTML repr; a table of the structure otherwise."""
    try:
        if not t.data.is_executed:
            return structure_html(t)
        if _kind(t.data) != "frame":
            return None
        return _frame_html(t.data)
    except Exception as e:  # noqa: BLE001 - a repr never raises
        try:
            return structure_html(t, note=_why(e))
        except Exception:  # noqa: BLE001
            return None


def _why(e: BaseException) -> str:
    if isinstance(e, _NotShown):
        return f"data not shown: {e}"
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"data not shown: {type(e).__name__}{': ' + msg[:200] if msg else ''}"


class _NotShown(Exception):
    """Why an executed tileable shows its structure instead of its data."""


def _check_shape_known(data) -> None:
    from .core import has_unknown

    if has_unknown(data.shape):  # e.g. client.persist(t): Dask does not learn shapes
        raise _NotShown("its shape is unknown (execute() it to learn it)")


def _key(t) -> str:
    try:
        return str(t.key)
    except Exception:  # noqa: BLE001
        return "?"


# ---- structure (unexecuted) ------------------------------------------------------------


def _kind(data) -> str:
    from ..dataframe.core import DataFrameData, IndexData, SeriesData
    from ..tensor.core import TensorData

    for cls, kind in ((TensorData, "tensor"), (DataFrameData, "frame"), (SeriesData, "series"), (IndexData, "index")):
        if isinstance(data, cls):
            return kind
    return "other"


def _dim(d) -> str:
    """A length as text: ``nan`` if unknown, else a plain int (a numpy int would print as
    ``np.int64(1000)``)."""
    return "nan" if isinstance(d, float) and math.isnan(d) else str(int(d))


def _shape_str(shape) -> str:
    dims = [_dim(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _chunk_facts(t, kind: str) -> dict:
    """Number of chunks and the largest chunk, read from the tileable's ``nsplits``.

    A tileable not tiled yet is tiled here, on the client only (no cluster: an operand that
    needs executed data to tile raises and the chunks are reported unknown)."""
    data = t.data
    if not data.is_tiled:
        from .tile import tile

        try:
            tile([data], None)
        except Exception:  # noqa: BLE001 - e.g. TilingError: needs executed shapes first
            return {"chunks": "unknown until executed"}
    nsplits = data.nsplits if kind in ("tensor", "other") else data.nsplits[:1]  # row chunks
    grid = tuple(len(s) for s in nsplits)
    size = [max(s) if not any(math.isnan(x) for x in s) else math.nan for s in nsplits if s]
    facts = {"nchunks": str(math.prod(grid))}
    if kind in ("tensor", "other"):
        facts["grid"] = _shape_str(grid)
        facts["chunksize"] = _shape_str(size) if len(size) == len(grid) else "()"
    elif size:
        facts["chunksize"] = f"{_dim(size[0])} rows"
    return facts


def _facts(t, kind: str) -> dict:
    """The structure as ordered (name, text) pairs, shared by the text and HTML forms."""
    data = t.data
    facts = {"op": type(data.op).__name__ if data.op is not None else "Fetch", "shape": _shape_str(data.shape)}
    if kind in ("tensor", "series", "index"):
        facts["dtype"] = str(data.dtype)
    if kind in ("series", "index") and data.name is not None:
        facts["name"] = repr(data.name)
    facts.update(_chunk_facts(t, kind))
    facts["key"] = str(data.key)
    facts["state"] = "executed" if data.is_executed else "lazy"
    return facts


def _dtypes_frame(data) -> pd.DataFrame:
    """One row naming each column's dtype, displayed the way pandas truncates wide frames."""
    return pd.DataFrame([[str(d) for d in data.meta.dtypes]], columns=data.meta.columns, index=["dtype"])


def _dtypes_max_cols() -> int:
    return pd.get_option("display.max_columns") or 20


def structure(t) -> str:
    """``DataFrame <op=..., shape=(nan, 3), nchunks=4, ...>`` plus, for a DataFrame, its
    columns and dtypes (truncated as pandas truncates wide frames)."""
    kind = _kind(t.data)
    facts = _facts(t, kind)
    out = f"{type(t).__name__} <{', '.join(f'{k}={v}' for k, v in facts.items())}>"
    if kind == "frame" and len(t.data.meta.columns):
        out += "\n" + _dtypes_frame(t.data).to_string(max_cols=_dtypes_max_cols(), show_dimensions=False)
    return out


def structure_html(t, note: str | None = None) -> str:
    """The same facts as :func:`structure` as a plain HTML table (Dask draws one too)."""
    kind = _kind(t.data)
    facts = _facts(t, kind)
    if kind == "tensor":
        from dask.utils import format_bytes

        nbytes = t.data.nbytes
        facts["bytes"] = "nan" if math.isnan(nbytes) else format_bytes(int(nbytes))
    rows = "".join(f"<tr><th>{_html.escape(k)}</th><td>{_html.escape(v)}</td></tr>" for k, v in facts.items())
    out = f"<div><p><b>{_html.escape(type(t).__name__)}</b></p><table>{rows}</table>"
    if kind == "frame" and len(t.data.meta.columns):
        out += _dtypes_frame(t.data).to_html(max_cols=_dtypes_max_cols(), show_dimensions=False)
    if note:
        out += f"<p>({_html.escape(note)})</p>"
    return out + "</div>"


# ---- fetching the shown part -----------------------------------------------------------


def _ends(n: int, keep: int | None) -> list[tuple[int, int]]:
    """Ranges of an axis of length ``n`` to fetch when at most ``keep`` items of it are shown,
    half from each end: ``keep // 2 + 1`` at each end, so the stand-in is still longer
    than ``keep`` and pandas truncates it as it truncates the real axis. Everything if
    ``keep`` is None (no limit) or the axis is short."""
    if keep is None:
        return [(0, n)]
    k = keep // 2 + 1
    return [(0, n)] if n <= 2 * k else [(0, k), (n - k, n)]


def _plan(data, ranges: list) -> tuple[list, tuple]:
    """Which chunks to slice and how: a list of ``(chunk, per-axis local slices)`` in C order
    of the visited chunk grid, and that grid's shape."""
    per_axis = []
    for sizes, axis_ranges in zip(data.nsplits, ranges):
        offs = [0, *itertools.accumulate(int(s) for s in sizes)]
        pieces: dict[int, list] = {}
        for lo, hi in axis_ranges:
            for ci in range(len(sizes)):
                a, b = max(lo, offs[ci]), min(hi, offs[ci + 1])
                if a < b:
                    pieces.setdefault(ci, []).append(slice(a - offs[ci], b - offs[ci]))
        if not pieces and sizes:  # an empty axis (a frame without columns): its empty slice
            pieces[0] = [slice(0, 0)]
        per_axis.append(list(pieces.items()))
    grid = tuple(len(p) for p in per_axis)
    plan = [
        (data.chunk_at(tuple(ci for ci, _ in combo)), [sl for _, sl in combo])
        for combo in itertools.product(*per_axis)
    ]
    return plan, grid


def _repr_slice(part, sels: list):
    """Runs on the worker holding one chunk: the rows/elements of it that a repr shows.
    pandas parts come back as a list of pieces, so the client can tell which index
    frequency the whole had (joining a head and a tail loses it)."""
    if isinstance(part, pd.Index):
        return [part[s] for s in sels[0]]
    if isinstance(part, (pd.Series, pd.DataFrame)):
        pieces = [part.iloc[s] for s in sels[0]]
        if len(sels) > 1:
            cols = np.concatenate([np.arange(part.shape[1])[s] for s in sels[1]])
            if len(cols) != part.shape[1]:
                pieces = [p.iloc[:, cols] for p in pieces]
        return pieces
    a = np.asarray(part)
    if a.ndim == 0:
        return a
    return a[np.ix_(*[np.concatenate([np.arange(n)[s] for s in ss]) for n, ss in zip(a.shape, sels)])]


def fetch_shown(data, ranges: list) -> tuple[list, tuple]:
    """Slice the chunks covering ``ranges`` (per axis) on their workers and gather only the
    slices. Returns the gathered parts (C order of the visited chunk grid) and that grid.

    Uses the Client that holds the data (never starts or picks another one) and does not
    rebuild lost chunks: a repr shows what is there or says it cannot."""
    count = math.prod(sum(hi - lo for lo, hi in r) for r in ranges)
    if count > MAX_FETCH_ITEMS:
        raise _NotShown(f"the display options would fetch {count} values (more than {MAX_FETCH_ITEMS})")
    plan, grid = _plan(data, ranges)
    if not plan:
        return [], grid
    from distributed import wait

    futures = [c.future for c, _ in plan]
    if any(f is None for f in futures):
        raise _NotShown("its chunks were released")
    client = futures[0].client
    if client.status != "running":  # closed, or reconnecting after losing its scheduler
        raise _NotShown(f"the Client holding it is {client.status}")
    if client.asynchronous:  # its gather would be a coroutine: a repr cannot await it
        raise _NotShown("the Client holding it is asynchronous")
    # ahead of queued work (priority), released as soon as dropped (on timeout too)
    slices = [client.submit(_repr_slice, f, sels, pure=False, priority=100) for f, (_, sels) in zip(futures, plan)]
    wait(slices, timeout=FETCH_TIMEOUT)
    return client.gather(slices), grid


# ---- tensors ---------------------------------------------------------------------------


def _tensor_text(data, as_str: bool) -> str:
    """numpy's repr/str of the whole array, from its corners only.

    numpy abbreviates an array larger than ``threshold`` to ``edgeitems`` at each end of every
    axis longer than ``2 * edgeitems``. The corner array keeps those ends plus one middle
    item per such axis (never shown, but it keeps that axis longer than ``2 * edgeitems``)
    and is printed with ``threshold=0``, so numpy abbreviates it at the same places with the
    same values and widths."""
    shape = tuple(int(d) for d in data.shape)
    opts = np.get_printoptions()
    summarize = math.prod(shape) > opts["threshold"]
    e = opts["edgeitems"]
    ranges = [[(0, d)] if not summarize or d <= 2 * e + 1 else [(0, e + 1), (d - e, d)] for d in shape]
    parts, grid = fetch_shown(data, ranges)
    corner_shape = tuple(sum(hi - lo for lo, hi in r) for r in ranges)
    if not parts:
        corner = np.empty(corner_shape, dtype=data.dtype)
    elif not shape:
        corner = np.asarray(parts[0]).reshape(())
    else:
        from .tileable import concatenate_grid

        corner = concatenate_grid(parts, grid)
    render = np.array_str if as_str else np.array_repr
    if corner.shape == shape:  # nothing was cut: this is the array
        return render(corner)
    with np.printoptions(threshold=0):
        out = render(corner)
    return out if as_str else _real_shape_extra(out, corner.shape, shape)


def _real_shape_extra(out: str, corner_shape: tuple, shape: tuple) -> str:
    """numpy >= 2.2 ends the repr of an abbreviated array with ``shape=(...)``: put the real
    shape there, and re-decide as numpy does whether the extras go on a new line."""
    old = f"shape={corner_shape}"
    i = out.rfind(old)
    if i < 0:  # older numpy or a legacy print mode: no shape shown
        return out
    body = out[:i].rstrip()  # "array([...],"
    extra = f"shape={shape}{out[i + len(old):]}"
    last_line = len(body) - (body.rfind("\n") + 1)
    spacer = "\n" + " " * len("array(") if last_line + len(extra) + 1 > np.get_printoptions()["linewidth"] else " "
    return body + spacer + extra


# ---- pandas ------------------------------------------------------------------------------


def _rows_keep(kind: str, ncols: int | None = None) -> int | None:
    """At most how many rows pandas shows (None: all), as its repr parameters say."""
    seq = pd.get_option("display.max_seq_items")
    if kind == "index":
        return seq or None
    max_rows = pd.get_option("display.max_rows")
    keep = shutil.get_terminal_size().lines if max_rows == 0 else max_rows
    if ncols == 0 and keep is not None:  # "Empty DataFrame ... Index: [first max_seq_items]"
        keep = max(keep, 2 * seq) if seq else None
    return keep


def _cols_keep() -> int | None:
    """At most how many columns pandas shows: ``display.max_columns``, or with 0 (a
    terminal) at most the terminal's width, which pandas then fits by width."""
    max_cols = pd.get_option("display.max_columns")
    return shutil.get_terminal_size().columns if max_cols == 0 else max_cols


def _standin(data, kind: str) -> tuple:
    """``(standin, n, freq)``: the small pandas object pandas prints like the whole, the
    whole's length, and the index frequency the whole has but the stand-in lost (or None)."""
    n = int(data.shape[0])
    if n == 0:
        return data.meta, n, None
    ranges = [_ends(n, _rows_keep(kind, data.shape[1] if kind == "frame" else None))]
    if kind == "frame":
        ranges.append(_ends(int(data.shape[1]), _cols_keep()))
    parts, _ = fetch_shown(data, ranges)
    pieces = [p for part in parts for p in part]
    if kind == "index":
        whole = _as_range(pieces, n)
        if whole is not None:
            return whole, n, None
        standin = pieces[0].append(pieces[1:]) if len(pieces) > 1 else pieces[0]
    else:
        standin = pd.concat(pieces) if len(pieces) > 1 else pieces[0]
    return standin, n, _lost_freq(pieces, n)


def _as_range(pieces: list, n: int):
    """The whole index when it is a RangeIndex (pandas prints its bounds, not its items)."""
    first, last = pieces[0], pieces[-1]
    if not all(isinstance(p, pd.RangeIndex) for p in pieces) or first.step != last.step:
        return None
    whole = pd.RangeIndex(first.start, first.start + n * first.step, first.step, name=first.name)
    return whole if len(last) and whole[-1] == last[-1] else None


def _lost_freq(pieces: list, n: int):
    """The index frequency of the whole, if joining its ends lost it: the first and last
    pieces share a frequency and span exactly ``n`` steps of it (periods keep theirs)."""
    first, last = (p if isinstance(p, pd.Index) else p.index for p in (pieces[0], pieces[-1]))
    f = getattr(first, "freq", None)
    if len(pieces) == 1 or f is None or isinstance(first, pd.PeriodIndex) or getattr(last, "freq", None) != f:
        return None
    try:
        return f if len(first) and len(last) and first[0] + (n - 1) * f == last[-1] else None
    except Exception:  # noqa: BLE001 - an offset that does not multiply: show none
        return None


def _data_text(t, as_str: bool) -> str:
    data = t.data
    kind = _kind(data)
    _check_shape_known(data)
    if kind == "tensor":
        return _tensor_text(data, as_str)
    if kind not in ("frame", "series", "index"):
        raise _NotShown(f"no data repr for {type(data).__name__}")
    standin, n, freq = _standin(data, kind)
    out = repr(standin)
    shown = len(standin)
    if kind == "frame":
        old, new = f"[{shown} rows x {standin.shape[1]} columns]", f"[{n} rows x {data.shape[1]} columns]"
        return out[: -len(old)] + new if out.endswith(old) else out
    if kind == "index":
        if shown != n:
            out = _replace_last(out, f"length={shown}", f"length={n}")
        if freq is not None and getattr(standin, "freq", 1) is None:
            out = _replace_last(out, "freq=None", f"freq={freq.freqstr!r}")
        return out
    # a Series' footer line: "[Freq: D, ][Name: x, ][Length: N, ]dtype: ..."
    i = out.rfind("\n", 0, out.rfind("dtype: ")) + 1
    body, footer = out[:i], out[i:]
    if shown != n:
        footer = _replace_last(footer, f"Length: {shown}", f"Length: {n}")
    if freq is not None and standin.index.freq is None:
        footer = f"Freq: {freq.freqstr}, {footer}"
    return body + footer


def _replace_last(s: str, old: str, new: str) -> str:
    i = s.rfind(old)
    return s if i < 0 else s[:i] + new + s[i + len(old):]


def _frame_html(data) -> str | None:
    """pandas' ``_repr_html_`` of the whole frame, from the same stand-in as the text."""
    _check_shape_known(data)
    standin, n, *_ = _standin(data, "frame")
    out = standin._repr_html_()
    if out is None:
        return None
    old = f"<p>{len(standin)} rows \u00d7 {standin.shape[1]} columns</p>"
    return _replace_last(out, old, f"<p>{n} rows \u00d7 {data.shape[1]} columns</p>")
