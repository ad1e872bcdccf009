"""dask.dataframe's pandas stand-ins (``meta_nonempty``, ``make_meta``), imported on first
use.  Why: importing dask.dataframe costs a quarter of a second (its expression layer and
dask.array), and every worker process paid it on its first task although kernels never
call these; only building a graph on the client does.

Both import the package ``dask.dataframe`` before its ``utils``: importing only the
submodule while another thread is still running the package's ``__init__`` returns before
the package has registered pandas with its dispatch (see
``mars_dask.tiling.tileable.concatenate_grid``); importing the package waits for it."""

from __future__ import annotations


def meta_nonempty(x):
    """dask.dataframe.utils.meta_nonempty: a small non-empty pandas object like ``x``."""
    import dask.dataframe  # noqa: F401
    from dask.dataframe.utils import meta_nonempty as impl

    return impl(x)


def make_meta(x, *args, **kwargs):
    """dask.dataframe.utils.make_meta: an empty pandas object described by ``x``."""
    import dask.dataframe  # noqa: F401
    from dask.dataframe.utils import make_meta as impl

    return impl(x, *args, **kwargs)
