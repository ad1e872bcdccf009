"""What the dashboard tests share: a cluster started with the README's CLIs and preloads
serving its dashboard on loopback, headless Chromium driven by playwright, and readers of
the pages' figures (``<span class="mars-figure" data-name=... data-value=...>``) and of the
JSON routes the figures must agree with."""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from tests.worker.conftest import CLICluster

PAGES = ("tileables", "quota", "store", "failover")
#: Chromium as the tests run it: no sandbox (CI containers run as root), no GPU, nothing
#: fetched from the network on its own
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NO_CHROMIUM = "chromium not installed: apt-get install chromium (Debian's; `playwright install` is not used)"
#: the dashboard on a free loopback port (CLICluster passes --no-dashboard: the last flag wins)
DASHBOARD_ARGS = ["--dashboard", "--dashboard-address", "127.0.0.1:0"]
MARS_ENV = {"DASK_MARS_DASK__SCHEDULER__RESTART_GRACE": "60s", "DASK_MARS_DASK__STORE__WRITE_DELAY": "0"}


def chromium_executable() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def pytest_terminal_summary(terminalreporter):
    """Say why dashboard tests were skipped even without ``-rs`` (a missing browser is a
    machine's setup, easy to miss among the dots)."""
    reasons = set()
    for rep in terminalreporter.stats.get("skipped", []):
        if "tests/dashboard/" in rep.nodeid.replace("\\", "/") and isinstance(rep.longrepr, tuple):
            reasons.add(str(rep.longrepr[2]).removeprefix("Skipped: "))
    for reason in sorted(reasons):
        terminalreporter.write_line(f"tests/dashboard skipped: {reason}", yellow=True)


# -- the cluster ------------------------------------------------------------------------------
def start_cluster(tmp: Path, n_workers: int) -> CLICluster:
    c = CLICluster(tmp, mars=True, n_workers=n_workers, nthreads=2, memory_limit="2GiB",
                   scheduler_args=DASHBOARD_ARGS, env=MARS_ENV)
    c.start_or_clean_up()
    c.http_port = c.client.scheduler_info()["services"]["dashboard"]
    c.url = f"http://127.0.0.1:{c.http_port}"
    return c


@pytest.fixture(scope="module")
def dash_cluster(tmp_path_factory):
    """``dask scheduler --preload mars_dask`` with its dashboard, 2 ``dask worker --nanny
    --preload mars_dask --preload-nanny mars_dask`` (2 threads each); ``.url`` is the
    dashboard's. Closed (processes killed by pid) after the module: its client is the
    default one meanwhile."""
    c = start_cluster(tmp_path_factory.mktemp("cluster"), n_workers=2)
    yield c
    c.close()
    c.cleanup_dirs()


# -- the browser ------------------------------------------------------------------------------
def _skip(reason: str):
    print(f"\n{reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (the system's: Debian's ``chromium`` package) driven by playwright;
    the tests skip, saying why, where either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        _skip(f"playwright not importable ({e}): pip install -e '.[test]'")
    exe = chromium_executable()
    if exe is None:
        _skip(NO_CHROMIUM)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


# -- reading pages and routes -----------------------------------------------------------------
def route(url: str, name: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/mars/v1/{name}", timeout=30) as r:
        assert r.status == 200
        out = json.loads(r.read())
    assert out["version"] == 1
    return out


def get_text(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        raise AssertionError(f"GET {url}: {e.code} {e.read()[:300]!r}") from e


def figure_pairs(page) -> list[tuple[str, str]]:
    """The page's figures in document order, ``[(data-name, data-value)]``, read in one go
    (the locator pierces bokeh's shadow DOM; one evaluation, so one rendering of the Div)."""
    return [tuple(p) for p in page.locator(".mars-figure").evaluate_all(
        "els => els.map(e => [e.dataset.name, e.dataset.value])")]


def figures(page) -> dict[str, str]:
    pairs = figure_pairs(page)
    out = dict(pairs)
    assert len(out) == len(pairs), f"figure names repeat on an individual page: {pairs}"
    return out


def _sum(xs) -> int:
    return int(sum(x or 0 for x in xs))


def expected(name: str, answer: dict) -> dict[str, str]:
    """The figures page ``name`` must show for a route's ``answer`` (as the strings in
    ``data-value``): computed here from the JSON, independently of ``_pages.py``."""
    if name == "tileables":
        calls = answer["calls"]
        want = {"calls": len(calls), "running-calls": sum(c["state"] == "running" for c in calls),
                "chunks-done": _sum(c["done"] for c in calls), "chunks-total": _sum(c["total"] for c in calls),
                "chunks-erred": _sum(c["erred"] for c in calls), "bytes-held": _sum(c["bytes"] for c in calls)}
    elif name == "quota":
        ws = answer["workers"].values()
        want = {"admission": "on" if answer["admission"] else "off", "workers": len(ws),
                "reserved": _sum(w["reserved"] for w in ws), "executing": _sum(w["executing"] for w in ws),
                "waiting": answer["n_waiting"]}
    elif name == "store":
        stores = [(w or {}).get("store") or {} for w in answer["workers"].values()]
        tier = lambda s, t: s.get("tiers", {}).get(t, {}).get("bytes", 0)  # noqa: E731
        want = {"workers": len(stores), "keys": _sum(s.get("keys") for s in stores),
                "memory-bytes": _sum(s.get("memory") for s in stores),
                "shm-bytes": _sum(tier(s, "shm") for s in stores),
                "disk-bytes": _sum(tier(s, "disk") for s in stores),
                "backlog-bytes": _sum(s.get("write_behind", {}).get("bytes") for s in stores)}
    elif name == "failover":
        f, r = answer["failover"] or {}, answer["restart"]
        want = {"worker-losses": f.get("worker_losses", 0), "adopted": r.get("adopted", 0),
                "recomputed": f.get("recomputed", r.get("recomputed", 0)), "restored": f.get("restored_keys", 0),
                "checkpoints": f.get("checkpoints_written", 0), "checkpoint-loads": f.get("checkpoint_loads", 0),
                "pending-recovery": f.get("pending_recovery", 0), "journal-entries": f.get("journal_entries", 0),
                "journal-bytes": f.get("journal_bytes", 0)}
    else:
        raise KeyError(name)
    return {k: str(v) for k, v in want.items()}


def wait_until_page_matches(page, url: str, name: str, *, timeout: float = 20.0, only=None, check=None):
    """Poll until the figures of page ``name`` (``page``: an individual page) equal what the
    route answers at about the same moment (the pages refresh every 2-4 s: ``mars-dask.dashboard.refresh-interval``); ``only``: the
    figures compared; ``check(figures)``: a further condition. Returns ``(figures, answer)``."""
    deadline = time.monotonic() + timeout
    while True:
        answer = route(url, name)
        want = expected(name, answer)
        got = figures(page)
        if only is not None:
            want = {k: want[k] for k in only}
        if {k: got.get(k) for k in want} == want and (check is None or check(got)):
            return got, answer
        if time.monotonic() > deadline:
            raise AssertionError(f"the {name} page shows {got}, the route's state is {want} (after {timeout} s)")
        page.wait_for_timeout(200)


def open_page(browser, url: str, path: str, *, timeout: float = 30.0):
    """A new tab on ``url/path`` (1300x900), once its figures are drawn."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.set_default_timeout(timeout * 1000)
    page.goto(f"{url}/{path}")
    page.wait_for_selector(".mars-figure", state="attached")
    return page


def assert_screenshot(page, path: Path, *, colors: dict | None = None) -> None:
    """Save a full-page PNG and check it shows something: a non-trivial size, then
    (Pillow) many distinct colours (text, axes, bars) and thousands of pixels drawn;
    ``colors``: ``{(r, g, b): min pixels}`` that must be present (e.g. the bars' fill)."""
    page.screenshot(path=str(path), full_page=True)
    size = path.stat().st_size
    assert size > 8_000, f"{path.name}: {size} bytes, a blank page?"
    with Image.open(path) as im:
        rgb = im.convert("RGB")
        w, h = rgb.size
        assert w >= 1000 and h >= 600, (path.name, rgb.size)
        counts = rgb.getcolors(maxcolors=1 << 20)
    assert counts is not None
    n_colors = len(counts)
    drawn = w * h - max(counts)[0]  # pixels not of the background's colour
    assert n_colors >= 30 and drawn >= 5_000, f"{path.name}: {n_colors} colours, {drawn} pixels drawn: blank?"
    have = {c: n for n, c in counts}
    for c, n in (colors or {}).items():
        assert have.get(c, 0) >= n, f"{path.name}: colour {c} on {have.get(c, 0)} pixels, wanted >= {n}"
