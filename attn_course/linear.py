"""Linear attention (notebook 12)."""

from __future__ import annotations

__all__: list[str] = []
