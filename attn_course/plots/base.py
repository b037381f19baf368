"""The pieces the figures of ``attn_course.plots`` share: numbers in, matrices drawn, ticks thinned, the options of a
heatmap of weights, the unit circle.

For the plot modules only (not re-exported from ``attn_course.plots`` or ``attn_course``).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from .._validate import LOW_PRECISION, require_dim, require_finite
from .._validate.figures import require_array

__all__ = [
    "as_numpy",
    "float_vectors",
    "require_same_length",
    "new_axes",
    "draw_matrix",
    "set_matrix",
    "thin_ticks",
    "slants",
    "weight_map",
    "unit_circle",
]


def as_numpy(x) -> np.ndarray:
    """A tensor (float16 and bfloat16 widened: NumPy has no bfloat16), array or list as a NumPy array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return (x.float() if x.dtype in LOW_PRECISION else x).numpy()
    return np.asarray(x)


def _float_vector(x, name: str, what: str) -> torch.Tensor:
    """``x`` (a tensor, or a list of numbers: float64) as a 1-D floating tensor of at least one ``what``."""
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(require_array(x, name), dtype=torch.float64)
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of {what}, got {x.dtype}")
    if x.dim() != 1 or x.numel() == 0:
        raise ValueError(f"{name} must be a 1-D tensor of at least one {what}, got shape {tuple(x.shape)}")
    return x


def float_vectors(what: dict[str, str], **named) -> list[torch.Tensor]:
    """Each named argument through ``_float_vector`` (``what`` maps its name to what it holds), finite, in one dtype.

    A figure computes in the widest dtype it was given (float16 with bfloat16: float32), so a mix of dtypes,
    or of tensors and lists, is not an error.
    """
    vectors = [require_finite(_float_vector(x, name, what[name]), name) for name, x in named.items()]
    dtype = vectors[0].dtype
    for v in vectors[1:]:
        dtype = torch.promote_types(dtype, v.dtype)
    return [v.detach().to(dtype) for v in vectors]  # a figure needs the numbers only


def require_same_length(x: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    """One entry of ``x`` per entry of ``ref`` (a prediction per test input, a target per training input)."""
    require_dim(x, name, 0, ref.shape[0], note=f"one per entry of {ref_name}")


def new_axes(ax, figsize):
    """The figure of ``ax`` and ``ax`` itself, or a new figure of size ``figsize`` and its one axes when None."""
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax.figure, ax


def draw_matrix(
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


def set_matrix(ax, data: np.ndarray, fmt: str = ".2f", vmin: float | None = None, vmax: float | None = None) -> None:
    """New values, of the same shape, on the matrix ``draw_matrix`` drew on ``ax``, for a figure updated in place.

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


def thin_ticks(
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
    """The cells ``thin_ticks`` labels (every cell up to ``max_ticks``, then every k-th) and their labels."""
    step = max(1, int(np.ceil(n / max_ticks)))
    positions = np.arange(0, n, step)
    return positions, [str(labels[i]) if labels is not None else str(i) for i in positions]


def _long(texts: list[str]) -> bool:
    """Whether x tick labels are slanted: when one of them is longer than 3 characters."""
    return max(map(len, texts), default=0) > 3


def slants(labels: Sequence[str] | None, n: int) -> bool:
    """Whether ``thin_ticks`` slants these x labels by default (one of those it writes is longer than 3 characters):
    a figure of several panels asks this of each, to slant all or none."""
    return _long(_tick_texts(labels, n)[1])


def weight_map(keys: Sequence[str] | None, queries: Sequence[str] | None = None) -> dict:
    """``show_heatmaps``'s options for attention weights: the key tokens across, the query tokens down (the keys'
    when None: self-attention), and a weight's own scale, 0 to 1, so that panels and figures compare."""
    return {"xticklabels": keys, "yticklabels": keys if queries is None else queries, "vmin": 0.0, "vmax": 1.0}


def unit_circle(ax, limit: float, xlabel: str, ylabel: str) -> None:
    """Axes for points on the unit circle (a pair of columns read as cosine and sine): the circle in light grey,
    one scale on both axes from -limit to limit, ticks at -1, 0 and 1."""
    circle = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(circle), np.sin(circle), color="0.85", linewidth=1)
    ax.set_aspect("equal")
    ax.set(xlim=(-limit, limit), ylim=(-limit, limit), xlabel=xlabel, ylabel=ylabel)
    ax.set_xticks([-1.0, 0.0, 1.0])
    ax.set_yticks([-1.0, 0.0, 1.0])
