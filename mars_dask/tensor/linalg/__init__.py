"""(placeholder: being written) ``mt.linalg``: products and decompositions."""

__all__: list[str] = []
