"""Figures of notebook 12's second half: the delta rule and its gate (Gated DeltaNet).

``plot_gated_memory`` stores 8 keys, writes the first one again with a new value, and reads every key back: the delta
rule overwrites that key exactly, a plain sum returns old + new, and a gate alpha < 1 fades each older key like
alpha^age. It supports in-place updates for a slider panel (see ``attn_course.widgets``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import require_number
from ..delta_rule import gated_delta_rule

__all__ = ["plot_gated_memory"]

MEMORY_SIZE, STORED, VALUE_SIZE = 16, 8, 4  # D of the keys, how many keys are stored, V of the values
_SEED = 12  # the keys and values of plot_gated_memory
_OVERLAP = 0.5  # cosine between the first key's new value and its old one: a plain sum reads 1 + 0.5 of the new one


def _stream() -> tuple[torch.Tensor, torch.Tensor]:
    """The writes: keys (T, D), values (T, V) with T = 9; orthonormal keys k0..k7, then k0 with a new value."""
    gen = torch.Generator().manual_seed(_SEED)
    basis, _ = torch.linalg.qr(torch.randn(MEMORY_SIZE, STORED, generator=gen, dtype=torch.float64))  # (D, 8)
    values = torch.randn(STORED, VALUE_SIZE, generator=gen, dtype=torch.float64)  # (8, V)
    old = values[0]  # (V,)
    side = torch.randn(VALUE_SIZE, generator=gen, dtype=torch.float64)
    side = side - (side @ old) / (old @ old) * old  # (V,): orthogonal to the old value
    new = _OVERLAP * old + (1 - _OVERLAP**2) ** 0.5 * old.norm() * side / side.norm()  # (V,): |new| = |old|
    return torch.cat([basis.T, basis.T[:1]]), torch.cat([values, new[None]])  # (9, D), (9, V)


def _fractions(memory: torch.Tensor, keys: torch.Tensor, latest: torch.Tensor) -> np.ndarray:
    """For each stored key: (S^T k_i) . v_i / |v_i|^2, the share of its latest value that the memory returns."""
    reads = keys @ memory  # (8, D) x (D, V) -> (8, V): S^T k_i for every key
    return ((reads * latest).sum(-1) / (latest * latest).sum(-1)).numpy()  # (8,)


def plot_gated_memory(alpha: float = 0.9, ax=None, figsize=(7.2, 3.6)) -> Figure:
    """Gated DeltaNet against a plain sum, read back after 8 keys and a rewrite of the first key.

    A memory of size D = 16 (float64) receives 8 orthonormal keys k0..k7 (a fixed seed) with beta = 1, then k0 again
    with a new value (cosine 0.5 to its old one). Every key is then read, ``S^T k_i``, and each bar is the share of its
    latest value that comes back, ``(S^T k_i) . v_i / |v_i|^2``: for Gated DeltaNet (``gated_delta_rule`` with the
    gate ``alpha`` on every step), and for a plain sum ``S = sum_t k_t v_t^T`` (linear attention's memory without its
    normaliser), which returns old + new for k0 (1.5). Red marks show alpha^age (age: writes since the key's last
    one): the gated bars sit on them, and k0 reads 1 for any alpha, since the delta rule overwrote it.

    Args:
        alpha: the gate, a number in [0, 1], the same on every step.
        ax: axes to draw on, or None for a new figure.

    Returns:
        The figure; its ``slider_update(alpha=...)`` sets the bars and the title for another alpha in place.
    """
    alpha = require_number(alpha, "alpha", "in [0, 1]", lambda a: 0 <= a <= 1)
    keys, values = _stream()  # (9, D), (9, V)
    latest = torch.cat([values[-1:], values[1:STORED]])  # (8, V): k0's new value, then k1..k7's
    ages = np.array([0, *range(STORED - 1, 0, -1)])  # (8,): k0 was written last, k1 seven writes before the end
    plain = _fractions(keys.T @ values, keys[:STORED], latest)  # (D, 9) x (9, V) -> (D, V): sum_t k_t v_t^T

    def gated(a: float) -> np.ndarray:
        ones = keys.new_ones(1, len(keys))  # (1, T)
        _, memory = gated_delta_rule(keys[None], keys[None], values[None], ones, a * ones)  # S: (1, D, V)
        return _fractions(memory[0], keys[:STORED], latest)  # (8,)

    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    x, shares = np.arange(STORED), gated(alpha)
    bars = ax.bar(x - 0.2, shares, width=0.4, color="C0", label="Gated DeltaNet (gate α, β = 1)")
    ax.bar(x + 0.2, plain, width=0.4, color="0.7", label="plain sum S = Σ k vᵀ (no gate)")
    ax.text(0.2, plain[0] + 0.04, "old + new", ha="center", va="bottom", fontsize=8)
    (fade,) = ax.plot(
        x - 0.2, alpha**ages, "_", color="C3", ms=16, mew=2.5, label=r"$\alpha^{\rm age}$, the expected fade"
    )
    ax.axhline(1.0, color="0.3", linestyle=":", linewidth=1)
    ax.set_xticks(x, [f"k0 (new)\nage {ages[0]}", *(f"k{i}\nage {ages[i]}" for i in range(1, STORED))])
    ax.set_ylim(-0.1, 2.1)
    ax.set_yticks([0, 0.5, 1, 1.5, 2])
    ax.set_xlabel("stored key, in write order (age = writes since its last one)")
    ax.set_ylabel("share of its latest value read")
    ax.legend(fontsize=8, loc="upper right")
    title = ax.set_title(_title(alpha, shares), fontsize=10)

    def update(alpha: float = 0.9, **_) -> None:
        """The gated bars, the α^age marks and the title for another alpha, on the same artists."""
        alpha = require_number(alpha, "alpha", "in [0, 1]", lambda a: 0 <= a <= 1)
        shares = gated(alpha)
        for bar, share in zip(bars, shares, strict=True):
            bar.set_height(share)
        fade.set_ydata(alpha**ages)
        title.set_text(_title(alpha, shares))

    fig = ax.figure
    fig.slider_update = update
    return fig


def _title(alpha: float, shares: np.ndarray) -> str:
    oldest = round(float(shares[1]), 3) + 0.0  # + 0.0: never "-0.000"
    return f"α = {alpha:g}: k0 reads {shares[0]:.2f} of its new value; the oldest, k1, keeps {oldest:.3f}"
