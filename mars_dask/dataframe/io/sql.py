"""SQL databases through SQLAlchemy: the connection recipe the readers (``md.read_sql*``, in
:mod:`..toplevel`) and the writer share, and ``DataFrame.to_sql`` / ``Series.to_sql``.

``to_sql`` (Mars 0.10's signature) first creates the table on the client from the empty
frame (pandas' ``if_exists`` rules: ``"fail"`` raises pandas' ValueError there, ``"replace"``
drops the table), then every chunk appends its rows with pandas' ``to_sql`` on a worker, in
one transaction per chunk.  The chunk writes run one after the other in row order (each waits
for the previous one), so the table's rows come in the frame's order, as pandas writes them,
and databases that lock a whole table on write (SQLite) never see two writers at once.  It
runs immediately (as ``to_csv`` does) and returns the executed, empty result Mars returns, so
Mars code calling ``.execute()`` on it works and writes nothing twice.
"""

from __future__ import annotations

import pandas as pd

from ...tiling.core import random_key
from ..core import DataFrame, DataFrameOperand, Series, frame_nsplits, register_method

__all__: list[str] = []


def sqlalchemy_module():
    try:
        import sqlalchemy
    except ImportError as e:
        raise ImportError("md.read_sql and to_sql need SQLAlchemy (pip install sqlalchemy)") from e
    return sqlalchemy


class SQLConnection:
    """A picklable connection recipe: a URI (+ engine kwargs) each task connects with."""

    def __init__(self, con, engine_kwargs):
        sa = sqlalchemy_module()
        if isinstance(con, str):
            self.uri = con
        elif isinstance(con, sa.engine.Engine):
            self.uri = con.url.render_as_string(hide_password=False)
        elif isinstance(con, sa.engine.Connection):
            self.uri = con.engine.url.render_as_string(hide_password=False)
        else:
            raise TypeError("con must be an SQLAlchemy engine or connection or a database URI string "
                            f"(a DBAPI connection cannot be sent to workers), got {type(con).__name__}")
        self.engine_kwargs = dict(engine_kwargs or {})

    def engine(self):
        return sqlalchemy_module().create_engine(self.uri, **self.engine_kwargs)


def _append_chunk(part, previous, con, name, kwargs, empty):
    """Append one chunk's rows (``previous``: the write before it, only waited for)."""
    eng = con.engine()
    try:
        with eng.begin() as conn:  # one transaction: a failed write leaves no rows behind
            part.to_sql(name, conn, if_exists="append", **kwargs)
    finally:
        eng.dispose()
    return empty


class ToSQL(DataFrameOperand):
    """Appends the chunks of its input to an existing table, one after the other."""

    _op_name = "to-sql"

    def tile(self):
        (inp,) = self.inputs
        meta = self.output.meta
        chunks, prev = [], None
        for i, c in enumerate(inp.chunks):
            prev = self.new_chunk(i, 0, _append_chunk, (c, prev, self.con, self.table, self.kwargs, meta))
            chunks.append(prev)
        return [(chunks, frame_nsplits(meta, (0,) * len(chunks)))]


@register_method(DataFrame, Series)
def to_sql(self, name, con, schema=None, if_exists="fail", index=True, index_label=None, chunksize=None,
           dtype=None, method=None, engine_kwargs=None):
    """Write to the SQL table ``name`` (pandas' ``to_sql`` arguments; ``con`` an SQLAlchemy
    engine or connection, or a URI: each task connects on its own).  Runs now; returns Mars's
    empty result tileable, already executed."""
    if if_exists not in ("fail", "replace", "append"):
        raise ValueError(f"'{if_exists}' is not valid for if_exists")
    from ..map import is_pandas_tileable

    if not is_pandas_tileable(self):  # pragma: no cover - registered on md classes only
        raise TypeError(type(self).__name__)
    con = SQLConnection(con, engine_kwargs)
    kwargs = dict(schema=schema, index=index, index_label=index_label, chunksize=chunksize, dtype=dtype,
                  method=method)
    meta = self.data.meta
    eng = con.engine()
    try:
        with eng.begin() as conn:  # the table, from the columns and dtypes (pandas' if_exists)
            meta.to_sql(name, conn, if_exists=if_exists, **kwargs)
    finally:
        eng.dispose()
    empty = pd.DataFrame() if isinstance(meta, pd.DataFrame) else pd.Series([], dtype=meta.dtype, name=meta.name)
    op = ToSQL([self.data], con=con, table=name, kwargs=kwargs)
    # a random key: writing the same frame twice (if_exists="append") writes twice
    return op.new_output(empty, 0, key=random_key("to-sql")).execute()
