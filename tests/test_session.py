"""The session's choice of Client and the embedded cluster (issue 14):

- ``execute()`` / ``fetch()`` after the user closed the Client in use raise
  :class:`ClientClosedError` (a :class:`MarsDaskError`) and start nothing: no cluster, no
  process; a new Client, or ``start_embedded_cluster()`` called explicitly, is used again.
- the embedded cluster listens on 127.0.0.1 only: scheduler, nannies, workers, and the
  dashboard (``":8787"`` in mars-dask.yaml names no host), also when 8787 is taken.

The scenarios run in a fresh Python process each (``_run``): what they check is process-wide
(the default Client, listening sockets, child processes), and the API suites' session-wide
Client would otherwise be the default these tests need to be without. A scenario records
what happened and returns it as JSON; the tests assert on that.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mars_dask.errors import MarsDaskError
from mars_dask.errors import ClientClosedError
from mars_dask.session import _loopback_dashboard_address
from tests.helpers import embedded_env

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DASHBOARD_PORT = 8787


def _run(scenario: str, tmp_path: Path, timeout: float = 240, env: dict | None = None) -> dict:
    """``scenario(str(tmp_path))`` in a new interpreter; its JSON result."""
    code = ("import json, sys\n"
            f"from tests.test_session import {scenario} as f\n"
            "print('RESULT ' + json.dumps(f(sys.argv[1])), flush=True)\n")
    full_env = embedded_env(tmp_path)
    full_env.update(env or {})
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=str(REPO), env=full_env,
                         capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    assert out.returncode == 0 and lines, f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}"
    return json.loads(lines[-1][len("RESULT "):])


# ---- helpers run in the scenario's process ----------------------------------------------


def _outcome(fn, value=repr) -> dict:
    """What ``fn()`` did: ``{"ok": value(result)}`` or the exception's class names and
    message (so that the scenario goes on and the test sees every step)."""
    try:
        r = fn()
    except BaseException as e:  # noqa: BLE001 - recorded for the test to judge
        return {"error": [c.__name__ for c in type(e).__mro__], "module": type(e).__module__, "message": str(e)}
    return {"ok": value(r) if value is not repr else repr(r)[:200]}


def _tolist(r):
    return r.tolist()


def _process_state() -> dict:
    """Child processes (pids), LocalCluster objects alive, and the embedded cluster slot."""
    import gc

    import psutil
    from distributed.deploy.spec import SpecCluster

    from mars_dask import session

    gc.collect()
    return {
        "children": sorted(p.pid for p in psutil.Process().children(recursive=True)),
        "clusters": sorted(id(c) for c in SpecCluster._instances if c.status.name != "closed"),
        "embedded": None if session._embedded is None else id(session._embedded[0]),
    }


def _listening() -> list:
    """``[ip, port, pid]`` of every TCP socket listening in this process and its children."""
    import psutil

    me = psutil.Process()
    out = []
    for p in [me, *me.children(recursive=True)]:
        try:
            conns = p.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out += [[c.laddr.ip, c.laddr.port, p.pid] for c in conns if c.status == psutil.CONN_LISTEN]
    return sorted(out)


def _embedded_view(client) -> dict:
    from urllib.parse import urlsplit

    from mars_dask import session

    link = urlsplit(client.dashboard_link)
    cluster = session._embedded[0]
    return {
        "scheduler": client.scheduler.address,
        "dashboard_host": link.hostname,
        "dashboard_port": link.port,
        "workers": sorted(client.scheduler_info()["workers"]),
        "nannies": sorted(n.address for n in cluster.workers.values()),
        "listening": _listening(),
    }


# ---- scenarios ---------------------------------------------------------------------------


def scenario_user_closed_client(tmp: str) -> dict:
    """A LocalCluster + Client of the user's, used by mars_dask, then closed by the user."""
    import time

    from distributed import Client, LocalCluster

    import mars_dask
    import mars_dask.tensor as mt
    from mars_dask import session

    res: dict = {}
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    client = Client(cluster)
    res["scheduler"] = cluster.scheduler_address
    x = mt.arange(10, chunk_size=5).execute()
    res["first"] = x.fetch().tolist()
    client.close()
    assert client.status == "closed", client.status
    res["before"] = _process_state()
    t0 = time.monotonic()
    res["execute"] = _outcome(lambda: mars_dask.execute(mt.ones(4, chunk_size=2)))
    res["execute_s"] = time.monotonic() - t0
    res["method_execute"] = _outcome(lambda: (x + 1).execute())
    res["fetch"] = _outcome(lambda: x.fetch())
    res["get_client"] = _outcome(mars_dask.get_client)
    res["session_of_closed"] = _outcome(lambda: session.Session(client))
    res["again"] = _outcome(lambda: mars_dask.execute(mt.ones(4, chunk_size=2)))  # still an error
    res["after"] = _process_state()

    # a new Client is used again; what the closed one held is gone
    client2 = Client(cluster)
    res["fetch_on_new"] = _outcome(lambda: x.fetch())
    res["reexecuted"] = _outcome(lambda: x.execute().fetch(), _tolist)  # executing again recomputes it
    res["derived"] = _outcome(lambda: (x * 2).execute().fetch(), _tolist)
    res["uses_new"] = mars_dask.get_client() is client2
    client2.close()
    cluster.close()
    return res


def scenario_embedded(tmp: str) -> dict:
    """The embedded cluster with the default dashboard address (":8787", held by the test
    process when it could bind it); its client closed by the user; then started explicitly
    with a configured ":<port>" dashboard address."""
    import dask.config

    import mars_dask
    import mars_dask.tensor as mt
    from mars_dask import session

    res: dict = {"configured": dask.config.get("mars-dask.embedded.dashboard-address")}
    res["base"] = _listening()  # nothing of the embedded cluster yet
    x = (mt.arange(10, chunk_size=5) + 1).execute()  # no Client: starts the embedded cluster
    client = mars_dask.get_client()
    res["first"] = x.fetch().tolist()
    res["view1"] = _embedded_view(client)

    client.close()  # the user closes the embedded cluster's client
    res["before"] = _process_state()
    res["execute"] = _outcome(lambda: mars_dask.execute(mt.ones(4, chunk_size=2)))
    res["fetch"] = _outcome(lambda: x.fetch())
    res["after"] = _process_state()

    # explicitly: a new embedded cluster, its dashboard on the configured port
    port = int(os.environ["MARS_DASK_TEST_PORT"])
    with dask.config.set({"mars-dask.embedded.dashboard-address": f":{port}"}):
        client2 = session.start_embedded_cluster()
    res["restarted"] = _outcome(lambda: (mt.arange(6, chunk_size=4) * 2).execute().fetch(), _tolist)
    res["uses_new"] = mars_dask.get_client() is client2 and client2 is not client
    res["view2"] = _embedded_view(client2)
    res["old_clusters_closed"] = len(_process_state()["clusters"]) == 1
    session.stop_embedded_cluster()
    return res


# ---- tests -------------------------------------------------------------------------------


def _is_closed_error(outcome: dict) -> bool:
    return "ClientClosedError" in outcome.get("error", ()) and "MarsDaskError" in outcome["error"]


@pytest.mark.timeout(240)
def test_execute_after_user_closed_client_raises_and_starts_nothing(tmp_path):
    r = _run("scenario_user_closed_client", tmp_path)
    assert r["first"] == list(range(10))
    # execute(), Tileable.execute(), fetch(), get_client() and a Session on the closed
    # client: the same clear error, every time, and quickly (nothing was started)
    for what in ("execute", "method_execute", "fetch", "get_client", "session_of_closed", "again"):
        assert _is_closed_error(r[what]), (what, r[what])
        assert r[what]["module"] == "mars_dask.errors"
    msg = r["execute"]["message"]
    assert r["scheduler"] in msg and "has been closed" in msg
    assert "start_embedded_cluster()" in msg and "new distributed.Client" in msg
    assert r["execute_s"] < 10, r["execute_s"]
    # no cluster, no process, no embedded cluster
    assert r["after"] == r["before"], (r["before"], r["after"])
    assert r["after"]["embedded"] is None and r["after"]["children"] == []
    # a new Client: fetching a result the closed client held says so; executing again works
    assert _is_closed_error(r["fetch_on_new"]), r["fetch_on_new"]
    assert "execute the tileable again" in r["fetch_on_new"]["message"].lower()
    assert r["reexecuted"] == {"ok": list(range(10))}, r["reexecuted"]
    assert r["derived"] == {"ok": [2 * i for i in range(10)]}, r["derived"]
    assert r["uses_new"]


@pytest.fixture
def held_default_port():
    """Hold 127.0.0.1:8787 (the embedded dashboard's default port) for the test; None if
    something else holds it already (then it is taken all the same)."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", DEFAULT_DASHBOARD_PORT))
        s.listen(1)
    except OSError:
        s.close()
        s = None
    yield s
    if s is not None:
        s.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _assert_loopback_only(view: dict, base: list) -> None:
    new = [s for s in view["listening"] if s not in base]
    assert new, view
    assert all(ip == "127.0.0.1" for ip, _, _ in new), new
    ports = {port for _, port, _ in new}
    # the sockets looked at are the cluster's: scheduler, dashboard, nanny, worker
    assert view["dashboard_port"] in ports and int(view["scheduler"].rsplit(":", 1)[1]) in ports, view
    for addr in [view["scheduler"], *view["workers"], *view["nannies"]]:
        assert addr.startswith("tcp://127.0.0.1:"), addr
    assert view["dashboard_host"] == "127.0.0.1", view
    assert len(view["workers"]) == 1 and len(view["nannies"]) == 1, view
    assert {p for _, p, _ in new} >= {int(a.rsplit(":", 1)[1]) for a in view["workers"] + view["nannies"]}


@pytest.mark.timeout(300)
def test_embedded_cluster_on_loopback_and_not_restarted_after_close(tmp_path, held_default_port):
    port = _free_port()
    r = _run("scenario_embedded", tmp_path, env={"MARS_DASK_TEST_PORT": str(port)})
    assert r["configured"] == ":8787"  # mars-dask.yaml's default: no host
    assert r["first"] == list(range(1, 11))
    # started with 8787 taken: still on 127.0.0.1 (another port), and everything else too
    v1 = r["view1"]
    _assert_loopback_only(v1, r["base"])
    if held_default_port is not None:  # (if another process holds it, it may be freed meanwhile)
        assert v1["dashboard_port"] != DEFAULT_DASHBOARD_PORT, v1

    # the user closed the embedded client: the same clear error, nothing new started
    assert _is_closed_error(r["execute"]) and _is_closed_error(r["fetch"]), (r["execute"], r["fetch"])
    assert "embedded cluster" in r["execute"]["message"] and v1["scheduler"] in r["execute"]["message"]
    assert r["after"] == r["before"], (r["before"], r["after"])

    # start_embedded_cluster() explicitly: a new one, dashboard on 127.0.0.1:<configured>
    assert r["restarted"] == {"ok": [0, 2, 4, 6, 8, 10]} and r["uses_new"], r["restarted"]
    v2 = r["view2"]
    assert (v2["dashboard_host"], v2["dashboard_port"]) == ("127.0.0.1", port), v2
    assert v2["scheduler"] != v1["scheduler"]
    _assert_loopback_only(v2, [s for s in r["base"]])
    assert r["old_clusters_closed"]


def test_dashboard_address_without_host_gets_loopback():
    f = _loopback_dashboard_address
    assert f(":8787") == "127.0.0.1:8787"
    assert f("8787") == f(8787) == "127.0.0.1:8787"
    assert f(":0") == f("") == "127.0.0.1:0"
    assert f([":1", "10.1.2.3:2"]) == ["127.0.0.1:1", "10.1.2.3:2"]
    # an address with a host is the user's choice; None/False: no dashboard
    assert f("0.0.0.0:8787") == "0.0.0.0:8787" and f("localhost:9") == "localhost:9"
    assert f(None) is None and f(False) is None


def test_client_closed_error_is_a_mars_dask_error():
    assert issubclass(ClientClosedError, MarsDaskError)


def test_names_still_importable_from_the_session_module():
    """The session module was split into rooms (mars_dask._embedded: the embedded cluster;
    mars_dask._reconnect: scheduler loss); every name stays where it was."""
    import mars_dask
    from mars_dask import _embedded, _reconnect, session

    for name in ["ClientClosedError", "Session", "execute", "fetch", "get_client", "get_session",
                 "start_embedded_cluster", "stop_embedded_cluster", "Future", "LOOPBACK",
                 "LOST_REASON", "REJOIN_TOPIC", "_EmbeddedCluster", "_loopback_dashboard_address",
                 "_revive", "_lost_by_disconnect", "_SchedulerLost", "_Vanished", "_has_failover",
                 "_ChunkCollection", "_describe", "_closed_error", "_CLOSED", "_n_workers"]:
        assert hasattr(session, name), name
    for name in ["Session", "execute", "fetch", "get_client", "get_session", "start_embedded_cluster"]:
        assert getattr(mars_dask, name) is getattr(session, name)
    assert session.start_embedded_cluster is _embedded.start_embedded_cluster
    assert issubclass(session.Session, _reconnect.Reconnecting)
    assert hasattr(session.Session, "_recover_connection")
    # the embedded cluster's state is read through, not copied
    assert session._embedded is _embedded._embedded and session._current is _embedded._current
    with pytest.raises(AttributeError):
        session.no_such_name
