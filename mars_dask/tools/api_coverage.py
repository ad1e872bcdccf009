"""How much of Mars 0.10's public API ``mars_dask`` has: ``python -m mars_dask.tools.api_coverage``.

The names come from ``mars-0.10-names.json`` beside this module: the public names of pymars
0.10.0 (``mars.tensor`` and ``mars.dataframe``, their submodules, and the methods Mars installs on
DataFrame/Series/Index/GroupBy). Each name is one of:

- **have**: ``mars_dask`` has it (an attribute of the module or class);
- **out**: not a user's name (Mars's operand classes, fetch/fuse internals, the tuple its
  ``execute`` returns) or an integration we do not ship (GPU, Ray, Vineyard, TileDB); the README
  lists these. Integrations still exist as names that raise ``NotImplementedError`` naming them;
- **missing**: everything else.

The coverage is have / (have + missing). ``--missing`` lists the missing names; ``--fail-under P``
exits 1 when a table's coverage is below ``P`` percent (for tests).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

NAMES_FILE = Path(__file__).with_name("mars-0.10-names.json")

#: (pattern, why a name is out of scope)
OUT = (
    (re.compile(r"^(Tensor|DataFrame|Series|Index)[A-Z]\w*$"), "Mars's operand / internal classes"),
    (re.compile(r"^(ExecutableTuple|RandomStateField|merge_)$"), "Mars internals"),
    (re.compile(r"tiledb|vineyard|(^|_)ray(_|$)|raydataset|^to_[gc]pu$"), "integration not shipped"),
)


def out_reason(name: str) -> str | None:
    for pattern, why in OUT:
        if pattern.search(name) and name not in ("Tensor", "DataFrame", "Series", "Index"):
            return why
    return None


def _groupby_class():
    import pandas as pd

    import mars_dask.dataframe as md

    return type(md.DataFrame(pd.DataFrame({"a": [1], "b": [2]})).groupby("a"))


def _targets():
    """(table name, JSON key, function giving the object the names should be attributes of)."""
    def module(name):
        return lambda: importlib.import_module(name)

    def cls(attr):
        return lambda: getattr(importlib.import_module("mars_dask.dataframe"), attr)

    return [
        ("mars_dask.tensor", "tensor", module("mars_dask.tensor")),
        *((f"mars_dask.tensor.{sub}", f"tensor.{sub}", module(f"mars_dask.tensor.{sub}"))
          for sub in ("random", "fft", "special", "stats", "lib", "linalg")),
        ("mars_dask.dataframe", "dataframe", module("mars_dask.dataframe")),
        ("DataFrame methods", "methods_df", cls("DataFrame")),
        ("Series methods", "methods_series", cls("Series")),
        ("Index methods", "methods_index", cls("Index")),
        ("GroupBy methods", "methods_groupby", _groupby_class),
    ]


def coverage() -> list[dict]:
    """One row per table: its name, the counts, and the missing and out-of-scope names."""
    names = json.loads(NAMES_FILE.read_text())
    rows = []
    for title, key, get in _targets():
        try:
            obj, error = get(), None
        except Exception as e:  # noqa: BLE001 - a module that does not import covers nothing
            obj, error = None, f"{type(e).__name__}: {e}"
        have, missing, out = [], [], []
        for name in names[key]:
            why = out_reason(name)
            if why is not None:
                out.append(name)
            elif obj is not None and hasattr(obj, name):
                have.append(name)
            else:
                missing.append(name)
        n = len(have) + len(missing)
        rows.append({"table": title, "mars": len(names[key]), "out": out, "have": len(have),
                     "missing": missing, "percent": 100.0 * len(have) / n if n else 100.0, "error": error})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--missing", action="store_true", help="list the missing names of each table")
    p.add_argument("--only", choices=("tensor", "dataframe"), help="only the tensor or the DataFrame tables")
    p.add_argument("--fail-under", type=float, default=None, metavar="P",
                   help="exit 1 when a table's coverage is below P percent")
    a = p.parse_args(argv)
    rows = coverage()
    if a.only == "tensor":
        rows = [r for r in rows if r["table"].startswith("mars_dask.tensor")]
    elif a.only == "dataframe":
        rows = [r for r in rows if not r["table"].startswith("mars_dask.tensor")]
    print(f"{'table':28s} {'Mars 0.10':>9s} {'out':>4s} {'have':>5s} {'missing':>7s} {'coverage':>8s}")
    for r in rows:
        print(f"{r['table']:28s} {r['mars']:9d} {len(r['out']):4d} {r['have']:5d} {len(r['missing']):7d} "
              f"{r['percent']:7.1f}%" + (f"  ({r['error']})" if r["error"] else ""))
    have = sum(r["have"] for r in rows)
    total = have + sum(len(r["missing"]) for r in rows)
    print(f"{'all':28s} {sum(r['mars'] for r in rows):9d} {sum(len(r['out']) for r in rows):4d} {have:5d} "
          f"{total - have:7d} {100.0 * have / max(total, 1):7.1f}%")
    if a.missing:
        for r in rows:
            if r["missing"]:
                print(f"\n{r['table']} missing: {', '.join(r['missing'])}")
    if a.fail_under is not None and any(r["percent"] < a.fail_under for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
