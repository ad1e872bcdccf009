"""The dashboard's Mars pages: bokeh documents served by the scheduler beside Dask's own.

``/individual-mars-tileables``, ``-quota``, ``-store`` and ``-failover`` draw what the JSON
routes of ``_http.py`` answer (the same functions build both: one place for each figure),
refreshed on a timer while a page is open; ``/mars`` puts the four on one page, linked as
"Mars" in the dashboard's top bar. The ``individual-`` names are what Dask's "More..." menu
and ``/individual-plots.json`` list, and dask-labextension builds JupyterLab's Dask sidebar
from the latter: the pages appear there as "Mars Tileables" etc.

How they are registered, and why here. ``Scheduler.__init__`` imports its dashboard, then the
modules listed in ``distributed.scheduler.http.routes`` (``get_handlers``), then connects
the dashboard's pages (the dict ``applications`` of ``distributed.dashboard.scheduler``) to its HTTP
server. ``mars_dask`` (``--preload mars_dask``, the embedded cluster) lists this module
there (``_http.register_routes``), so it is imported exactly when a scheduler with a
dashboard is being built, and adds its pages in time (``DI.register_dashboard_pages``).
Importing it anywhere else would cost every client bokeh (0.3 s): nothing else imports it.
It serves no JSON route of its own (``routes = []``).

What a page costs the scheduler: one report per refresh and page (``refresh`` below), built
by the routes' functions (the tileables report walks the kept calls' tileables; the quota
report one pass over the restricted keys not finished; the store page asks every worker,
at most once per refresh; the failover report reads counters and recent events), and the
rows sent to the browser are bounded (``MAX_ROWS``). Pages open at once share their reports:
a report younger than half its page's refresh period, or still being built, is reused
(``shared_answer``), so five open tabs cost one report per period, not five.
"""

from __future__ import annotations

import asyncio
import html
import logging
import math
import time
import weakref
from datetime import datetime

from bokeh.layouts import column, row
from bokeh.models import (ColumnDataSource, DataTable, Div, NumberFormatter, NumeralTickFormatter, Range1d,
                          TableColumn)
from bokeh.plotting import figure
from dask.utils import format_bytes, parse_timedelta

from .. import _dask_internals as DI
from .. import config
from . import _http
from . import _protocol as P

logger = logging.getLogger("mars_dask.plugins")

#: refresh periods of the pages, in units of ``mars-dask.dashboard.refresh-interval``
_PERIODS = {"tileables": 1, "quota": 1, "store": 2, "failover": 2}


def refresh_ms(name: str) -> int:
    """Milliseconds between refreshes of an open page ``name``."""
    base = parse_timedelta(config.get("dashboard.refresh-interval"))
    return max(100, int(1000 * base * _PERIODS[name]))
#: rows at most in a table (the newest first), and bars in a figure
MAX_ROWS = 500
MAX_BARS = 30
TITLE = {"tileables": "Mars: tileables", "quota": "Mars: memory quota", "store": "Mars: store",
         "failover": "Mars: failover"}

routes: list = []  # (read by distributed's get_handlers: see the module docstring)


class Bytes(int):
    """A figure shown as ``format_bytes`` (its exact value in ``data-value``)."""


def _figure_html(figures: dict) -> str:
    """A line of figures, ``{name: (label, value)}``, each as ``<span class="mars-figure"
    data-name=NAME data-value=VALUE>shown</span>``: what a person reads at the top of a page
    and what the browser tests compare with the scheduler's state."""
    def one(name, label, v):
        shown = format_bytes(v) if isinstance(v, Bytes) else str(v)
        return (f'{html.escape(label)}: <span class="mars-figure" data-name="{name}" '
                f'data-value="{html.escape(str(v), quote=True)}">{html.escape(shown)}</span>')
    return " &nbsp;·&nbsp; ".join(one(name, label, v) for name, (label, v) in figures.items())


def _table(source, columns, height=300) -> DataTable:
    """``columns``: (field, title, format) with format a NumberFormatter format or None
    (a bokeh model belongs to one document: each table makes its own formatters)."""
    return DataTable(source=source, columns=[
        TableColumn(field=f, title=t, **({"formatter": NumberFormatter(format=fmt)} if fmt else {}))
        for f, t, fmt in columns], sizing_mode="stretch_width", height=height, index_position=None)


_BYTES = "0.0 b"
_SECS = "0.0"


def _hbar_figure(title: str, height: int = 220):
    """A figure of horizontal bars at y = 0, 1, ... whose labels are drawn inside the plot
    from the bars' own data (the ``label`` column: :func:`_bar_labels`), not on the y
    axis. Why: every change of a page is a message to the browser, and a label or range the
    browser lays out answers with one back (measured with two tabs open on a running job: the
    axis labels' "name (done/total)" re-laid the plot out, ``inner_width`` came back each
    refresh, and a ``DataRange1d`` set here was recomputed there and sent back, then set
    again: half the traffic). Labels in the data cost nothing extra; both ranges are fixed
    ``Range1d`` s, moved only when the bars no longer fit (:func:`_set_y_bars`, :func:`_set_x_end`)."""
    fig = figure(title=title, height=height, sizing_mode="stretch_width", toolbar_location=None,
                 tools="", x_range=Range1d(0, 1), y_range=Range1d(-0.6, 0.4))
    fig.yaxis.visible = False
    fig.ygrid.visible = False
    return fig


def _bar_labels(fig, source) -> None:
    """Draw ``source``'s ``label`` column at the left end of each bar."""
    fig.text(x=0, y="y", text="label", source=source, x_offset=4, text_baseline="middle",
             text_font_size="9pt", text_color="#222222")


def _set(model, **props) -> None:
    """Set the properties that changed: every assignment is a message to the browser (a
    table's whole data, re-rendered there: the browser shares the machine), and a
    new model (e.g. a ticker from a list) makes bokeh recompute the document's model set
    (measured: 4 ms per refresh of a page, 18 ms of /mars, on a busy scheduler)."""
    for k, v in props.items():
        if getattr(model, k) != v:
            setattr(model, k, v)


def _set_y_bars(fig, n: int) -> None:
    """Room for ``n`` bars (y = 0 .. n-1)."""
    _set(fig.y_range, start=-0.6, end=max(n, 1) - 0.4)


def _nice_ceiling(v: float) -> float:
    """The smallest power of two >= ``v`` (the x axes count bytes): an axis's end moves only
    when the bars outgrow it, not at every refresh (each move is a message, and new tick
    labels a re-layout in the browser)."""
    return 1 if v <= 1 else 2 ** math.ceil(math.log2(v))


def _set_x_end(fig, end: float) -> None:
    _set(fig.x_range, start=0, end=_nice_ceiling(end))


class _Page:
    """One page: its bokeh models (``root``) and ``render(answer)`` from the JSON answer."""

    name: str

    def __init__(self):
        self.summary = Div(text="", sizing_mode="stretch_width", name="mars-summary")

    def render(self, answer: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class TileablesPage(_Page):
    name = "tileables"

    def __init__(self):
        super().__init__()
        self.bars = ColumnDataSource({"y": [], "done": [], "erred": [], "label": []})
        self.fig = _hbar_figure("chunks done per tileable (newest calls first)", height=300)
        self.fig.hbar(y="y", left=0, right="done", height=0.7, color="#2ca02c", source=self.bars)
        self.fig.hbar(y="y", left="done", right="erred", height=0.7, fill_color="#d62728", line_color=None,
                      source=self.bars)
        _bar_labels(self.fig, self.bars)
        self.fig.xaxis.formatter = NumeralTickFormatter(format="0%")
        self.rows = ColumnDataSource({k: [] for k in self._COLUMNS})
        self.table = _table(self.rows, [
            ("call", "call", None), ("call_state", "call state", None), ("name", "tileable", None),
            ("operand", "operand", None), ("state", "state", None), ("done", "chunks done", None),
            ("total", "chunks", None), ("erred", "erred", None), ("bytes", "bytes held", _BYTES),
            ("result_bytes", "bytes produced", _BYTES), ("elapsed", "elapsed (s)", _SECS)], height=360)
        self.root = column(self.summary, self.fig, self.table, sizing_mode="stretch_width")

    _COLUMNS = ("call", "call_state", "name", "operand", "state", "done", "total", "erred", "bytes",
                "result_bytes", "elapsed")

    def render(self, answer: dict) -> None:
        calls = answer["calls"]
        rows = {k: [] for k in self._COLUMNS}
        bars = {"y": [], "done": [], "erred": [], "label": []}
        labels = []
        for call in calls:
            for t in call["tileables"]:
                if len(rows["name"]) < MAX_ROWS:
                    for k in self._COLUMNS:
                        rows[k].append(call["id"] if k == "call" else call["state"] if k == "call_state"
                                       else (t[k] if t[k] is not None else ""))
                if len(labels) < MAX_BARS:
                    total = t["total"] or 1
                    bars["done"].append(t["done"] / total)
                    bars["erred"].append((t["done"] + t["erred"]) / total)
                    labels.append(f"{t['name']} ({t['done']}/{t['total']})")
        n = len(labels)
        bars["y"] = list(range(n))[::-1]  # the newest at the top
        bars["label"] = labels
        _set(self.bars, data=bars)
        _set_y_bars(self.fig, n)
        _set(self.rows, data=rows)
        running = [c for c in calls if c["state"] == "running"]
        _set(self.summary, text=_figure_html({
            "calls": ("calls kept", len(calls)),
            "running-calls": ("running", len(running)),
            "chunks-done": ("chunks done", sum(c["done"] for c in calls)),
            "chunks-total": ("chunks", sum(c["total"] for c in calls)),
            "chunks-erred": ("erred", sum(c["erred"] for c in calls)),
            "bytes-held": ("held", Bytes(sum(c["bytes"] for c in calls))),
        }))


class QuotaPage(_Page):
    name = "quota"

    _WORKERS = ("worker", "limit", "reserved", "memory", "executing", "waiting", "waiting_bytes")
    _WAITING = ("key", "tileable", "worker", "state", "estimate", "fits_now")

    def __init__(self):
        super().__init__()
        self.bars = ColumnDataSource({"y": [], "limit": [], "reserved": [], "memory": [], "label": []})
        self.fig = _hbar_figure("per worker: quota, reserved by executing tasks, measured memory")
        self.fig.hbar(y="y", left=0, right="limit", height=0.8, color="#dddddd", source=self.bars,
                      legend_label="quota")
        self.fig.hbar(y="y", left=0, right="reserved", height=0.5, color="#1f77b4", source=self.bars,
                      legend_label="reserved")
        self.fig.hbar(y="y", left=0, right="memory", height=0.15, color="#ff7f0e", source=self.bars,
                      legend_label="measured")
        _bar_labels(self.fig, self.bars)
        self.fig.xaxis.formatter = NumeralTickFormatter(format="0.0 b")
        self.fig.legend.location = "bottom_right"
        self.workers = ColumnDataSource({k: [] for k in self._WORKERS})
        self.wtable = _table(self.workers, [
            ("worker", "worker", None), ("limit", "quota", _BYTES), ("reserved", "reserved", _BYTES),
            ("memory", "measured", _BYTES), ("executing", "executing", None), ("waiting", "waiting", None),
            ("waiting_bytes", "waiting for", _BYTES)], height=160)
        self.waiting = ColumnDataSource({k: [] for k in self._WAITING})
        self.table = _table(self.waiting, [
            ("key", "task waiting for admission", None), ("tileable", "tileable", None), ("worker", "worker", None),
            ("state", "state", None), ("estimate", "estimate", _BYTES), ("fits_now", "fits now", None)])
        self.root = column(self.summary, self.fig, self.wtable, self.table, sizing_mode="stretch_width")

    def render(self, answer: dict) -> None:
        ws = answer["workers"]
        addrs = sorted(ws)
        _set(self.bars, data={"y": list(range(len(addrs))), "limit": [ws[a]["limit"] or 0 for a in addrs],
                          "reserved": [ws[a]["reserved"] for a in addrs],
                          "memory": [ws[a]["memory"] or 0 for a in addrs], "label": addrs})
        _set_y_bars(self.fig, len(addrs))
        _set_x_end(self.fig, 1.05 * max([0, *(max(ws[a]["limit"] or 0, ws[a]["memory"] or 0) for a in addrs)]))
        _set(self.workers, data={"worker": addrs, **{k: [ws[a][k] or 0 for a in addrs] for k in self._WORKERS[1:]}})
        waiting = answer["waiting"][:MAX_ROWS]
        _set(self.waiting, data={k: [("" if w[k] is None else str(w[k]) if k == "fits_now" else w[k])
                                 for w in waiting] for k in self._WAITING})
        _set(self.summary, text=_figure_html({
            "admission": ("admission", "on" if answer["admission"] else "off"),
            "workers": ("workers", len(ws)),
            "reserved": ("reserved", Bytes(sum(ws[a]["reserved"] for a in addrs))),
            "executing": ("executing", sum(ws[a]["executing"] for a in addrs)),
            "waiting": ("waiting for admission", answer["n_waiting"]),
        }))


class StorePage(_Page):
    name = "store"

    _COLUMNS = ("worker", "keys", "memory", "memory_limit", "shm", "disk", "pending", "heap",
                "backlog_keys", "backlog_bytes", "write_rate", "read_rate", "error")

    def __init__(self):
        super().__init__()
        self.bars = ColumnDataSource({"y": [], "shm": [], "disk": [], "pending": [], "heap": [], "label": []})
        self.fig = _hbar_figure("per worker: bytes in shared memory / on disk / waiting for their write")
        self.fig.hbar_stack(["shm", "disk", "pending", "heap"], y="y", height=0.7, source=self.bars,
                            color=["#1f77b4", "#8c564b", "#ff7f0e", "#7f7f7f"],
                            legend_label=["shared memory", "disk", "write-behind", "heap"])
        _bar_labels(self.fig, self.bars)
        self.fig.xaxis.formatter = NumeralTickFormatter(format="0.0 b")
        self.fig.legend.location = "bottom_right"
        self.rows = ColumnDataSource({k: [] for k in self._COLUMNS})
        self.table = _table(self.rows, [
            ("worker", "worker", None), ("keys", "keys", None), ("memory", "in memory", _BYTES),
            ("memory_limit", "memory target", _BYTES), ("shm", "shared memory", _BYTES),
            ("disk", "disk", _BYTES), ("pending", "write-behind", _BYTES), ("heap", "heap", _BYTES),
            ("backlog_keys", "backlog keys", None), ("write_rate", "spill write B/s", _BYTES),
            ("read_rate", "spill read B/s", _BYTES), ("error", "error", None)], height=200)
        self.root = column(self.summary, self.fig, self.table, sizing_mode="stretch_width")
        self._last: dict = {}  # worker -> (time, write bytes, read bytes): rates between refreshes

    def _rates(self, addr: str, spill: dict, now: float) -> tuple[float, float]:
        w, r = spill.get("write", {}).get("bytes", 0), spill.get("read", {}).get("bytes", 0)
        last = self._last.get(addr)
        self._last[addr] = (now, w, r)
        if last is None or now <= last[0]:
            return 0.0, 0.0
        dt = now - last[0]
        return max(w - last[1], 0) / dt, max(r - last[2], 0) / dt

    def render(self, answer: dict) -> None:
        now = time.monotonic()
        ws = answer["workers"]
        addrs = sorted(ws)
        rows = {k: [] for k in self._COLUMNS}
        for a in addrs:
            w = ws[a] or {}  # {"name", "store": MarsStore.stats() or None}, or {"error": ...}
            s = w.get("store") or {}
            tiers = s.get("tiers", {})
            wr, rd = self._rates(a, s.get("spill", {}), now) if "tiers" in s else (0.0, 0.0)
            vals = {"worker": a, "keys": s.get("keys", 0), "memory": s.get("memory", 0),
                    "memory_limit": s.get("memory_limit") or 0,
                    **{t: tiers.get(t, {}).get("bytes", 0) for t in ("shm", "disk", "pending", "heap")},
                    "backlog_keys": s.get("write_behind", {}).get("keys", 0),
                    "backlog_bytes": s.get("write_behind", {}).get("bytes", 0),
                    "write_rate": wr, "read_rate": rd,
                    "error": w.get("error") or ("" if "store" not in w or w["store"] else "no store")}
            for k in self._COLUMNS:
                rows[k].append(vals[k])
        _set(self.rows, data=rows)
        _set(self.bars, data={"y": list(range(len(addrs))), **{t: rows[t] for t in ("shm", "disk", "pending", "heap")},
                              "label": addrs})
        _set_y_bars(self.fig, len(addrs))
        _set_x_end(self.fig, 1.05 * max([0, *(sum(rows[t][i] for t in ("shm", "disk", "pending", "heap"))
                                              for i in range(len(addrs)))]))
        _set(self.summary, text=_figure_html({
            "workers": ("workers", len(addrs)),
            "keys": ("keys", sum(rows["keys"])),
            "memory-bytes": ("in memory", Bytes(sum(rows["memory"]))),
            "shm-bytes": ("shared memory", Bytes(sum(rows["shm"]))),
            "disk-bytes": ("disk", Bytes(sum(rows["disk"]))),
            "backlog-bytes": ("write-behind", Bytes(sum(rows["backlog_bytes"]))),
        }))


class FailoverPage(_Page):
    name = "failover"

    _EVENTS = ("time", "action", "worker", "n", "details")

    def __init__(self):
        super().__init__()
        self.points = ColumnDataSource({"time": [], "action": [], "n": []})
        self.fig = figure(title="mars-failover events", height=220, sizing_mode="stretch_width",
                          x_axis_type="datetime", y_range=["worker-lost"], toolbar_location=None, tools="")
        self.fig.scatter(x="time", y="action", size=9, source=self.points, color="#d62728", alpha=0.7)
        self.events = ColumnDataSource({k: [] for k in self._EVENTS})
        self.etable = _table(self.events, [
            ("time", "time", None),
            ("action", "event", None), ("worker", "worker", None), ("n", "keys", None),
            ("details", "details", None)], height=260)
        self.recoveries = ColumnDataSource({"cause": [], "n": [], "adopted": [], "duration": []})
        self.rtable = _table(self.recoveries, [("cause", "recovery of", None), ("n", "keys", None),
                                               ("adopted", "adopted", None),
                                               ("duration", "duration (s)", "0.000")], height=140)
        self.root = column(self.summary, self.fig, row(self.etable, self.rtable, sizing_mode="stretch_width"),
                           sizing_mode="stretch_width")

    def render(self, answer: dict) -> None:
        f = answer["failover"] or {}
        restart = answer["restart"]
        events = answer["events"][::-1][:MAX_ROWS]  # newest first
        ev = {k: [] for k in self._EVENTS}
        for e in events:
            ev["time"].append(datetime.fromtimestamp(e["time"]).strftime("%H:%M:%S.%f")[:-3])
            ev["action"].append(str(e.get("action", "")))
            ev["worker"].append(str(e.get("worker", "")))
            ev["n"].append(next((e[k] for k in ("n", "n_lost", "entries") if k in e), ""))
            ev["details"].append(", ".join(f"{k}={v}" for k, v in e.items()
                                           if k not in ("time", "action", "worker") and not isinstance(v, list)))
        _set(self.events, data=ev)
        actions = sorted({a for a in ev["action"]}) or ["worker-lost"]
        _set(self.fig.y_range, factors=actions)
        _set(self.points, data={"time": [datetime.fromtimestamp(e["time"]) for e in events],
                            "action": ev["action"], "n": ev["n"]})
        rec = list(f.get("recoveries", ()))[::-1]
        _set(self.recoveries, data={"cause": [str(r["cause"]) for r in rec], "n": [r["n"] for r in rec],
                                "adopted": [r.get("adopted", 0) for r in rec],
                                "duration": [r["duration"] for r in rec]})
        _set(self.summary, text=_figure_html({
            "worker-losses": ("worker losses", f.get("worker_losses", 0)),
            "adopted": ("results adopted after restarts", restart.get("adopted", 0)),
            "recomputed": ("keys recomputed", f.get("recomputed", restart.get("recomputed", 0))),
            "restored": ("restored from the journal", f.get("restored_keys", 0)),
            "checkpoints": ("checkpoints written", f.get("checkpoints_written", 0)),
            "checkpoint-loads": ("read", f.get("checkpoint_loads", 0)),
            "pending-recovery": ("keys being recovered", f.get("pending_recovery", 0)),
            "journal-entries": ("journal entries", f.get("journal_entries", 0)),
            "journal-bytes": ("journal", Bytes(f.get("journal_bytes", 0))),
        }))


PAGES = {p.name: p for p in (TileablesPage, QuotaPage, StorePage, FailoverPage)}


def _no_plugin(doc, title: str) -> None:
    doc.add_root(Div(text=f"<p>This scheduler has no started mars_dask plugin ({P.PLUGIN_NAME!r}): start "
                          "it with <code>dask scheduler --preload mars_dask</code>.</p>", name="mars-summary"))
    doc.title = title


#: scheduler -> {page name: (monotonic time started, the report's future)}
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def shared_answer(name: str, scheduler, plugin) -> dict:
    """The report of page ``name``, built at most once per half refresh period for all the
    pages open on ``scheduler`` (a report still being built, e.g. the store page's question
    to the workers, is awaited by every page that asks meanwhile)."""
    now = time.monotonic()
    mine = _SHARED.setdefault(scheduler, {})
    got = mine.get(name)
    if got is None or now - got[0] > refresh_ms(name) / 2000:
        got = mine[name] = (now, asyncio.ensure_future(_http.ANSWERS[name](scheduler, plugin)))
    return await asyncio.shield(got[1])


def _attach(doc, scheduler, pages: list[_Page]) -> None:
    """Render each page now and on its timer; a refresh still waiting (the store page asks
    the workers) is not started twice."""
    for page in pages:
        busy = [False]

        async def refresh(page=page, busy=busy):
            if busy[0]:
                return
            busy[0] = True
            try:
                plugin = scheduler.plugins.get(P.PLUGIN_NAME)
                if plugin is not None and hasattr(plugin, "tracker"):
                    page.render(await shared_answer(page.name, scheduler, plugin))
            except Exception:  # a page must not take the scheduler down: log and go on
                logger.exception("mars_dask dashboard page %s", page.name)
            finally:
                busy[0] = False

        doc.add_next_tick_callback(refresh)
        doc.add_periodic_callback(refresh, refresh_ms(page.name))


def individual_doc(name: str):
    """The bokeh application function of ``/individual-mars-NAME`` (distributed calls it
    with the scheduler, the template variables and each new document)."""

    def doc_function(scheduler, extra, doc):
        if not hasattr(scheduler.plugins.get(P.PLUGIN_NAME), "tracker"):
            return _no_plugin(doc, TITLE[name])
        page = PAGES[name]()
        doc.add_root(page.root)
        doc.title = TITLE[name]
        _attach(doc, scheduler, [page])
        theme = DI.dashboard_theme()
        if theme is not None:
            doc.theme = theme

    doc_function.__name__ = f"mars_{name}_doc"
    return doc_function


def mars_doc(scheduler, extra, doc):
    """``/mars``: the four pages on one, inside the dashboard's template (its top bar)."""
    if not hasattr(scheduler.plugins.get(P.PLUGIN_NAME), "tracker"):
        return _no_plugin(doc, "Mars")
    pages = [PAGES[n]() for n in ("tileables", "quota", "store", "failover")]
    for p in pages:
        p.root.children.insert(0, Div(text=f"<h3>{html.escape(TITLE[p.name])}</h3>"))
    doc.add_root(column(row(pages[0].root, pages[1].root, sizing_mode="stretch_width"),
                        row(pages[2].root, pages[3].root, sizing_mode="stretch_width"),
                        sizing_mode="stretch_width"))
    doc.title = "Dask: Mars"
    _attach(doc, scheduler, pages)
    DI.use_dashboard_template(doc, extra)


#: url -> bokeh application function, as distributed's own ``applications``
APPLICATIONS = {f"/individual-mars-{n}": individual_doc(n) for n in PAGES}
APPLICATIONS["/" + _http.NAV_PAGE] = mars_doc  # (linked in the top bar at plugin start)


DI.register_dashboard_pages(APPLICATIONS)

