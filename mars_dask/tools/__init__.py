"""Command-line tools shipped with mars_dask (``python -m mars_dask.tools.NAME``)."""
