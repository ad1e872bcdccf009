"""Run the tests that touch distributed's internals against each Dask release of the range.

    python .ci/release_range.py [--releases 2026.6.0 2026.7.1 2026.8.0] [--keep DIR] [-- PYTEST ARGS]

For each release: a fresh venv, ``pip install -e '.[test]'`` with ``dask==R`` and
``distributed==R`` pinned (a constraints file), then pytest on :data:`SUBSET` (the plugins,
the store, failover, the CLI and security tests: the code that uses distributed's private
parts, see ``mars_dask/_dask_internals.py``) plus a smoke run of the tensor API. Prints one
line per release and exits non-zero if any release failed.

The range in ``pyproject.toml`` is exactly the releases this script passes on. Moving it
(README, "Dask releases"): when Dask releases, add the new release here and in pyproject,
run this script, fix what the internals self-check or the tests report, and drop the oldest
release once three newer ones pass.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RELEASES = ["2026.6.0", "2026.7.1", "2026.8.0"]
SUBSET = ["tests/worker", "tests/failover", "tests/security", "tests/test_session.py",
          "tests/tensor/test_datasource.py",
          "tests/dataframe/test_io.py"]


def run(cmd, **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, **kw)


def one_release(release: str, root: Path, pytest_args: list[str]) -> tuple[bool, str, float]:
    venv = root / f"venv-{release}"
    py = venv / "bin" / "python"
    if not py.exists():
        run([sys.executable, "-m", "venv", str(venv)], check=True)
        run([str(py), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    constraints = root / f"constraints-{release}.txt"
    constraints.write_text(f"dask=={release}\ndistributed=={release}\n")
    p = run([str(py), "-m", "pip", "install", "--quiet", "-c", str(constraints), "-e", ".[test]"],
            cwd=REPO)
    if p.returncode:
        return False, "install failed", 0.0
    got = subprocess.run([str(py), "-c", "import dask, distributed; print(dask.__version__, "
                          "distributed.__version__)"], capture_output=True, text=True).stdout.strip()
    t = time.monotonic()
    p = run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET, *pytest_args],
            cwd=REPO)
    return p.returncode == 0, f"dask/distributed {got}: pytest exit {p.returncode}", time.monotonic() - t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--releases", nargs="+", default=RELEASES)
    p.add_argument("--keep", help="directory for the venvs (kept and reused); default: a temp dir")
    p.add_argument("pytest_args", nargs="*")
    a = p.parse_args(argv)
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="mars-dask-releases-"))
    root.mkdir(parents=True, exist_ok=True)
    results = [(r, *one_release(r, root, a.pytest_args)) for r in a.releases]
    print("\n== release range")
    for release, ok, what, secs in results:
        print(f"{release:12s} {'PASS' if ok else 'FAIL'}  {what}  ({secs:.0f} s)")
    return 0 if all(ok for _, ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
