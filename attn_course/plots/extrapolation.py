"""The figures of notebook 11's context extension: the extrapolation experiment and the frequencies of each scaling.

Each helper draws on a new figure unless given axes, returns the ``Figure``, and never calls ``plt.show()``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .._validate.figures import require_results, require_scalings
from ..extrapolation import YARN_BETA_FAST, YARN_BETA_SLOW, rope_frequencies
from .base import as_numpy

__all__ = ["plot_extrapolation", "plot_rope_scalings"]


def plot_extrapolation(
    results,
    train_len: int,
    metric: str = "accuracy",
    baseline=None,
    baseline_label: str = "baseline",
    ax=None,
    *,
    x: str = "test_len",
    xlabel: str = "test sequence length",
    markers: bool = True,
) -> Figure:
    """A metric against the test length (or the position) for each position scheme: the mean over seeds, a band from
    the lowest to the highest seed, and what lies beyond training shaded.

    Args:
        results: a pandas DataFrame with columns ``scheme``, ``seed``, ``x`` and ``metric``, one row per
            (scheme, seed, x value).
        train_len: the longest training length (the shading starts after it).
        metric: the column plotted.
        baseline: None, or a dict x value -> value drawn as a dashed black line (a reference that needs no
            training, or the loss floor, for example), labelled ``baseline_label``.
        ax: the axes, or None for a new figure.
        x: the column on the horizontal axis (``"test_len"``, or ``"position"`` for a loss at each position).
        xlabel: its label.
        markers: a marker at every point (for a few lengths; off for many positions).
    """
    require_results(results, train_len, metric, x, baseline)
    import seaborn as sns  # here, not at the top: only this figure needs it, and it takes a second to import

    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.2), layout="constrained")
    fig = ax.figure
    ax.axvspan(train_len + 0.5, results[x].max() + 0.5, color="0.92", zorder=0)
    sns.lineplot(
        data=results, x=x, y=metric, hue="scheme", style="scheme", markers=markers, dashes=False,
        errorbar=("pi", 100), ax=ax,
    )  # fmt: skip
    if baseline is not None:
        lengths = sorted(baseline)
        ax.plot(lengths, [baseline[n] for n in lengths], "--", color="black", linewidth=1.2, label=baseline_label)
    ax.axvline(train_len + 0.5, color="0.4", linestyle=":", linewidth=1)
    ax.text(train_len + 0.7, 0.02, "beyond any training sequence", transform=ax.get_xaxis_transform(), fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(metric)
    seeds = results["seed"].nunique()
    spread = "mean over seeds, band = lowest to highest seed" if seeds > 1 else "one run"
    ax.set_title(f"{metric.capitalize()} against {xlabel}: {spread}", fontsize=10)
    ax.legend(fontsize=8, title="positions", title_fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def plot_rope_scalings(head_dim: int, scalings: dict, original_len: int, base: float = 10000.0, ax=None) -> Figure:
    """Each context-extension scaling's frequency of every RoPE pair, divided by the original frequency, against how
    many turns the pair makes over the original length ``original_len * w_i / (2 pi)`` (both axes logarithmic).

    A ratio of 1 means the pair is kept, ``1 / s`` that it is interpolated (it turns s times slower). YaRN's ramp
    ends are marked: pairs that turn more than ``beta_fast = 32`` times are kept, fewer than ``beta_slow = 1`` times
    interpolated.

    Args:
        head_dim: D, even; D / 2 pairs.
        scalings: dict label -> scaling (``rope_frequencies``' ``scaling``), for example
            ``{"PI": ("linear", 4), "NTK": ("ntk", 4), "YaRN": ("yarn", 4, 4096)}``; ``("parts", s, ramp, attention)``
            draws any ramp, for example the paper's ``yarn_ramp(D, original_len, rule="turns")``.
        original_len: the training length the turns are counted over.
        base: RoPE's wavelength scale.
        ax: the axes, or None for a new figure.
    """
    require_scalings(head_dim, scalings, original_len)
    omega = as_numpy(rope_frequencies(head_dim, base))  # (D/2,)
    turns = original_len * omega / (2 * math.pi)  # (D/2,): turns of each pair over the original length
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
    fig = ax.figure
    styles = ["o-", "s-", "^-", "D-", "v-"]
    for number, (label, scaling) in enumerate(scalings.items()):
        ratio = as_numpy(rope_frequencies(head_dim, base, scaling)) / omega  # (D/2,): 1 kept, 1 / s interpolated
        ax.plot(turns, ratio, styles[number % len(styles)], markersize=3.5, linewidth=1.2, label=label)
    for rotations, name in [(YARN_BETA_SLOW, "beta_slow"), (YARN_BETA_FAST, "beta_fast")]:
        ax.axvline(rotations, color="0.5", linestyle=":", linewidth=1)
        ax.text(rotations, 1.02, f" {name} = {rotations}", transform=ax.get_xaxis_transform(), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    lowest = min(float(line.get_ydata().min()) for line in ax.lines if len(line.get_ydata()) == len(turns))
    ticks = [2.0**-k for k in range(0, 1 + math.ceil(-math.log2(lowest) - 1e-9))]  # 1, 1/2, 1/4, ... down to 1/s
    ax.set_yticks(ticks, labels=["1" if t == 1 else f"1/{1 / t:g}" for t in ticks])
    ax.set_yticks([], minor=True)
    ax.invert_xaxis()  # pair 0 (fastest) on the left
    ax.set_xlabel(f"turns of the pair over the original {original_len} positions (pair 0 on the left)")
    ax.set_ylabel("new frequency / original")
    ax.set_title(f"Which pairs each scaling slows down (D = {head_dim}, base {base:g})", fontsize=10, pad=14)
    ax.legend(fontsize=8, loc="lower left")
    return fig
