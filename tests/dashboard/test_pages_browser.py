"""The Mars dashboard pages (mars_dask/plugins/_pages.py) in a real browser: headless
Chromium loads ``/individual-mars-{tileables,quota,store,failover}`` and ``/mars`` from a
cluster started with the README's CLIs while a job runs, the pages render (screenshots in
the test's tmp_path, checked not to be blank), and the figures on them are the scheduler's
state: equal to what the JSON routes answer at about the same moment, while the job holds
still, after it finished, for the stores' contents, and after a worker process was killed
and its stored results adopted. Plus the links to the pages in the dashboard's top bar,
its "More..." menu and ``/individual-plots.json`` (plain HTTP)."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

import mars_dask
import mars_dask.tensor as mt
from mars_dask.tensor.arithmetic import elementwise
from tests.dashboard import _kernels as DK
from tests.dashboard.conftest import (PAGES, assert_screenshot, expected, figure_pairs, figures, get_text,
                                      open_page, route, wait_until_page_matches)
from tests.helpers import run_in_thread

pytestmark = pytest.mark.timeout(240)

INDIVIDUAL = {f"individual-mars-{n}": f"Mars {n.title()}" for n in PAGES}
#: bar colours of the pages' figures (_pages.py): chunks done, the quota, shared memory
GREEN, QUOTA_GREY, BLUE = (0x2C, 0xA0, 0x2C), (0xDD, 0xDD, 0xDD), (0x1F, 0x77, 0xB4)
#: the store page's figures no other page has (on /mars, "workers" is also the quota's)
STORE_ONLY = {"keys", "memory-bytes", "shm-bytes", "disk-bytes", "backlog-bytes"}


@pytest.fixture(scope="module")
def held(dash_cluster):
    """32 chunks of 160 kB executed and held (their stores keep them in shared memory)."""
    x = mt.random.RandomState(7).rand(32, 20_000, chunk_size=(1, 20_000))
    mars_dask.execute(x)
    return x, x.fetch()


def _mask_store(pairs):
    """(the store's own figures' values replaced by "*")"""
    return [(k, "*" if k in STORE_ONLY else v) for k, v in pairs]


def _stalled(url: str, key: str):
    """The call executing ``key`` while every worker thread waits at the gate and nothing
    moves (the same figures twice, 0.3 s apart), else None."""
    def look():
        q = route(url, "quota")
        calls = route(url, "tileables")["calls"]
        call = next((c for c in calls if any(t["key"] == key for t in c["tileables"])), None)
        if call is None:
            return None
        return call["state"], call["done"], sum(w["executing"] for w in q["workers"].values())
    a = look()
    if a is None or a[0] != "running" or a[2] < 4 or a[1] == 0:
        return None
    time.sleep(0.3)
    return a if look() == a else None


# -- plain HTTP: where the pages are linked ---------------------------------------------------
def test_top_bar_more_menu_and_individual_plots_list_the_mars_pages(dash_cluster):
    url = dash_cluster.url
    html = get_text(f"{url}/status")
    nav = html[html.index('id="myTopnav"'):]
    top, more = nav[:nav.index('class="dropdown"')], nav[nav.index('class="dropdown-content"'):]
    more = more[:more.index("</ul>")]
    top_links = dict((h, t.strip()) for h, t in re.findall(r'<a href="([^"]+)">([^<]*)</a>', top))
    more_links = dict((h, t.strip()) for h, t in re.findall(r'<a href="([^"]+)">([^<]*)</a>', more))
    assert top_links.get("mars") == "Mars", top_links
    assert list(top_links)[:2] == ["status", "workers"], top_links  # Dask's own are still first
    for href, name in INDIVIDUAL.items():
        assert more_links.get(href) == name, (href, more_links)
    plots = json.loads(get_text(f"{url}/individual-plots.json"))
    for href, name in INDIVIDUAL.items():
        assert plots.get(f"Individual {name}") == f"/{href}", plots
    # each page is served (bokeh's HTML shell; the figures come over its websocket), /mars
    # inside the dashboard's template with the same top bar
    for path in [*INDIVIDUAL, "mars"]:
        assert "bokeh" in get_text(f"{url}/{path}").lower(), path
    mars_html = get_text(f"{url}/mars")
    assert 'id="myTopnav"' in mars_html and '<a href="mars">Mars</a>' in mars_html


# -- in the browser -----------------------------------------------------------------------------
def test_pages_show_a_running_job_as_the_scheduler_sees_it(browser, dash_cluster, tmp_path):
    """300 chunks; those from 200 on wait at a gate: the job runs, then holds every thread,
    and its figures hold still while each page is compared with the routes and shot. The
    gate opens: the open pages follow the job to its end without a reload."""
    url = dash_cluster.url
    gate = tmp_path / "gate"
    n = 300
    y = elementwise(DK.gated, mt.arange(n, chunk_size=1), dtype=np.int64, gate=str(gate), first=200)
    th, box = run_in_thread(mars_dask.execute, y)
    tabs = {}
    try:
        deadline = time.monotonic() + 60
        while not _stalled(url, y.data.key):
            assert time.monotonic() < deadline, f"the job did not reach its gate: {route(url, 'tileables')}"
            assert th.is_alive(), box
            time.sleep(0.1)

        for name in PAGES:
            tabs[name] = page = open_page(browser, url, f"individual-mars-{name}")
            check = None
            if name == "tileables":
                def check(f):
                    return int(f["running-calls"]) >= 1 and 0 < int(f["chunks-done"]) < int(f["chunks-total"])
            got, _ = wait_until_page_matches(page, url, name, only=None if name != "store" else ("workers",),
                                             check=check)
            colors = {GREEN: 2_000} if name == "tileables" else {QUOTA_GREY: 2_000} if name == "quota" else None
            assert_screenshot(page, tmp_path / f"running-{name}.png", colors=colors)
        q = figures(tabs["quota"])
        assert (q["workers"], q["executing"], q["admission"]) == ("2", "4", "on"), q

        # /mars: the four pages in one, in the order tileables, quota, store, failover (the
        # store's figures are compared by the store test: only their names here)
        tabs["mars"] = page = open_page(browser, url, "mars")
        deadline = time.monotonic() + 20
        while True:
            want = [(k, v) for name in PAGES for k, v in expected(name, route(url, name)).items()]
            got = figure_pairs(page)
            if _mask_store(got) == _mask_store(want):
                break
            assert time.monotonic() < deadline, f"/mars shows {got}, the routes say {want}"
            page.wait_for_timeout(200)
        assert_screenshot(page, tmp_path / "running-mars.png", colors={GREEN: 2_000})

        gate.touch()
        th.join(60)
        assert not th.is_alive() and "error" not in box, box
        # the tabs opened while it ran follow it to its end
        got, answer = wait_until_page_matches(
            tabs["tileables"], url, "tileables",
            check=lambda f: f["running-calls"] == "0" and f["chunks-done"] == f["chunks-total"])
        call = next(c for c in answer["calls"] if any(t["key"] == y.data.key for t in c["tileables"]))
        assert (call["state"], call["done"], call["total"], call["erred"]) == ("finished", n, n, 0), call
        assert got["chunks-erred"] == "0" and int(got["bytes-held"]) >= n * 8
        got, _ = wait_until_page_matches(tabs["quota"], url, "quota",
                                         check=lambda f: f["executing"] == "0" and f["waiting"] == "0")
        assert got["reserved"] == "0"
        np.testing.assert_array_equal(y.fetch(), np.arange(n) + 1)
        assert_screenshot(tabs["tileables"], tmp_path / "finished-tileables.png", colors={GREEN: 2_000})
    finally:
        gate.touch()
        th.join(60)
        for page in tabs.values():
            page.close()


def test_open_pages_send_a_running_job_only_its_changes(browser, dash_cluster):
    """While a job runs, an open page gets at most one message per changed model and
    refresh, and the browser sends nothing back. Each message is work on the scheduler's
    event loop (bokeh serializes it there): axis labels that changed with the counts made the
    browser re-lay the plot out and send its new size back, and a range it computes itself
    was sent back and set again, each refresh (issue 20's cost figure)."""
    import json as _json

    url = dash_cluster.url
    frames = {}  # page -> {"in": server-to-browser PATCH-DOCs, "out": browser-to-server ones}
    tabs = {}

    def watch(name):
        counts = frames[name] = {"in": 0, "out": 0}

        def on_ws(ws):
            def count(direction):
                def f(payload):
                    if isinstance(payload, str) and '"msgtype"' in payload:
                        if _json.loads(payload).get("msgtype") == "PATCH-DOC":
                            counts[direction] += 1
                return f
            ws.on("framereceived", count("in"))
            ws.on("framesent", count("out"))
        return on_ws

    try:
        for name in ("tileables", "quota", "store"):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("websocket", watch(name))
            page.goto(f"{url}/individual-mars-{name}")
            page.wait_for_selector(".mars-figure", state="attached")
            tabs[name] = page
        tabs["tileables"].wait_for_timeout(2500)  # the first layout's messages are over
        for c in frames.values():
            c["in"] = c["out"] = 0
        y = elementwise(DK.slow, mt.arange(160, chunk_size=1), dtype=np.int64, delay=0.05)
        t0 = time.monotonic()
        th, box = run_in_thread(mars_dask.execute, y)
        while th.is_alive():  # (the page's events are delivered while playwright waits)
            tabs["tileables"].wait_for_timeout(100)
        took = time.monotonic() - t0
        assert "error" not in box, box
        tabs["tileables"].wait_for_timeout(1500)
        assert took > 2, took  # several refreshes happened during the job
        assert {n: c["out"] for n, c in frames.items()} == {"tileables": 0, "quota": 0, "store": 0}, frames
        # tileables: bars, table, figures line; one refresh a second
        assert 0 < frames["tileables"]["in"] <= 3 * (took + 2.5), (frames, took)
        np.testing.assert_array_equal(y.fetch(), np.arange(160) + 1)
    finally:
        for page in tabs.values():
            page.close()


def test_store_page_shows_what_the_stores_hold(browser, dash_cluster, held, tmp_path):
    url = dash_cluster.url
    page = open_page(browser, url, "individual-mars-store")
    got, answer = wait_until_page_matches(page, url, "store", timeout=10)
    stores = [w["store"] for w in answer["workers"].values()]
    assert sum(s["keys"] for s in stores) >= 32 and int(got["keys"]) >= 32, got
    assert int(got["shm-bytes"]) >= 32 * 20_000 * 8 and got["backlog-bytes"] == "0", got
    assert_screenshot(page, tmp_path / "store.png", colors={BLUE: 2_000})
    page.close()
    # the store's figures on /mars: after the tileables' and the quota's
    page = open_page(browser, url, "mars")
    deadline = time.monotonic() + 10
    while True:
        want = list(expected("store", route(url, "store")).items())
        pairs = figure_pairs(page)
        start = [k for k, _ in pairs].index("keys") - 1  # (the store's "workers" is just before)
        if pairs[start:start + len(want)] == want:
            break
        assert time.monotonic() < deadline, f"/mars shows {pairs}, the store route says {want}"
        page.wait_for_timeout(200)
    page.close()


def test_failover_page_after_a_worker_process_is_killed(browser, dash_cluster, held, tmp_path):
    """SIGKILL of a worker process (not its nanny): the nanny starts a new one, the scheduler
    adopts what its store still holds; the failover page (open all along) shows it."""
    c, url = dash_cluster, dash_cluster.url
    x, xv = held
    page = open_page(browser, url, "individual-mars-failover")
    before, answer = wait_until_page_matches(page, url, "failover")
    assert before["worker-losses"] == "0" and before["adopted"] == "0", before
    who = c.client.who_has([ch.future for ch in x.data.chunks])
    name, _ = max(((str(w["name"]), sum(a in h for h in who.values())) for a, w in c.workers().items()),
                  key=lambda p: p[1])
    c.kill_worker_process(name)
    c.wait(lambda: c.mars_stats()["adopted"] > 0 and len(c.workers()) == 2, 120, "the restart and adoption")
    got, answer = wait_until_page_matches(page, url, "failover",
                                          check=lambda f: f["adopted"] != "0" and f["pending-recovery"] == "0")
    assert got["adopted"] == str(answer["restart"]["adopted"]) and int(got["adopted"]) > 0, (got, answer["restart"])
    assert got["worker-losses"] == str(answer["failover"]["worker_losses"]) == "1", got
    assert any(e.get("action") == "worker-lost" for e in answer["events"]), answer["events"]
    assert_screenshot(page, tmp_path / "failover.png")
    page.close()
    np.testing.assert_array_equal(x.fetch(), xv)
