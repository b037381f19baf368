"""Figure of notebook 08: the attention of every layer and head of the tiny Transformer, for one example.

The model is ``transformer.TransformerSeq2Seq``; this module only draws the weights its ``greedy`` returns.
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure

from .._validate.model_figures import require_layer_weights
from ..tasks import EOS, Batch, labels, to_text
from .base import weight_map
from .heatmaps import show_heatmaps

__all__ = ["plot_transformer_attention"]


ATTENTION_KINDS = {
    "encoder": ("encoder self-attention", "source", "source"),
    "decoder": ("decoder self-attention (causal)", "decoder input", "decoder input"),
    "cross": ("cross-attention: output attends to source", "source", "decoder input"),
}


def plot_transformer_attention(
    weights: dict, batch: Batch, tokens: torch.Tensor, index: int = 0, kind: str = "cross", figsize=None
) -> Figure:
    """Heatmaps of one example's attention in every layer (rows) and head (columns).

    Args:
        weights: ``TransformerSeq2Seq.greedy``'s weights: ``kind`` -> (B, L, H, queries, keys).
        batch: the decoded examples. tokens: (B, T) the decoded tokens.
        index: which example. kind: ``"encoder"``, ``"decoder"`` or ``"cross"``.
    """
    require_layer_weights(weights, batch, index, kind, ATTENTION_KINDS)
    src_len = int(batch.src_len[index])
    out = tokens[index].tolist()
    out_len = out.index(EOS) + 1 if EOS in out else len(out)
    src_labels = labels(batch.src[index], src_len)
    dec_labels = ["<bos>"] + labels(tokens[index], out_len - 1)  # what the decoder read at each step
    title, xlabel, ylabel = ATTENTION_KINDS[kind]
    w = weights[kind][index]  # (L, H, queries, keys)
    num_layers, num_heads = w.shape[:2]
    if kind == "encoder":
        w, xl, yl = w[:, :, :src_len, :src_len], src_labels, src_labels
    elif kind == "decoder":
        w, xl, yl = w[:, :, :out_len, :out_len], dec_labels, dec_labels
    else:
        w, xl, yl = w[:, :, :out_len, :src_len], src_labels, dec_labels
    titles = [f"layer {layer}, head {head}" for layer in range(num_layers) for head in range(num_heads)]
    if figsize is None:  # about 0.2 inch per cell
        figsize = (num_heads * (0.2 * w.shape[-1] + 0.9) + 1.3, num_layers * (0.2 * w.shape[-2] + 1.0) + 0.6)
    return show_heatmaps(
        w,
        xlabel=xlabel,
        ylabel=ylabel,
        titles=titles,
        annotate=False,
        **weight_map(xl, yl),
        suptitle=f"{title}: {to_text(batch.src[index])} -> {to_text(tokens[index])}",
        figsize=figsize,
    )
