"""(placeholder: being written) groupby."""

__all__: list[str] = []
