"""The Mars pages in JupyterLab's Dask sidebar (dask-labextension): a Jupyter server with the
extension, started on a free loopback port with a token and everything it writes in the
test's tmp_path, asked what the sidebar asks it for a dashboard URL
(``GET /dask/dashboard-check/<encodeURIComponent(url)>``: it fetches the dashboard's
``/individual-plots.json``); the sidebar lists each plot under its name without
"Individual ", so the Mars pages appear as "Mars Tileables" etc."""

from __future__ import annotations

import importlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.dashboard.conftest import PAGES, start_cluster
from tests.worker.conftest import _free_port

pytestmark = pytest.mark.timeout(180)


def _importable(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as e:
        reason = f"{module} not importable ({e}): pip install -e '.[test]'"
        print(f"\n{reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    """``python -m jupyter_server`` with dask_labextension enabled, HOME and the JUPYTER_*
    and XDG directories in a tmp dir; ``(base url, token)``. Stopped by pid (its own process
    group) at the end."""
    for module in ("jupyter_server", "dask_labextension"):
        _importable(module)
    tmp = tmp_path_factory.mktemp("jupyter")
    dirs = {name: tmp / name for name in ("home", "config", "data", "runtime", "ipython", "xdg-config",
                                          "xdg-data", "xdg-cache", "root")}
    for d in dirs.values():
        d.mkdir()
    # enabled here as well as by the package's own config.d file (a --user install has none)
    (dirs["config"] / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"dask_labextension": True}}}))
    env = dict(os.environ)
    env.update({"HOME": str(dirs["home"]), "JUPYTER_CONFIG_DIR": str(dirs["config"]),
                "JUPYTER_DATA_DIR": str(dirs["data"]), "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
                "IPYTHONDIR": str(dirs["ipython"]), "XDG_CONFIG_HOME": str(dirs["xdg-config"]),
                "XDG_DATA_HOME": str(dirs["xdg-data"]), "XDG_CACHE_HOME": str(dirs["xdg-cache"])})
    token = secrets.token_hex(16)
    port = _free_port()
    log = tmp / "jupyter.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={dirs['root']}",
             f"--IdentityProvider.token={token}", *(["--allow-root"] if os.geteuid() == 0 else [])],
            stdout=f, stderr=subprocess.STDOUT, env=env, cwd=str(dirs["root"]), start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyter server did not start (exit {proc.poll()}):\n"
                                   + log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)
        yield base, token
    finally:
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """``dask scheduler --preload mars_dask`` with its dashboard, and one worker."""
    c = start_cluster(tmp_path_factory.mktemp("scheduler"), n_workers=1)
    yield c
    c.close()
    c.cleanup_dirs()


def dashboard_check(jupyter, dashboard_url: str) -> dict:
    """What the sidebar gets for ``dashboard_url`` (its ``testDaskDashboard``: the URL without
    a trailing ``status``, encodeURIComponent'ed into the path)."""
    base, token = jupyter
    if dashboard_url.endswith("status"):
        dashboard_url = dashboard_url[:-len("status")]
    quoted = urllib.parse.quote(dashboard_url, safe="")
    with urllib.request.urlopen(f"{base}/dask/dashboard-check/{quoted}?token={token}", timeout=30) as r:
        assert r.status == 200
        return json.loads(r.read())


def test_the_dask_sidebar_lists_the_mars_pages(jupyter, scheduler):
    answer = dashboard_check(jupyter, f"{scheduler.url}/status")
    assert answer["isActive"] is True, answer
    plots = answer["plots"]
    # the sidebar's items: each plot's name without "Individual " (getDashboardPlots)
    sidebar = {name.replace("Individual ", ""): route for name, route in plots.items()}
    for page in PAGES:
        assert sidebar.get(f"Mars {page.title()}") == f"/individual-mars-{page}", sorted(sidebar)
    assert "Task Stream" in sidebar and "Progress" in sidebar  # Dask's own are still there
    # each listed Mars page is served where the sidebar opens it
    for page in PAGES:
        with urllib.request.urlopen(f"{scheduler.url}{sidebar[f'Mars {page.title()}']}", timeout=30) as r:
            assert r.status == 200 and b"bokeh" in r.read().lower()


def test_a_url_without_a_dashboard_is_inactive(jupyter):
    """(what the check answers for a port serving no dashboard: the positive answer above
    is the dashboard's, not the handler's default)"""
    answer = dashboard_check(jupyter, f"http://127.0.0.1:{_free_port()}/")
    assert answer["isActive"] is False and answer["plots"] == {}
