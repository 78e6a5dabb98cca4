"""corpus layer (see DESIGN.md); filled in by its issue."""

__all__: list[str] = []
