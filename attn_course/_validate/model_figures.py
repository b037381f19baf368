"""Input checks of the figures of what a model returned (private): training curves, alignments, the attention of
every layer and head, head scores, generation times and cache sizes (``plots.seq2seq``, ``plots.transformer``,
``plots.decoder``, notebooks 07-09); see ``_validate``, whose checks these are built from.

A figure opens with one call from here, so its body is the drawing. The classes of the records (``History``,
``LMHistory``) come in as arguments: the modules that define them import ``_validate``.
"""

from __future__ import annotations

import operator

import torch

from . import (
    require_choice,
    require_dim,
    require_finite,
    require_float,
    require_instance,
    require_int,
    require_rank,
    require_sequence,
    require_tensor,
)

# A private module: every helper imports the checks it needs by name, so it has no __all__.


# ---- sequence to sequence and the Transformer (plots.seq2seq, plots.transformer) ------------------------------------


def require_histories(histories, history_type: type) -> None:
    """plot_history's data: a non-empty dict model name -> ``History``."""
    if not isinstance(histories, dict):
        raise TypeError(f"histories must be a dict {{model name: History}}, got {type(histories).__name__}")
    if not histories:
        raise ValueError("histories must be a non-empty dict {model name: History}, got an empty dict")
    for name, history in histories.items():
        require_instance(history, f"histories[{name!r}]", history_type, "a History (from train_seq2seq)")


def require_accuracy_results(results) -> None:
    """plot_accuracy_by_length's data: a non-empty dict model name -> accuracy by length."""
    if not isinstance(results, dict) or not results:
        raise ValueError("results must be a non-empty dict {model name: accuracy_by_length(...)}")


def require_alignments(weights, batch, tokens, indices) -> None:
    """plot_alignments' arguments: weights (B, T, S) floating, one column per source position of ``batch``; the
    decoded tokens (B, T); at least one index of an example."""
    if not isinstance(weights, torch.Tensor) or weights.ndim != 3 or weights.shape[0] != len(batch):
        got = tuple(weights.shape) if isinstance(weights, torch.Tensor) else type(weights).__name__
        raise ValueError(f"weights must be (B, T, S) with B = {len(batch)} examples, got {got}")
    require_float(weights, "weights")
    require_dim(weights, "weights", 2, batch.src.shape[1], "S = ", "one column per source position")
    require_tensor(tokens, "tokens")
    if tuple(tokens.shape) != tuple(weights.shape[:2]):
        raise ValueError(
            f"tokens must be the decoded tokens (B, T) = {tuple(weights.shape[:2])}, one per row of weights, "
            f"got shape {tuple(tokens.shape)}"
        )
    require_sequence(indices, "indices", "example numbers")
    for n, i in enumerate(indices):
        require_int(i, f"indices[{n}]", 0, len(batch) - 1)
    if len(indices) == 0:
        raise ValueError("indices must pick at least one example")


def require_decoding_step(step, weights, src_labels, out_labels) -> None:
    """plot_decoding_step's arguments: finite floating weights (T, S), S source and T output labels, a step in
    [0, T - 1]."""
    if not isinstance(weights, torch.Tensor) or weights.ndim != 2:
        raise ValueError(f"weights must be a (T, S) tensor for one example, got {getattr(weights, 'shape', weights)!r}")
    require_float(weights, "weights")
    require_finite(weights, "weights")
    num_steps, num_src = weights.shape
    require_sequence(src_labels, "src_labels", "token labels")
    require_sequence(out_labels, "out_labels", "token labels")
    if len(src_labels) != num_src or len(out_labels) != num_steps:
        raise ValueError(
            f"need S = {num_src} source labels and T = {num_steps} output labels, "
            f"got {len(src_labels)} and {len(out_labels)}"
        )
    require_int(step, "step", 0, num_steps - 1)


def require_layer_weights(weights, batch, index, kind, kinds) -> None:
    """plot_transformer_attention's arguments: a ``kind`` of ``kinds`` that the dict ``weights`` holds, an example
    ``index`` in [0, B - 1]."""
    require_choice(kind, "kind", kinds)
    if not isinstance(weights, dict):
        got = type(weights).__name__
        raise TypeError(f"weights must be the dict of attention weights from TransformerSeq2Seq.greedy, got {got}")
    if kind not in weights:
        raise ValueError(
            f"weights must be the dict of attention weights from TransformerSeq2Seq.greedy, got {weights!r}"
        )
    require_int(index, "index", 0, len(batch) - 1)


# ---- the decoder-only model (plots.decoder) -------------------------------------------------------------------------


def require_half_losses(history, history_type: type, vocab_size, smooth) -> None:
    """plot_half_losses' arguments: a non-empty ``LMHistory``, a vocabulary of at least 2 tokens, ``smooth`` >= 1."""
    if not isinstance(history, history_type) or not history.first_half:
        raise TypeError(f"history must be the LMHistory of train_lm, got {type(history).__name__}")
    require_int(vocab_size, "vocab_size", 2)
    require_int(smooth, "smooth")


def require_head_scores(scores) -> None:
    """plot_head_scores' data: the dict of ``head_scores``, 'previous' and 'induction'."""
    if not isinstance(scores, dict) or set(scores) != {"previous", "induction"}:
        raise TypeError("scores must be the dict of head_scores: {'previous': (L, H), 'induction': (L, H)}")


def require_head_pairs(weights, heads) -> list[tuple[int, int]]:
    """plot_head_patterns' arguments: floating weights (L, H, T, T) with no empty axis, and a non-empty list of
    (layer, head) pairs within L and H, returned as pairs of ints."""
    require_float(weights, "weights")
    require_rank(weights, "weights", (4,), "(L, H, T, T)")
    if min(weights.shape) == 0:
        raise ValueError(f"weights must hold at least one layer, head and position, got shape {tuple(weights.shape)}")
    if isinstance(heads, str | bytes) or not hasattr(heads, "__iter__"):
        raise TypeError(f"heads must be a list of (layer, head) pairs, got {type(heads).__name__}")
    pairs = [_head_pair(pair, weights.shape) for pair in heads]
    if not pairs:
        raise ValueError("heads must name at least one (layer, head) pair, got none")
    return pairs


def _head_pair(pair, shape: torch.Size) -> tuple[int, int]:
    """One (layer, head) pair of integers within the weights' L and H (``shape``: (L, H, T, T))."""
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise TypeError(f"each of heads must be a (layer, head) pair, got {pair!r}")
    try:  # ints, NumPy integers and 0-d integer tensors (an argmax) all index
        layer, head = operator.index(pair[0]), operator.index(pair[1])
    except TypeError:
        raise TypeError(f"heads must hold (layer, head) pairs of integers, got {pair!r}") from None
    if not (0 <= layer < shape[0] and 0 <= head < shape[1]):
        raise ValueError(
            f"heads must hold (layer, head) pairs with layer in [0, {shape[0] - 1}] and head in "
            f"[0, {shape[1] - 1}] (weights has shape {tuple(shape)}), got {pair!r}"
        )
    return layer, head


def require_time_curves(lengths, seconds) -> None:
    """plot_time_per_token's data: a sequence of lengths and a non-empty dict method -> one time per length."""
    if isinstance(lengths, str | bytes) or not hasattr(lengths, "__len__"):
        raise TypeError(f"lengths must be a sequence of token counts, got {type(lengths).__name__}")
    if not isinstance(seconds, dict):
        raise TypeError(
            f"seconds must map each method's name to its times, one per length, got {type(seconds).__name__}"
        )
    if not seconds:
        raise ValueError("seconds must hold at least one method's times, got an empty dict")
    for name, values in seconds.items():
        if not hasattr(values, "__len__") or len(values) != len(lengths):
            count = len(values) if hasattr(values, "__len__") else type(values).__name__
            raise ValueError(f"seconds[{name!r}] must hold one time per length ({len(lengths)}), got {count}")


def require_cache_counts(values_per_token, bytes_per_value) -> list[int]:
    """plot_cache_bytes' arguments: a non-empty dict name -> numbers cached per token (returned as a list), and
    1 to 8 bytes per value."""
    if not isinstance(values_per_token, dict) or not values_per_token:
        raise TypeError(
            f"values_per_token must be a non-empty dict of name -> count, got {type(values_per_token).__name__}"
        )
    counts = [require_int(v, f"values_per_token[{k!r}]") for k, v in values_per_token.items()]
    require_int(bytes_per_value, "bytes_per_value", 1, 8)
    return counts
