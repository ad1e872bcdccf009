"""The Mars 0.10 names table (``python -m mars_dask.tools.api_coverage``): the tensor and the
DataFrame sides are complete, and the names we do not ship raise ``NotImplementedError``
naming what is missing."""

import subprocess
import sys

import pytest

import mars_dask.tensor as mt
from mars_dask.tools import api_coverage


def test_every_user_facing_mars_tensor_name_exists():
    rows = [r for r in api_coverage.coverage() if r["table"].startswith("mars_dask.tensor")]
    assert len(rows) == 7
    for r in rows:
        assert r["error"] is None, r
        assert r["missing"] == [], f"{r['table']} lacks {r['missing']}"


def test_every_user_facing_mars_dataframe_name_exists():
    rows = [r for r in api_coverage.coverage() if not r["table"].startswith("mars_dask.tensor")]
    assert {r["table"] for r in rows} >= {"mars_dask.dataframe", "DataFrame methods", "Series methods",
                                          "Index methods", "GroupBy methods"}
    for r in rows:
        assert r["error"] is None, r
        assert r["missing"] == [], f"{r['table']} lacks {r['missing']}"


def test_the_table_says_what_is_out_of_scope_and_why():
    assert api_coverage.out_reason("TensorFetch") == "Mars's operand / internal classes"
    assert api_coverage.out_reason("from_tiledb") == "integration not shipped"
    assert api_coverage.out_reason("read_ray_dataset") == "integration not shipped"
    # names that merely contain the letters are Mars's own API
    for name in ("array", "asarray", "array_equal", "Tensor", "DataFrame", "tensordot", "ArrowStringArray"):
        assert api_coverage.out_reason(name) is None, name


@pytest.mark.parametrize("name, feature", [
    ("from_tiledb", "tiledb"), ("to_tiledb", "tiledb"), ("fromtiledb", "tiledb"), ("totiledb", "tiledb"),
    ("from_vineyard", "vineyard"), ("to_vineyard", "vineyard"),
])
def test_integrations_not_shipped_raise_not_implemented_naming_them(name, feature):
    with pytest.raises(NotImplementedError, match=feature):
        getattr(mt, name)(mt.ones(3) if name.startswith("to") else "uri")


def test_the_command_prints_the_table_and_fails_under_a_bar():
    ok = subprocess.run([sys.executable, "-m", "mars_dask.tools.api_coverage", "--only", "tensor",
                         "--fail-under", "100", "--missing"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "mars_dask.tensor.random" in ok.stdout and "100.0%" in ok.stdout
    ok = subprocess.run([sys.executable, "-m", "mars_dask.tools.api_coverage", "--only", "dataframe",
                         "--fail-under", "100"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # a bar no table reaches fails the command
    bad = subprocess.run([sys.executable, "-m", "mars_dask.tools.api_coverage", "--only", "dataframe",
                          "--fail-under", "100.1"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1, bad.stdout + bad.stderr
