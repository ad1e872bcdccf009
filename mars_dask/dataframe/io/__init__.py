"""Reading and writing files and databases: ``md.read_csv``, ``md.read_parquet`` and the
``to_csv`` / ``to_parquet`` / ``to_sql`` methods (registered on DataFrame/Series; ``read_sql*``
are in :mod:`..toplevel`)."""

from . import sql  # noqa: F401 - registers to_sql
from .csv import read_csv
from .parquet import read_parquet

__all__ = ["read_csv", "read_parquet"]
