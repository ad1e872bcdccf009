"""Reading and writing files: ``md.read_csv``, ``md.read_parquet`` and the ``to_csv`` /
``to_parquet`` methods (registered on DataFrame/Series)."""

from .csv import read_csv
from .parquet import read_parquet

__all__ = ["read_csv", "read_parquet"]
