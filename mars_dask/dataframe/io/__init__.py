"""(placeholder: being written) read_csv, read_parquet, to_csv, to_parquet."""

__all__: list[str] = []
