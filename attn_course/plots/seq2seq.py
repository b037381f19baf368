"""Figures of notebook 07: training curves, accuracy by length, alignments, one step of greedy decoding.

The models and the training loop are in ``seq2seq`` and ``training``; this module only draws what they return.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._validate.model_figures import (
    require_accuracy_results,
    require_alignments,
    require_decoding_step,
    require_histories,
)
from ..tasks import EOS, Batch, labels, to_text
from ..training import History
from .base import draw_matrix

__all__ = ["plot_history", "plot_accuracy_by_length", "plot_alignments", "plot_decoding_step"]


def plot_history(histories: dict[str, History], figsize=(9.0, 3.2)) -> Figure:
    """Training loss and validation sequence accuracy per epoch, one line per model."""
    require_histories(histories, History)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=figsize, layout="constrained")
    for name, h in histories.items():
        epochs = range(1, len(h.train_loss) + 1)
        ax_loss.plot(epochs, h.train_loss, marker="o", ms=3, label=name)
        ax_acc.plot(epochs, h.valid_accuracy, marker="o", ms=3, label=name)
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy per token", title="training loss", yscale="log")
    ax_acc.set(xlabel="epoch", ylabel="sequence accuracy", title="validation accuracy (greedy)", ylim=(-0.02, 1.02))
    ax_acc.legend(loc="lower right")
    return fig


def plot_accuracy_by_length(results: dict[str, dict[int, float]], ax=None, figsize=(5.5, 3.2)) -> Figure:
    """Sequence accuracy against source length, one line per model."""
    require_accuracy_results(results)
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    else:
        fig = ax.figure
    for name, by_len in results.items():
        ax.plot(list(by_len), list(by_len.values()), marker="o", ms=4, label=name)
    ax.set(xlabel="source length (digits)", ylabel="sequence accuracy", ylim=(-0.02, 1.02))
    ax.set_title("test accuracy by length")
    ax.legend(loc="lower left")
    return fig


def _alignment_panels(weights: torch.Tensor, batch: Batch, tokens: torch.Tensor, indices) -> dict:
    """Cut the attention of examples ``indices`` to their real size and label it, for ``show_heatmaps``.

    Arguments as in :func:`plot_alignments`, which checks them. Returns a dict of lists, one entry per example:
    ``matrices`` ((T_i, S_i) tensors, sizes differ from example to example), ``xticklabels`` (source tokens),
    ``yticklabels`` (output tokens) and ``titles``. :func:`plot_alignments` draws them; ``show_heatmaps(**panels)``
    works only when all examples have one size.
    """
    panels: dict[str, list] = {"matrices": [], "xticklabels": [], "yticklabels": [], "titles": []}
    for i in indices:
        src_len = int(batch.src_len[i])
        out = tokens[i].tolist()
        out_len = out.index(EOS) + 1 if EOS in out else len(out)  # up to and with the first EOS
        panels["matrices"].append(weights[i, :out_len, :src_len])
        panels["xticklabels"].append(labels(batch.src[i], src_len))
        panels["yticklabels"].append(labels(tokens[i], out_len))
        panels["titles"].append(f"{to_text(batch.src[i])} -> {to_text(tokens[i])}")
    return panels


def plot_alignments(
    weights: torch.Tensor, batch: Batch, tokens: torch.Tensor, indices, figsize=None, cmap: str = "Reds"
) -> Figure:
    """Heatmaps of the attention of a few decoded examples, each at its own size, with one colour bar.

    Rows are output tokens, columns are source tokens.

    Args:
        weights: (B, T, S) attention of output steps over source positions (from ``model.greedy``).
        batch: the examples that were decoded. tokens: (B, T) the decoded tokens.
        indices: which examples to show (at least one).
    """
    require_alignments(weights, batch, tokens, indices)
    panels = _alignment_panels(weights, batch, tokens, indices)
    widths = [m.shape[1] for m in panels["matrices"]]
    figsize = figsize or (0.32 * sum(widths) + 1.6 * len(widths) + 1.0, 0.3 * max(widths) + 1.6)
    fig, axes = plt.subplots(1, len(widths), figsize=figsize, width_ratios=widths, layout="constrained", squeeze=False)
    for ax, m, xl, yl, title in zip(axes[0], *panels.values(), strict=True):
        mesh = draw_matrix(ax, m.detach().cpu().double().numpy(), 0.0, 1.0, cmap, annotate=False)
        ax.set_xticks([j + 0.5 for j in range(len(xl))], xl, fontsize=8)
        ax.set_yticks([i + 0.5 for i in range(len(yl))], yl, fontsize=8)
        ax.tick_params(length=0)
        ax.set(xlabel="source", title=title)
    axes[0, 0].set_ylabel("output")
    fig.colorbar(mesh, ax=axes, shrink=0.8, label="attention weight")
    return fig


def plot_decoding_step(
    step: int, weights: torch.Tensor, src_labels: list[str], out_labels: list[str], figsize=(9.0, 3.4)
) -> Figure:
    """Greedy decoding at one step: the attention over the source (bars) and the alignment so far.

    Args:
        step: which output step to show (0 = the first).
        weights: (T, S) attention of each output step over the source positions, for one example.
        src_labels: S source tokens. out_labels: T decoded tokens.
    """
    require_decoding_step(step, weights, src_labels, out_labels)
    num_steps, num_src = weights.shape
    w = weights.detach().cpu().double()
    fig, (ax_bar, ax_map) = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1.2, 1))
    colours = ["tab:red" if j == int(w[step].argmax()) else "tab:gray" for j in range(num_src)]
    ax_bar.bar(range(num_src), w[step].numpy(), color=colours)
    ax_bar.set_xticks(range(num_src), src_labels)
    ax_bar.set(ylim=(0, 1.05), xlabel="source token", ylabel="attention weight")
    prefix = " ".join(out_labels[:step]) or "(nothing yet)"
    ax_bar.set_title(
        f"step {step}: output so far {prefix}\nattends most to source position {int(w[step].argmax())} "
        f"and writes {out_labels[step]}",
        fontsize=10,
    )
    shown = w.clone()
    shown[step + 1 :] = float("nan")  # steps not decoded yet stay blank
    ax_map.imshow(shown.numpy(), cmap="Reds", vmin=0, vmax=1, aspect="auto")
    ax_map.set_xticks(range(num_src), src_labels)
    ax_map.set_yticks(range(num_steps), out_labels)
    ax_map.add_patch(Rectangle((-0.5, step - 0.5), num_src, 1, fill=False, edgecolor="tab:blue", lw=1.5))
    ax_map.set(xlabel="source token", ylabel="output token", title="alignment so far")
    return fig
