"""groupby: ``df.groupby(...)`` / ``series.groupby(...)`` with tree and shuffle algorithms
(see :mod:`mars_dask.dataframe.groupby.core`)."""

from ..core import DataFrame, Series, register_method
from .core import GroupBy, groupby

__all__: list[str] = []

register_method(DataFrame, Series, name="groupby")(groupby)
