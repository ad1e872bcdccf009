"""The notebooks in ``notebooks/``, executed with nbclient and their outputs checked.

Each notebook runs in a fresh kernel of the interpreter running the tests (a kernel spec
written to a temporary ``JUPYTER_PATH``), with the repository on ``PYTHONPATH``, in a
temporary working directory and a temporary ``TMPDIR``:

- ``quickstart.ipynb``: tensors and DataFrames on the embedded cluster; the values printed
  and the reprs shown (pandas' text and HTML) are compared with numpy/pandas results
  computed here from the same data;
- ``failover.ipynb``: a CLI cluster, a worker process SIGKILLed during a job; the result,
  the new worker pid, ``failover_report``, the ``mars-failover`` events and the failover
  route's answer (results adopted from the restarted process's store);
- ``cluster.ipynb``: a CLI cluster with a small shared-memory limit; the progress widget
  (ending at all chunks), the store route (both tiers used) and the quota route read while
  tasks wait for admission.

The notebooks are stored without outputs. The CLI notebooks stop their clusters in their
last cell (its output: every process's exit code); every process the kernel left behind
(found by a marker in its environment) fails the test and is killed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import sys
import time
import uuid
from pathlib import Path

import nbclient
import nbformat
import numpy as np
import pandas as pd
import pytest

from tests.helpers import REPO, embedded_env

NOTEBOOKS = REPO / "notebooks"
KERNEL = "mars-dask-notebook-test"
#: seconds per cell (the slowest cells start a cluster or wait for a restart: ~10 s)
CELL_TIMEOUT = 180
MARKER = "MARS_DASK_NOTEBOOK_TEST"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MiB = 2**20


# -- running a notebook ------------------------------------------------------------------------
def _marked_processes(marker: str) -> list:
    """Live processes of this user whose environment carries ``marker`` (the kernel's
    children: clusters, workers)."""
    import psutil

    found = []
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        try:
            if p.environ().get(MARKER) == marker and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.fixture
def run_notebook(tmp_path, monkeypatch):
    """``run_notebook(name, env=None)`` -> the executed notebook (nbformat node)."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "mars_dask tests", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    marker = uuid.uuid4().hex

    def run(name: str, env: dict | None = None):
        path = NOTEBOOKS / name
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(not c.outputs and c.execution_count is None for c in code), \
            f"{name} is stored with outputs: clear them"
        work, tmp = tmp_path / "work", tmp_path / "tmp"
        work.mkdir()
        tmp.mkdir()
        kernel_env = dict(os.environ)
        kernel_env.update(env or {})
        kernel_env.update({
            "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "TMPDIR": str(tmp),
            "IPYTHONDIR": str(tmp_path / "ipython"),
            MARKER: marker,
        })
        client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT, startup_timeout=120,
                                         resources={"metadata": {"path": str(work)}})
        client.execute(env=kernel_env)
        return nb

    yield run
    # the kernel is gone: whatever it started should be too
    deadline = time.monotonic() + 10
    while (left := _marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for p in left:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes left running after the notebook: {[(p.pid, p.name()) for p in left]}"


# -- reading outputs ---------------------------------------------------------------------------
def tagged(nb, tag: str):
    cells = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{len(cells)} cells tagged {tag!r}"
    c = cells[0]
    assert not [o for o in c.outputs if o.output_type == "error"], c.outputs
    return c


def printed(cell) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def value(cell, label: str) -> str:
    """What the cell printed after ``label`` (a whole line's start)."""
    found = [ln[len(label):].strip() for ln in printed(cell).splitlines() if ln.startswith(label)]
    assert len(found) == 1, f"{label!r} in {printed(cell)!r}"
    return found[0]


def shown(cell, mime: str) -> list:
    """The ``mime`` data of the cell's displays and result, in order."""
    return [o.data[mime] for o in cell.outputs
            if o.output_type in ("display_data", "execute_result") and mime in o.data]


def result(cell, mime: str = "text/plain"):
    (r,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    return r.data[mime]


def json_shown(cell) -> dict:
    (d,) = shown(cell, "application/json")
    assert d["version"] == 1
    return d


# -- quickstart --------------------------------------------------------------------------------
def _quickstart_frames():
    """The notebook's data, built here again."""
    rng = np.random.RandomState(1)
    pdf = pd.DataFrame({
        "city": rng.choice(["Berlin", "Lima", "Osaka", "Perth"], 2_000),
        "amount": rng.gamma(2.0, 10.0, 2_000).round(2),
        "items": rng.randint(1, 6, 2_000),
    })
    cities = pd.DataFrame({"city": ["Berlin", "Lima", "Osaka", "Perth"], "country": ["DE", "PE", "JP", "AU"]})
    return pdf, cities


@pytest.mark.timeout(300)
def test_quickstart(run_notebook, tmp_path):
    env = embedded_env(tmp_path / "embedded")
    env["DASK_MARS_DASK__EMBEDDED__DASHBOARD_ADDRESS"] = "127.0.0.1:0"
    nb = run_notebook("quickstart.ipynb", env)
    data = np.random.RandomState(0).rand(1_000, 400)

    lazy = tagged(nb, "lazy-repr")
    assert "state=lazy" in result(lazy) and "(1000, 400)" in result(lazy)
    assert "<table" in result(lazy, "text/html")  # the structure, as a table

    c = tagged(nb, "tensor-allclose")
    assert printed(c).splitlines()[0] == "ndarray (400,)"
    assert value(c, "allclose:") == "True"
    c = tagged(nb, "tensor-sum")
    got = float(value(c, "sum:"))
    assert got == pytest.approx(data.sum(), rel=1e-12)
    assert float(value(c, "numpy sum:")) == data.sum()
    c = tagged(nb, "tensor-mask")
    assert value(c, "mask equals numpy:") == "True"
    n = int((data > 0.99).sum())
    assert value(c, "selected:") == f"({n},) numpy: ({n},)" and n > 0

    pdf, cities = _quickstart_frames()
    df = tagged(nb, "dataframe-repr")
    assert result(df) == repr(pdf)  # pandas' own text, of the whole frame
    html = result(df, "text/html")
    assert "<table" in html and "2000 rows × 3 columns" in html
    by_city = pdf.groupby("city").agg({"amount": "sum", "items": "mean"})
    g = tagged(nb, "groupby-repr")
    assert result(g) == repr(by_city) and "<table" in result(g, "text/html")
    assert printed(tagged(nb, "groupby-check")) == "groupby equals pandas\n"
    per_country = pdf.merge(cities, on="city").groupby("country")["amount"].sum()
    assert result(tagged(nb, "merge-repr")) == repr(per_country)
    assert printed(tagged(nb, "merge-check")) == "merge + groupby equals pandas\n"


# -- failover ----------------------------------------------------------------------------------
def _stopped(nb) -> dict:
    """The exit codes the last cell printed: every process of the cluster exited; and the
    temporary directories the notebook made (printed by its first cells) are gone."""
    dirs = tagged(nb, "dirs")
    made = [Path(value(dirs, "working directory:")), Path(value(dirs, "store directory:"))]
    left = [d for d in made if d.exists()]
    for d in left:
        shutil.rmtree(d, ignore_errors=True)
    assert not left, f"the notebook left its directories behind: {left}"
    codes = ast.literal_eval(value(tagged(nb, "stop"), "stopped:"))
    assert set(codes) == {"scheduler", "w0", "w1"} and all(isinstance(v, int) for v in codes.values()), codes
    return codes


@pytest.mark.timeout(300)
def test_failover(run_notebook):
    nb = run_notebook("failover.ipynb")

    kill = tagged(nb, "kill")
    done, total = map(int, re.fullmatch(r"(\d+)/(\d+) chunks done", value(kill, "job running:")).groups())
    assert 0 < done < total  # killed in the middle of the job
    killed = int(value(kill, "SIGKILL sent to the process of worker w0, pid"))

    rec = tagged(nb, "recovered")
    assert value(rec, "result matches numpy:") == "True"
    assert int(value(rec, "killed worker process:")) == killed
    new = int(value(rec, "new worker process:"))
    assert new > 0 and new != killed

    rep = tagged(nb, "report")
    assert value(rep, "worker losses:") == "1"
    recovered = [int(m) for m in re.findall(r"^recovered (\d+) keys lost with tcp://127\.0\.0\.1:\d+ in [\d.]+ s$",
                                            printed(rep), re.M)]
    assert len(recovered) == 1 and recovered[0] > 0, printed(rep)

    actions = [ln.split()[1] for ln in printed(tagged(nb, "events")).splitlines()]
    assert actions[0] == "worker-lost" and "recovered" in actions, actions

    route = tagged(nb, "route")
    answer = json_shown(route)
    restart, failover = answer["restart"], answer["failover"]
    assert restart["adopted"] > 0 and restart["held"] >= restart["adopted"], restart
    assert int(value(route, "adopted from the restarted process's store:")) == restart["adopted"]
    assert int(value(route, "held for the restart:")) == restart["held"]
    assert failover["worker_losses"] == 1 and failover["journal_entries"] > 0
    lost = [e for e in answer["events"] if e["action"] == "worker-lost"]
    assert len(lost) == 1 and lost[0]["n_lost"] > 0

    link = printed(tagged(nb, "dashboard-link")).strip()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/individual-mars-failover", link), link
    _stopped(nb)


# -- cluster: progress widget, store, quota ------------------------------------------------------
def _widget_models(nb) -> dict:
    return nb.metadata["widgets"][WIDGET_STATE]["state"]


@pytest.mark.timeout(300)
def test_cluster(run_notebook):
    nb = run_notebook("cluster.ipynb")

    # the progress bar: a tqdm.notebook widget, ended at all 128 chunks
    views = shown(tagged(nb, "progress"), WIDGET_VIEW)
    assert len(views) == 1, tagged(nb, "progress").outputs
    models = _widget_models(nb)
    box = models[views[0]["model_id"]]
    assert box["model_name"] == "HBoxModel"
    bars = [models[ref.removeprefix("IPY_MODEL_")]["state"] for ref in box["state"]["children"]
            if models[ref.removeprefix("IPY_MODEL_")]["model_name"] == "FloatProgressModel"]
    assert len(bars) == 1 and bars[0]["value"] == bars[0]["max"] == 128, bars

    # the store: both workers hold chunks, in shared memory (up to 4 MiB) and on disk
    store = tagged(nb, "store")
    workers = json_shown(store)["workers"]
    assert sorted(w["name"] for w in workers.values()) == ["w0", "w1"]
    for w in workers.values():
        s = w["store"]
        shm, disk = s["tiers"]["shm"], s["tiers"]["disk"]
        assert s["keys"] == shm["keys"] + disk["keys"] > 0, s
        assert shm["keys"] > 0 and 0 < shm["bytes"] <= 4 * MiB + 160_000 * 2, s
        assert disk["keys"] > 0 and disk["bytes"] >= disk["keys"] * 160_000, s
        assert s["spill"]["write"]["bytes"] >= disk["bytes"] and s["memory_limit"] == 4 * MiB, s
        assert f"{w['name']}: {s['keys']} keys; shared memory" in printed(store)
    assert sum(w["store"]["keys"] for w in workers.values()) == 128
    assert value(tagged(nb, "fetch"), "allclose:") == "True"

    # the quota, read while tasks wait for admission: one 400 MiB task per worker at a time
    quota = tagged(nb, "quota")
    q = json_shown(quota)
    assert sorted(w["name"] for w in q["workers"].values()) == ["w0", "w1"]
    for w in q["workers"].values():
        assert w["limit"] == int(0.6 * 2**30) and w["memory_limit"] == 2**30 and w["nthreads"] == 2, w
        assert w["executing"] <= 1 and w["reserved"] == w["executing"] * 400 * MiB, w
    assert sum(w["executing"] for w in q["workers"].values()) >= 1
    assert 1 <= q["n_waiting"] == len(q["waiting"]) <= 5
    assert all(t["estimate"] == 400 * MiB for t in q["waiting"]), q["waiting"]
    assert value(quota, "waiting for admission:") == f"{q['n_waiting']} tasks"
    after = tagged(nb, "quota-after")
    assert value(after, "result matches numpy:") == "True"
    assert value(after, "after the job: waiting") == "0 reserved [0, 0]"
    _stopped(nb)
