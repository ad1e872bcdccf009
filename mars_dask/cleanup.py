"""``python -m mars_dask.cleanup [--dry-run] [--root DIR ...]``: list, and remove, the
directories that dead mars_dask clusters of this user left behind.

What it looks at (this user's private roots only, as configured here through dask.config /
``DASK_MARS_DASK__...`` variables, else the defaults; a root that does not exist is
skipped, one that is not safely this user's is refused with a warning):

- the store roots: ``mars-dask.store.directory`` (``/dev/shm/mars-dask-<user>``) and
  ``mars-dask.store.spill-directory`` (by default beside Dask's default worker scratch
  directory, ``<temporary-directory>/dask-scratch-space/mars-spill``, and
  ``<tmp>/mars-dask-spill``; workers started with ``--local-directory X`` spill under
  ``X/dask-scratch-space/mars-spill``: pass it with ``--root``): each
  ``<root>/<cluster>/<worker>`` directory is in use while a process (the worker, its nanny)
  holds its lock;
- the failover roots (``mars-dask.failover.journal-directory`` and
  ``checkpoint-directory``, by default ``<XDG_RUNTIME_DIR or tmp>/mars-dask-<user>/journal``
  and ``.../checkpoints``): ``<root>/<tag>`` is in use while a lock of the same cluster is
  held (its scheduler's, or its workers' stores: nannies waiting for a restarted
  scheduler) or while its newest file is younger than what a failover could still need
  (``max(failover.rejoin-hold, session.reconnect-timeout,
  worker.scheduler-reconnect-timeout)``).

See ``mars_dask/_leftovers.py`` for the locks. It prints one line per directory (state,
size, kind, path, why) and a total, and removes those not in use (``--dry-run``: removes
nothing, says what it would remove). There is no "all users" mode: every user runs it for
their own directories, and it never touches a directory another user owns. Exit status 0
(a directory that could not be removed is listed as in use, with the reason).
"""

from __future__ import annotations

import argparse
import os
import sys

from dask.utils import format_bytes

from . import config  # noqa: F401  (the mars-dask.* defaults)
from ._leftovers import (
    Leftover,
    default_store_roots,
    failover_roots,
    sweep_failover_roots,
    sweep_store_roots,
)


def find_leftovers(extra_roots=(), dry_run: bool = False) -> tuple[list[str], list[Leftover]]:
    """``(roots scanned, directories found)``; removes those not in use unless
    ``dry_run``."""
    store = list(dict.fromkeys(default_store_roots() + [os.path.abspath(r) for r in extra_roots]))
    journal, checkpoints = failover_roots()
    found = sweep_store_roots(store, dry_run=dry_run, sizes="all")
    found += sweep_failover_roots(journal, checkpoints, roots=store, dry_run=dry_run, sizes="all")
    return store + list(dict.fromkeys([journal, checkpoints])), found


def _size(n) -> str:
    return "-" if n is None else format_bytes(n)


def format_table(found: list[Leftover], dry_run: bool) -> str:
    gone = "would remove" if dry_run else "removed"
    rows = [("STATE", "SIZE", "KIND", "PATH")]
    for f in found:
        state = "in use" if f.in_use else gone
        rows.append((state, _size(f.size), f.kind, f"{f.path}  ({f.why})"))
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:<{w[2]}}  {r[3]}" for r in rows]
    freed = [f for f in found if f.removed]
    kept = [f for f in found if f.in_use]
    lines.append(f"total: {len(found)} director{'y' if len(found) == 1 else 'ies'}, "
                 f"{format_bytes(sum(f.size or 0 for f in found))}; "
                 f"{gone} {len(freed)} ({format_bytes(sum(f.size or 0 for f in freed))}), "
                 f"{len(kept)} in use ({format_bytes(sum(f.size or 0 for f in kept))})")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m mars_dask.cleanup",
        description="List the store, journal and checkpoint directories mars_dask clusters of "
                    "this user left, and remove those no live process holds.")
    p.add_argument("--dry-run", action="store_true", help="remove nothing; say what would be removed")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="another store root to scan (e.g. <worker --local-directory>/dask-scratch-space/"
                        "mars-spill); may be repeated")
    args = p.parse_args(argv)
    roots, found = find_leftovers(args.root, dry_run=args.dry_run)
    print("roots: " + ", ".join(roots))
    print(format_table(found, args.dry_run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
