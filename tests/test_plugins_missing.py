"""A cluster without mars_dask's preloads is noticed: the first ``execute()`` on a scheduler
without the mars_dask plugin warns once (:class:`PluginsNotInstalledWarning` and a record on
the ``mars_dask`` logger) saying what is missing and how to install it; after
``mars_dask.plugins.install(client)``, or on a cluster started with the preloads, nothing is
said."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from distributed import Client, LocalCluster

import mars_dask
import mars_dask.tensor as mt
from mars_dask.errors import PluginsNotInstalledWarning
from mars_dask.plugins import _install
from mars_dask.session import Session


def _has_plugin(client) -> bool:
    return client.run_on_scheduler(lambda dask_scheduler: "mars-dask" in dask_scheduler.plugins)


def _job(salt):
    # distinct keys per call (results already on the cluster would not be recomputed)
    return (mt.arange(40, chunk_size=10) + salt).sum()


def _forget(client) -> None:
    """Make the next execute() on ``client``'s scheduler ask it again."""
    _install._checked.discard(client.scheduler.address)


def test_plain_cluster_warns_once_and_still_computes(plain_cluster, caplog):
    with Client(plain_cluster) as client:
        _forget(client)
        session = Session(client)
        with caplog.at_level(logging.WARNING, logger="mars_dask"), \
                pytest.warns(PluginsNotInstalledWarning) as record:
            a = mars_dask.execute(_job(1), session=session)
        msgs = [str(w.message) for w in record if issubclass(w.category, PluginsNotInstalledWarning)]
        assert len(msgs) == 1
        (msg,) = msgs
        # what is missing, and how to get it
        assert client.scheduler.address in msg and "no mars_dask plugin" in msg
        assert "mars_dask.plugins.install(client)" in msg
        assert "--preload mars_dask" in msg and "--preload-nanny mars_dask" in msg
        assert "store cannot be added to running worker processes" in msg
        # it points at the caller of execute(), not at mars_dask's insides
        assert record[0].filename == __file__
        # the same text on the mars_dask logger
        logged = [r for r in caplog.records if r.name.startswith("mars_dask")
                  and "no mars_dask plugin" in r.getMessage()]
        assert len(logged) == 1 and logged[0].levelno == logging.WARNING
        assert a.fetch() == np.arange(40).sum() + 40

        # the second execute() (another session, the same scheduler) says nothing
        with warnings.catch_warnings():
            warnings.simplefilter("error", PluginsNotInstalledWarning)
            b = _job(2).execute(session=Session(client))
        assert b.fetch() == np.arange(40).sum() + 80
        assert not _has_plugin(client)  # warned, not installed behind the user's back


@pytest.mark.timeout(120)
def test_after_install_no_warning():
    # a cluster of its own: install() changes it for good
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="1GiB", host="127.0.0.1") as cluster, Client(cluster) as client:
        assert not _has_plugin(client)
        # install() says the store cannot be added to the running worker processes
        with pytest.warns(PluginsNotInstalledWarning, match="cannot be added to running worker processes"):
            done = mars_dask.plugins.install(client)
        assert done["scheduler"] and done["nanny"]
        assert _has_plugin(client)
        _forget(client)
        with warnings.catch_warnings():
            warnings.simplefilter("error", PluginsNotInstalledWarning)
            assert _install.warn_if_not_installed(client) is True
            _forget(client)
            a = mars_dask.execute(_job(3), session=Session(client))
        assert a.fetch() == np.arange(40).sum() + 120


def test_cluster_with_preloads_no_warning(client, caplog):
    _forget(client)
    assert _has_plugin(client)
    with caplog.at_level(logging.WARNING, logger="mars_dask"), warnings.catch_warnings():
        warnings.simplefilter("error", PluginsNotInstalledWarning)
        a = mars_dask.execute(_job(4), session=Session(client))
    assert a.fetch() == np.arange(40).sum() + 160
    assert not [r for r in caplog.records if "no mars_dask plugin" in r.getMessage()]


def test_the_warning_is_a_filterable_runtime_warning():
    assert mars_dask.PluginsNotInstalledWarning is PluginsNotInstalledWarning
    assert issubclass(PluginsNotInstalledWarning, RuntimeWarning)
