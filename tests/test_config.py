"""The ``mars-dask.*`` configuration: the defaults file, its schema and the keys the code reads.

As distributed checks ``distributed.yaml`` against ``distributed-schema.yaml``: every default
validates, the schema and the defaults name the same keys, and every key the code reads
exists in the defaults (a key read with an inline default but missing from the yaml once
hid ``dataframe.combine-size`` from users)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import mars_dask
from mars_dask import config

PKG = Path(mars_dask.__file__).parent


def _leaves(tree: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            out |= _leaves(v, f"{prefix}{k}.")
        else:
            out.add(prefix + k)
    return out


def _schema_leaves(node: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in node.get("properties", {}).items():
        if v.get("type") == "object":
            out |= _schema_leaves(v, f"{prefix}{k}.")
        else:
            out.add(prefix + k)
    return out


def test_defaults_validate_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    defaults = yaml.safe_load((PKG / "mars-dask.yaml").read_text())
    schema = yaml.safe_load((PKG / "mars-dask-schema.yaml").read_text())
    jsonschema.validate(defaults, schema)
    assert _schema_leaves(schema) == _leaves(defaults)
    for key in _schema_leaves(schema):  # every key says what it does
        node = schema
        for part in key.split("."):
            node = node["properties"][part]
        assert node.get("description"), f"{key}: no description in mars-dask-schema.yaml"
    bad = dict(defaults["mars-dask"], store=dict(defaults["mars-dask"]["store"], read="bogus"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"mars-dask": bad}, schema)


#: how the code reads configuration: mars_dask.config.get("a.b"), dask.config.get("mars-dask.a.b"),
#: and the per-section helpers _cfg("b") of spill/_store.py (store.) and plugins/_failover.py
#: (failover.)
_READS = [
    (re.compile(r"""\bconfig\.get\(\s*["']((?:mars-dask\.)?[a-z0-9-]+\.[a-z0-9.-]+)["']"""), None),
    (re.compile(r"""["']mars-dask\.([a-z0-9-]+\.[a-z0-9-]+)["']"""), None),
    (re.compile(r"""\b_cfg\(\s*["']([a-z0-9-]+)["']"""), {"spill/_store.py": "store.",
                                                         "plugins/_failover.py": "failover."}),
]


def test_every_key_the_code_reads_is_in_the_defaults():
    defaults = _leaves(yaml.safe_load((PKG / "mars-dask.yaml").read_text())["mars-dask"])
    read = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        text = path.read_text()
        for rx, prefixes in _READS:
            for m in rx.finditer(text):
                if prefixes is None:
                    key = m.group(1).removeprefix("mars-dask.")
                elif rel in prefixes:
                    key = prefixes[rel] + m.group(1)
                else:
                    continue
                if key.startswith(("distributed.", "dask.")):
                    continue
                read.setdefault(key, rel)
    assert len(read) > 30, read  # the scan finds the reads
    missing = {k: where for k, where in read.items() if k not in defaults}
    assert not missing, f"keys read but not in mars-dask.yaml: {missing}"


def test_accessor_has_no_inline_defaults():
    """mars_dask.config.get takes no default: the yaml is the one place defaults live, and an
    unknown key is an error naming it."""
    assert config.get("tensor.combine-size") == 4
    with pytest.raises(KeyError, match="mars-dask.tensor.no-such-key"):
        config.get("tensor.no-such-key")
    offenders = []
    for path in PKG.rglob("*.py"):
        for m in re.finditer(r"""\bconfig\.get\(\s*f?["'][^"']+["']\s*,""", path.read_text()):
            offenders.append(f"{path.relative_to(PKG)}: {m.group(0)}")
    assert not offenders, offenders
