"""Exceptions raised by mars_dask; all derive from :class:`MarsDaskError`."""


class MarsDaskError(Exception):
    """Base class of every error mars_dask raises itself."""


class TilingError(MarsDaskError):
    """An operand could not be tiled into chunks."""


class NotExecutedError(MarsDaskError, ValueError):
    """``fetch()`` on a tileable that has not been executed."""
