"""groupby: ``df.groupby(...)`` / ``series.groupby(...)``.

- :mod:`.core`: the GroupBy handle, aggregations (tree and shuffle algorithms), transform,
  apply, cumcount;
- :mod:`.keys`: keys that are not columns (``level=``, functions, mappings, arrays);
- :mod:`.scan`: row-wise scans along the chunks (``cum*``, ``ffill``/``bfill``/``fillna``,
  ``head``);
- :mod:`.sample`: ``sample``;
- :mod:`.kernels`: the chunk functions of :mod:`.core`.
"""

from ..core import DataFrame, Series, register_method
from . import sample as _sample  # noqa: F401  (attaches GroupBy.sample)
from . import scan as _scan  # noqa: F401  (attaches the scan methods to GroupBy)
from .core import GroupBy, groupby

__all__: list[str] = []

register_method(DataFrame, Series, name="groupby")(groupby)
