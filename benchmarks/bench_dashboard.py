"""The Mars dashboard pages' cost on the scheduler (mars_dask/plugins/_pages.py).

    python benchmarks/bench_dashboard.py [--tasks 100000] [--reps 3] [--workers 2]

A cluster started with the README's CLIs (``dask scheduler --preload mars_dask`` with its
dashboard on loopback, ``dask worker --nanny --preload mars_dask --preload-nanny mars_dask``,
1 thread each) runs a job of about ``--tasks`` Dask tasks (``(y * 2 + 1).sum()`` of a
``(tasks / 2, 10)`` tensor in rows of 1: one fused task per row plus the reduction tree),
``--reps`` times with the five Mars pages (``/individual-mars-{tileables,quota,store,
failover}`` and ``/mars``) open in headless Chromium and refreshing, and as often with no page
open, interleaved (pages, none, none, pages, ...: a slow phase of the machine hits both).
Printed, as medians:

- the job's time: ``execute()``'s wall time (client-side tiling included), the call's time
  on the scheduler (``elapsed`` of ``/api/mars/v1/tileables``: from its graph's arrival to its
  last chunk), the scheduler's tasks/s over the latter, and the scheduler process's CPU
  seconds during the run (user + system): target with pages open at most 5% slower;
- page update latency: how long after the job's last chunk finished on the scheduler the
  open tileables page showed ``chunks done == chunks`` (the page refreshes every
  ``mars-dask.dashboard.refresh-interval``, 2 s by default, so about 1 s is expected; each
  run's figure is one sample);
- what one refresh of each page costs the scheduler with the job's tasks in flight: the
  page's report (the route's function) plus its render into the bokeh models, timed in the
  scheduler process (tileables and quota every refresh interval, store and failover every
  two; each of the four is open twice: on its own and in ``/mars``).

Chromium runs on the same machine as the cluster (so its rendering competes with the
scheduler for CPU there), in the idle scheduling class (``--no-nice-browser``: at the cluster's priority); the
scheduler's CPU seconds are the figure that depends least on that. The system's ``chromium`` is used (``apt-get install chromium``); playwright never
downloads a browser here.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import settle  # noqa: E402

PAGES = ("individual-mars-tileables", "individual-mars-quota", "individual-mars-store",
         "individual-mars-failover", "mars")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _cli_cluster(n_workers: int):
    """Scheduler (with its dashboard) and nanny workers with the README's preloads, on
    127.0.0.1, their files in a temporary directory; yields (address, dashboard url,
    scheduler pid)."""
    port, dash = _free_port(), _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    tmp = tempfile.mkdtemp(prefix="mars-dask-bench-dashboard-")
    shm = f"/dev/shm/mars-dask-bench-{uuid.uuid4().hex[:8]}" if os.path.isdir("/dev/shm") else os.path.join(tmp, "shm")
    env = dict(os.environ)
    env.update({"DASK_MARS_DASK__STORE__DIRECTORY": shm,
                "DASK_MARS_DASK__STORE__SPILL_DIRECTORY": os.path.join(tmp, "spill"),
                "DASK_MARS_DASK__FAILOVER__JOURNAL_DIRECTORY": os.path.join(tmp, "journal"),
                "DASK_MARS_DASK__FAILOVER__CHECKPOINT_DIRECTORY": os.path.join(tmp, "checkpoints"),
                "DASK_DISTRIBUTED__WORKER__DAEMON": "False"})
    pre = ["--preload", "mars_dask"]
    log = open(os.path.join(tmp, "cluster.log"), "wb")  # noqa: SIM115 - closed below
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", f"127.0.0.1:{dash}", *pre],
                              cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)]
    for i in range(n_workers):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", addr, "--host", "127.0.0.1", "--nanny", "--nthreads", "1",
             "--name", f"w{i}", "--no-dashboard", "--local-directory", os.path.join(tmp, f"w{i}"),
             *pre, "--preload-nanny", "mars_dask"],
            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    try:
        yield addr, f"http://127.0.0.1:{dash}", procs[0].pid
    finally:
        for p in procs[1:] + procs[:1]:  # workers first: a clean close removes their stores
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


# -- in the scheduler process ---------------------------------------------------------------
def _mars_sessions(dask_scheduler) -> int:
    """Bokeh sessions of the Mars pages alive on the scheduler (a closed tab's session, and
    its refresh timers, lives on for bokeh's unused-session lifetime, 15 s by default)."""
    n = 0
    for app in getattr(dask_scheduler.http_application, "applications", ()):
        for url, ctx in getattr(app, "_applications", {}).items():
            if "mars" in url:
                n += len(ctx.sessions)
    return n


async def _refresh_cost(dask_scheduler, repeat: int = 5) -> dict:
    """Milliseconds one refresh of each page takes here, the median of ``repeat``: its report
    (the route's function) and its render into the page's bokeh models, with the models in a
    document as when a browser has the page open (a model change in a document costs more
    than on a lone model: bokeh keeps the document's set of models up to date), on its own
    (``/individual-mars-NAME``) and beside the three others (``/mars``); not included: bokeh
    serializing the changes to the browser."""
    from bokeh.document import Document
    from bokeh.layouts import column

    from mars_dask.plugins import _http, _pages
    from mars_dask.plugins import _protocol as P

    plugin = dask_scheduler.plugins[P.PLUGIN_NAME]
    out = {"tasks": len(dask_scheduler.tasks)}
    answers = {name: await _http.ANSWERS[name](dask_scheduler, plugin) for name in _pages.PAGES}
    alone = {name: cls() for name, cls in _pages.PAGES.items()}
    for page in alone.values():
        Document().add_root(page.root)
    together = {name: cls() for name, cls in _pages.PAGES.items()}
    Document().add_root(column(*(p.root for p in together.values())))
    for name in _pages.PAGES:
        report, render, render_mars = [], [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            answer = await _http.ANSWERS[name](dask_scheduler, plugin)
            t1 = time.perf_counter()
            alone[name].render(answer)
            t2 = time.perf_counter()
            together[name].render(answer)
            report.append(t1 - t0)
            render.append(t2 - t1)
            render_mars.append(time.perf_counter() - t2)
        out[name] = tuple(1e3 * statistics.median(x) for x in (report, render, render_mars))
    del answers
    # the failover report's part on the event loop: Failover.stats() (which waits, up to 2 s,
    # for the journal writer to catch up once more after the route's own wait in a thread)
    f = plugin.failover
    if f is not None:
        on_loop = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            f.stats()
            on_loop.append(time.perf_counter() - t0)
        out["failover_stats_on_loop"] = 1e3 * statistics.median(on_loop)
    return out


def _gc_watch(dask_scheduler=None) -> dict:
    """Collections and their seconds per generation in this process since the last call
    (installs the ``gc`` callback on the first): a page that allocates on a scheduler holding
    100k tasks can make Python's full collections, which walk all of them, more frequent."""
    import gc

    st = globals().setdefault("_GC_STATE", {"n": [0, 0, 0], "s": [0.0, 0.0, 0.0], "t0": None})
    if not st.get("installed"):
        def cb(phase, info, st=st):
            if phase == "start":
                st["t0"] = time.perf_counter()
            elif st["t0"] is not None:
                g = info["generation"]
                st["n"][g] += 1
                st["s"][g] += time.perf_counter() - st["t0"]
        gc.callbacks.append(cb)
        st["installed"] = True
    out = {"n": list(st["n"]), "s": list(st["s"])}
    st["n"], st["s"] = [0, 0, 0], [0.0, 0.0, 0.0]
    return out


def _n_tasks(dask_scheduler) -> int:
    return len(dask_scheduler.tasks)


# -- client side ----------------------------------------------------------------------------
def _route(url: str, name: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/mars/v1/{name}", timeout=60) as r:
        return json.loads(r.read())


def _job(n_rows: int):
    import mars_dask.tensor as mt

    y = mt.ones((n_rows, 10), chunk_size=(1, 10))
    return (y * 2 + 1).sum()


def _cpu(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _figure(page, name: str) -> str | None:
    got = page.locator(f".mars-figure[data-name={name}]").evaluate_all("els => els.map(e => e.dataset.value)")
    return got[0] if got else None


def run_once(client, url: str, sched_pid: int, n_rows: int, tabs: dict | None) -> dict:
    import threading

    import mars_dask

    s = _job(n_rows)
    box: dict = {}

    def run():
        try:
            t0 = time.perf_counter()
            mars_dask.execute(s, show_progress=False)
            box["wall"] = time.perf_counter() - t0
        except BaseException as e:  # noqa: BLE001 - reported below
            box["error"] = e

    cpu0 = _cpu(sched_pid)
    workers = client.run(os.getpid)
    wcpu0 = sum(_cpu(pid) for pid in workers.values())
    client.run_on_scheduler(_gc_watch)
    th = threading.Thread(target=run, daemon=True)
    th.start()
    seen = None
    if tabs is not None:  # watch the tileables page until it shows every chunk of every call done
        page = tabs["individual-mars-tileables"]
        while th.is_alive():  # (looking rarely meanwhile: the browser shares the machine's CPUs)
            page.wait_for_timeout(200)
        while "error" not in box:
            done, total, running = (_figure(page, k) for k in ("chunks-done", "chunks-total", "running-calls"))
            if running == "0" and done == total:
                seen = time.time()
                break
            page.wait_for_timeout(20)
    th.join()
    cpu = _cpu(sched_pid) - cpu0
    wcpu = sum(_cpu(pid) for pid in workers.values()) - wcpu0
    gcs = client.run_on_scheduler(_gc_watch)
    if "error" in box:
        raise box["error"]
    value = float(s.fetch())
    assert value == n_rows * 30, value
    call = next(c for c in _route(url, "tileables")["calls"] if any(t["key"] == s.data.key for t in c["tileables"]))
    out = {"wall": box["wall"], "elapsed": call["elapsed"], "cpu": cpu, "chunks": call["total"],
           "worker_cpu": wcpu, "gc2_n": gcs["n"][2], "gc2_s": gcs["s"][2], "gc01_s": gcs["s"][0] + gcs["s"][1]}
    if seen is not None:
        out["latency"] = seen - (call["submitted"] + call["elapsed"])
    del s
    return out


def _nice_browser() -> None:
    """Put Chromium's processes (children of this one) under ``SCHED_IDLE`` (nice 19 where that
    is refused): on this machine it shares the cores with the cluster, where a user's browser
    would not. Nice 19 alone is not enough: a niced renderer still holds its core until the
    kernel's wakeup granularity runs out, so a scheduler woken by a message waits behind it
    an idle-class process yields at once. Called
    again after tabs open (a new renderer inherits its zygote's class, but not always)."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error, OSError):
            if "chrom" in child.name().lower():
                child.nice(19)
                os.sched_setscheduler(child.pid, os.SCHED_IDLE, os.sched_param(0))


def open_tabs(browser, url: str) -> dict:
    tabs = {}
    for path in PAGES:
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.set_default_timeout(60_000)
        page.goto(f"{url}/{path}")
        page.wait_for_selector(".mars-figure", state="attached")
        tabs[path] = page
    return tabs


def close_tabs(client, tabs: dict, timeout: float = 60) -> None:
    for page in tabs.values():
        page.close()
    deadline = time.monotonic() + timeout
    while client.run_on_scheduler(_mars_sessions) and time.monotonic() < deadline:
        time.sleep(0.25)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=100_000, help="about this many Dask tasks per job")
    p.add_argument("--reps", type=int, default=3, help="runs with the pages open, and as many without")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--nice-browser", action=argparse.BooleanOptionalAction, default=True,
                   help="run Chromium at nice 19 (a user's browser is on another machine: here it "
                        "would take the cluster's cores)")
    a = p.parse_args(argv)
    # a SIGTERM unwinds (the cluster's processes, in sessions of their own, are stopped on the way out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("chromium not installed (apt-get install chromium): nothing to measure", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        print(f"playwright not importable ({e}): pip install -e '.[test]'", file=sys.stderr)
        return 2
    from distributed import Client

    import mars_dask  # noqa: F401 - (the client side of execute())
    from mars_dask.plugins._pages import refresh_ms  # (the scheduler reads the same config)

    n_rows = max(a.tasks // 2, 1)
    n_tasks = len(_job(n_rows).__dask_graph__())
    results = {"pages": [], "none": []}
    with _cli_cluster(a.workers) as (addr, url, sched_pid), Client(addr, timeout=60) as client, \
            sync_playwright() as pw:
        client.wait_for_workers(a.workers, timeout=60)
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        if a.nice_browser:
            _nice_browser()
        baseline = client.run_on_scheduler(_n_tasks)
        run_once(client, url, sched_pid, min(n_rows, 5_000), None)  # warm-up (imports, code paths)
        gc.collect()
        settle(client, baseline)
        order = []
        for i in range(a.reps):
            order += ["pages", "none"] if i % 2 == 0 else ["none", "pages"]
        for arm in order:
            tabs = open_tabs(browser, url) if arm == "pages" else None
            if tabs is not None and a.nice_browser:
                _nice_browser()
            r = run_once(client, url, sched_pid, n_rows, tabs)
            if tabs is not None:
                close_tabs(client, tabs)
            results[arm].append(r)
            print(f"  {arm:5s} wall {r['wall']:7.2f} s  on the scheduler {r['elapsed']:7.2f} s  "
                  f"scheduler CPU {r['cpu']:7.2f} s  workers' CPU {r['worker_cpu']:7.2f} s  "
                  f"scheduler GC: {r['gc2_n']} full {r['gc2_s']:.2f} s, young {r['gc01_s']:.2f} s"
                  + (f"  page latency {r['latency']:.2f} s" if "latency" in r else ""),
                  flush=True)
            gc.collect()
            settle(client, baseline)

        # one refresh of each page on the scheduler, with the job's tasks in flight
        import threading

        s = _job(n_rows)
        th = threading.Thread(target=lambda: mars_dask.execute(s, show_progress=False), daemon=True)
        th.start()
        deadline = time.monotonic() + 300
        while client.run_on_scheduler(_n_tasks) < baseline + n_tasks // 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        cost = client.run_on_scheduler(_refresh_cost)
        th.join()
        del s
        browser.close()

    med = {arm: {k: statistics.median(r[k] for r in rs) for k in ("wall", "elapsed", "cpu", "worker_cpu", "gc2_s")}
           for arm, rs in results.items()}
    chunks = results["none"][0]["chunks"]
    print(f"\njob: {n_tasks} Dask tasks ({chunks} Mars chunks), {a.workers} workers x 1 thread; "
          f"medians of {a.reps} runs each, interleaved")
    print(f"{'':46s} {'pages open':>12s} {'no page':>10s} {'ratio':>7s}  target")
    for label, k in (("execute() wall time, s", "wall"), ("the call on the scheduler, s", "elapsed"),
                     ("scheduler CPU during the run, s", "cpu"), ("workers' CPU during the run, s", "worker_cpu"),
                     ("scheduler's full GC collections, s", "gc2_s")):
        m, d = med["pages"][k], med["none"][k]
        print(f"{label:46s} {m:12.3f} {d:10.3f} {m / d if d else float('nan'):7.3f}" + ("  <=1.05" if k != "gc2_s" else ""))
    tp, tn = n_tasks / med["pages"]["elapsed"], n_tasks / med["none"]["elapsed"]
    print(f"{'scheduler tasks/s (tasks / call time)':46s} {tp:12.0f} {tn:10.0f} {tn / tp:7.3f}  <=1.05 (slowdown)")
    lat = [r["latency"] for r in results["pages"] if "latency" in r]
    if lat:
        print(f"\npage update latency (job's last chunk -> tileables page shows it), s: median {statistics.median(lat):.2f}"
              f", min {min(lat):.2f}, max {max(lat):.2f} (refresh every {refresh_ms('tileables') / 1000:g} s)")
    print(f"\none refresh on the scheduler with {cost['tasks']} tasks in flight, ms: report + render "
          "(in its own page / in /mars)")
    per_s = {n: 1000 / refresh_ms(n) for n in ("tileables", "quota", "store", "failover")}  # refreshes/s of a page
    alone = mars = 0.0
    for name in ("tileables", "quota", "store", "failover"):
        rep, ren, ren_mars = cost[name]
        alone += per_s[name] * (rep + ren)
        mars += per_s[name] * (rep + ren_mars)
        print(f"  {name:10s} {rep:8.2f} + {ren:6.2f} / {ren_mars:6.2f}")
    total = alone + mars
    if "failover_stats_on_loop" in cost:
        print(f"  (failover: Failover.stats() on the event loop, its own journal flush included: "
              f"{cost['failover_stats_on_loop']:.2f} ms)")
    print(f"  the 5 pages open (the 4 individual ones and /mars): {total:.1f} ms of scheduler time per second "
          f"({total / 10:.2f}% of a core), before bokeh serializes the changes to the browser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
