"""Figures of notebook 12: linear attention."""

from __future__ import annotations

__all__: list[str] = []
