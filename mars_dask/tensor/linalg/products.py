"""(placeholder: being written) dot, matmul, tensordot, einsum."""

__all__: list[str] = []
