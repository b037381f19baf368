"""Heatmaps: ``show_heatmaps`` and the pieces every figure of ``attn_course.plots`` shares.

Every helper takes ``ax=None`` (or ``axes=None``), draws on a new figure when none is given,
returns the ``Figure``, labels its axes, and never calls ``plt.show()`` or changes global
matplotlib settings. In a notebook, end the cell with ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import require_dim, require_finite, require_number, require_sequence

__all__ = ["show_heatmaps"]

ANNOTATE_MAX_CELLS = 100  # "auto" annotates matrices up to 10 x 10


def _np(x) -> np.ndarray:
    """A tensor (float16 and bfloat16 widened: NumPy has no bfloat16), array or list as a NumPy array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return (x.float() if x.dtype in (torch.float16, torch.bfloat16) else x).numpy()
    return np.asarray(x)


def _vector(x, name: str, what: str) -> torch.Tensor:
    """``x`` (a tensor, or a list of numbers: float64) as a 1-D floating tensor of at least one ``what``."""
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(_numbers(x, name), dtype=torch.float64)
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of {what}, got {x.dtype}")
    if x.dim() != 1 or x.numel() == 0:
        raise ValueError(f"{name} must be a 1-D tensor of at least one {what}, got shape {tuple(x.shape)}")
    return x


def _vectors(what: dict[str, str], **named) -> list[torch.Tensor]:
    """Each named argument through ``_vector`` (``what`` maps its name to what it holds), finite, in one dtype.

    A figure computes in the widest dtype it was given (float16 with bfloat16: float32), so a mix of dtypes,
    or of tensors and lists, is not an error.
    """
    vectors = [require_finite(_vector(x, name, what[name]), name) for name, x in named.items()]
    dtype = vectors[0].dtype
    for v in vectors[1:]:
        dtype = torch.promote_types(dtype, v.dtype)
    return [v.detach().to(dtype) for v in vectors]  # a figure needs the numbers only


def _same_length(x: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    """One entry of ``x`` per entry of ``ref`` (a prediction per test input, a target per training input)."""
    require_dim(x, name, 0, ref.shape[0], note=f"one per entry of {ref_name}")


def _numbers(x, name: str) -> np.ndarray:
    """``x`` (a tensor, an array or nested lists of numbers) as a float NumPy array, or a TypeError naming ``name``."""
    wanted = f"{name} must be a tensor or an array of numbers"
    if x is None or isinstance(x, str | bytes):
        raise TypeError(f"{wanted}, got {type(x).__name__}")
    try:
        return _np(x).astype(float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{wanted}, got {type(x).__name__} ({error})") from None


def _new_axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax.figure, ax


def _draw_matrix(
    ax,
    data: np.ndarray,
    vmin: float,
    vmax: float,
    cmap: str,
    annotate: bool,
    fmt: str = ".2f",
    square: bool = True,
    gridlines: bool = False,
    fontsize: float = 8,
):
    """Draw a (R, C) matrix on ``ax`` as coloured cells, row 0 at the top; optionally write each value.

    Cell (i, j) spans [j, j + 1] x [i, i + 1], so tick positions are ``index + 0.5``. Annotations are black on
    light cells and white on dark ones. Returns the ``QuadMesh`` (for a colour bar).
    """
    rows, cols = data.shape
    mesh = ax.pcolormesh(
        np.arange(cols + 1),
        np.arange(rows + 1),
        data,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        edgecolors="white" if gridlines else "face",
        linewidth=0.5 if gridlines else 0,
    )
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)  # row 0 at the top, as in a printed matrix
    if square:
        ax.set_aspect("equal")
    for spine in ax.spines.values():
        spine.set_visible(False)
    if annotate:
        colours = _text_colours(mesh, data)
        for i in range(rows):
            for j in range(cols):
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    format(data[i, j], fmt),
                    ha="center",
                    va="center",
                    fontsize=fontsize,
                    color=colours[i][j],
                    in_layout=False,  # inside its cell: not a decoration the layout makes room for
                )
    return mesh


def _text_colours(mesh, data: np.ndarray) -> list[list[str]]:
    """The colour of each cell's number: black on light cells, white on dark ones (R lists of C colours)."""
    luminance = mesh.to_rgba(data)[..., :3] @ np.array([0.2126, 0.7152, 0.0722])  # (R, C)
    return [["black" if value > 0.408 else "white" for value in row] for row in luminance]


def _set_matrix(ax, data: np.ndarray, fmt: str = ".2f", vmin: float | None = None, vmax: float | None = None) -> None:
    """New values, of the same shape, on the matrix ``_draw_matrix`` drew on ``ax``, for a figure updated in place.

    Sets the ``QuadMesh``'s data (and its colour scale, when ``vmin`` and ``vmax`` are given) and, if the cells were
    annotated, the numbers and their colours: the axes' texts, which must be the annotations, row by row.
    """
    mesh = ax.collections[0]
    mesh.set_array(data)
    if vmin is not None and vmax is not None:
        mesh.set_clim(vmin, vmax)
    if len(ax.texts):
        colours = [colour for row in _text_colours(mesh, data) for colour in row]
        for text, value, colour in zip(ax.texts, data.reshape(-1), colours, strict=True):
            text.set_text(format(value, fmt))
            text.set_color(colour)


def _thin_ticks(
    ax, axis: str, labels: Sequence[str] | None, n: int, max_ticks: int = 20, slanted: bool | None = None
) -> None:
    """Label every cell up to ``max_ticks`` cells, then every k-th one.

    ``slanted``: turn the x labels by 45 degrees; by default when one is longer than 3 characters (words, not
    short numbers).
    """
    positions, texts = _tick_texts(labels, n, max_ticks)
    if axis == "x":
        slanted = _long(texts) if slanted is None else slanted
        ax.set_xticks(positions + 0.5, texts, rotation=45 if slanted else 0, ha="right" if slanted else "center")
    else:
        ax.set_yticks(positions + 0.5, texts, rotation=0)


def _tick_texts(labels: Sequence[str] | None, n: int, max_ticks: int = 20) -> tuple[np.ndarray, list[str]]:
    """The cells ``_thin_ticks`` labels (every cell up to ``max_ticks``, then every k-th) and their labels."""
    step = max(1, int(np.ceil(n / max_ticks)))
    positions = np.arange(0, n, step)
    return positions, [str(labels[i]) if labels is not None else str(i) for i in positions]


def _long(texts: list[str]) -> bool:
    """Whether x tick labels are slanted: when one of them is longer than 3 characters."""
    return max(map(len, texts), default=0) > 3


def show_heatmaps(
    matrices,
    xlabel: str = "Keys",
    ylabel: str = "Queries",
    titles: Sequence[str] | None = None,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "Reds",
    annotate: bool | str = "auto",
    fmt: str = ".2f",
    figsize: tuple[float, float] | None = None,
    colorbar_label: str = "attention weight",
    suptitle: str | None = None,
    ax=None,
) -> Figure:
    """Attention weights as heatmaps: rows are queries, columns are keys.

    Args:
        matrices: (Q, K) one panel, (P, Q, K) P panels in a row, or (R, C, Q, K) a grid.
        xlabel, ylabel: axis labels (on the bottom row and the first column).
        titles: one title per panel (P, or R * C in row order).
        xticklabels: K key labels (tokens); yticklabels: Q query labels. Either may instead be a list with
            one list of labels per panel (sequences with different tokens); the panels then label their own axes.
        vmin, vmax: the colour scale, shared by every panel; by default from min(0, data) to max(data).
        annotate: write each value in its cell; ``"auto"`` does so up to 10 x 10 cells.
        fmt: number format of the annotations.
        colorbar_label: the label of the one colour bar.
        ax: axes to draw on instead of a new figure: one Axes for one panel, else an array of
            one Axes per panel (R * C, in row order).

    Returns:
        The Figure, with one colour bar for all panels.
    """
    data = _numbers(matrices, "matrices")
    vmin, vmax = (None if v is None else require_number(v, name) for name, v in (("vmin", vmin), ("vmax", vmax)))
    if data.ndim not in (2, 3, 4) or 0 in data.shape:
        raise ValueError(
            f"matrices must have shape (Q, K), (P, Q, K) or (R, C, Q, K) with no empty axis, got shape {data.shape}"
        )
    grid = data.reshape((1, 1) + data.shape[-2:]) if data.ndim == 2 else data
    grid = grid[None] if grid.ndim == 3 else grid  # (R, C, Q, K)
    rows, cols, num_q, num_k = grid.shape
    panel_labels = {}  # name -> one list of labels per panel
    shared = True  # one set of labels for every panel: only the outer panels write them
    for name, labels, n in (("xticklabels", xticklabels, num_k), ("yticklabels", yticklabels, num_q)):
        if labels is not None:
            require_sequence(labels, name, "tick labels")
        per_panel = labels is not None and len(labels) > 0 and isinstance(labels[0], (list, tuple))
        shared = shared and not per_panel  # each panel its own, even when two agree (a slider keeps its frame)
        if per_panel and len(labels) != rows * cols:
            raise ValueError(f"{name} must hold one list per panel ({rows * cols}), got {len(labels)} lists")
        panel_labels[name] = list(labels) if per_panel else [labels] * (rows * cols)
        for panel in panel_labels[name]:
            if panel is not None and len(panel) != n:
                raise ValueError(
                    f"{name} must hold {n} labels (one per {'key' if name[0] == 'x' else 'query'}), got {len(panel)}"
                )
    slanted = any(_long(_tick_texts(p, num_k)[1]) for p in panel_labels["xticklabels"])  # one rule for all panels
    if titles is not None:
        require_sequence(titles, "titles", "panel titles")
    if titles is not None and len(titles) != rows * cols:
        raise ValueError(f"titles must hold {rows * cols} titles (one per panel), got {len(titles)}")
    if not np.isfinite(data).all():
        raise ValueError("matrices must be finite; got NaN or infinity (check the masking)")
    lo = min(0.0, float(data.min())) if vmin is None else vmin
    hi = float(data.max()) if vmax is None else vmax
    hi = lo + 1.0 if hi <= lo else hi
    if annotate == "auto":
        annotate = num_q * num_k <= ANNOTATE_MAX_CELLS
    if figsize is None:
        cell = 0.45 if annotate else min(0.25, 5.0 / max(num_q, num_k))
        figsize = (cols * max(2.2, num_k * cell + 1.0) + 1.2, rows * max(2.0, num_q * cell + 1.5))
    if ax is not None:
        given = np.asarray(ax, dtype=object).reshape(-1)
        if given.size != rows * cols:
            raise ValueError(f"ax must hold one axes per panel ({rows * cols}), got {given.size}")
        fig, axes = given[0].figure, given.reshape(rows, cols)
    else:
        fig, axes = plt.subplots(rows, cols, figsize=figsize, squeeze=False, layout="constrained")
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            # Cells are not forced square: the constrained layout measures a fixed-aspect axes before its aspect
            # shrinks it, and left the x labels outside the figure (matplotlib issue 11809); figsize keeps them near
            # square instead.
            _draw_matrix(ax, grid[r, c], lo, hi, cmap, bool(annotate), fmt, square=False)
            # With one set of labels for all panels, only the bottom row and the first column write them.
            if r == rows - 1 or not shared:
                _thin_ticks(ax, "x", panel_labels["xticklabels"][r * cols + c], num_k, slanted=slanted)
            else:
                ax.set_xticks([])
            if c == 0 or not shared:
                _thin_ticks(ax, "y", panel_labels["yticklabels"][r * cols + c], num_q)
            else:
                ax.set_yticks([])
            ax.tick_params(length=0)
            ax.set_xlabel(xlabel if r == rows - 1 else "")
            ax.set_ylabel(ylabel if c == 0 else "")
            if titles is not None:
                ax.set_title(titles[r * cols + c], fontsize=10)
    fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.8, label=colorbar_label)
    if suptitle:
        fig.suptitle(suptitle)
    return fig
