"""The ``mars-dask.*`` configuration namespace, registered with ``dask.config``.

Defaults live in ``mars-dask.yaml`` beside this module; users override them the Dask way
(``dask.config.set``, yaml files in ``~/.config/dask``, or ``DASK_MARS_DASK__...`` variables).
"""

from __future__ import annotations

import os

import dask.config
import yaml

_fn = os.path.join(os.path.dirname(__file__), "mars-dask.yaml")

with open(_fn) as _f:
    defaults = yaml.safe_load(_f)

dask.config.update_defaults(defaults)


def get(key: str):
    """``dask.config.get("mars-dask." + key)``. No default argument: the defaults live in
    ``mars-dask.yaml`` only (its schema, ``mars-dask-schema.yaml``, says what each key
    does); an unknown key raises ``KeyError`` naming it."""
    try:
        return dask.config.get(f"mars-dask.{key}")
    except KeyError:
        raise KeyError(f"mars-dask.{key} is not a mars_dask configuration key "
                       "(see mars_dask/mars-dask.yaml)") from None
