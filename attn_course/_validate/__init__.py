"""Input checks (private): a topic function opens with one call from this package that states what it needs, and the
formula follows. Every check of a course helper lives here, by what it checks:

* ``values``   plain values: numbers, choices, flags, sequences, strings, argument types
* ``tensors``  single tensors: types, dtypes (``LOW_PRECISION``), ranks, sizes, masks, lengths, token ids
* this module  several arguments together (queries, keys and values; pooling; heads), and both modules above re-exported
* ``args``     the topic modules of notebooks 01-08 (data, masking, positional, tasks, training, seq2seq, transformer)
* ``models``   causal self-attention, latent attention, the decoder-only model, the Transformer, the RNNs
* ``lm``       the KV cache, generation, the language-modelling data, training and measures
* ``cost``     scaling and the cost modules, and their figures
* ``rotary_linear``  RoPE, ALiBi, context extension, linear attention and the delta rule
* ``figures``  the figures of matrices and vectors (``show_heatmaps``, ``show_matrix``) and of notebooks 11 and 12
* ``model_figures``  the figures of what a model returned (notebooks 07-09)
* ``widgets``  the slider panels

Every helper checks what a learner hands it before computing, so a mistake is reported
as a sentence that names the argument, what was expected and what came, instead of a
shape error deep inside ``torch.bmm`` or a silent NaN.

One rule everywhere: a wrong type raises ``TypeError``; a wrong value or shape raises
``ValueError``. The same fault gets the same words, because the same function words it.
"""

from __future__ import annotations

import torch

# No __all__ (a private module): the two imports below re-export the checks that every helper imports from here.
from .tensors import (  # noqa: F401
    require_curve,
    require_dim,
    require_distinct_nodes,
    require_feature_size,
    require_finite,
    require_float,
    require_head_split,
    require_kernel_weights,
    require_kv_head_tensor,
    require_lagrange_inputs,
    require_last_size,
    require_mask,
    require_mask_fits,
    require_masking,
    require_min_rank,
    require_no_overflow,
    require_nonnegative,
    require_not_empty,
    require_param_dtype,
    require_positions,
    require_rank,
    require_row_scores,
    require_same_dtype,
    require_scores,
    require_source,
    require_target,
    require_tensor,
    require_tokens,
    require_valid_lens,
)
from .values import (  # noqa: F401
    require_block_grid,
    require_bool,
    require_causal_window,
    require_choice,
    require_digit_string,
    require_divisible,
    require_float_dtype,
    require_instance,
    require_int,
    require_kernel,
    require_keywords,
    require_kv_heads,
    require_loglog_data,
    require_nonempty_list,
    require_number,
    require_positive,
    require_probability,
    require_seq2seq_model,
    require_sequence,
)

LOW_PRECISION = (torch.float16, torch.bfloat16)  # dtypes that the helpers compute in float32 and give back as they came


# Attention's arguments together: one call at the top of a topic function states what it needs.


def require_qkv(queries, keys, values, same_size: bool = True) -> None:
    """Batched queries (B, Q, D), keys (B, K, D) and values (B, K, V): floating, one dtype, finite.

    With ``same_size=False`` (additive attention) queries and keys may differ in their last size.
    """
    for name, t, meaning in (
        ("queries", queries, "(B, Q, D)"),
        ("keys", keys, "(B, K, D)"),
        ("values", values, "(B, K, V)"),
    ):
        require_float(t, name)
        require_rank(t, name, (3,), meaning)
    require_same_dtype(keys, "keys", queries, "queries")
    require_same_dtype(values, "values", queries, "queries")
    if not (queries.shape[0] == keys.shape[0] == values.shape[0]):
        raise ValueError(
            "queries, keys and values must share the batch size B, got "
            f"queries {tuple(queries.shape)}, keys {tuple(keys.shape)}, values {tuple(values.shape)}"
        )
    if keys.shape[1] != values.shape[1]:
        raise ValueError(
            f"values must have one row per key: values.shape[1] must be K = {keys.shape[1]} "
            f"(keys {tuple(keys.shape)}), got values {tuple(values.shape)}"
        )
    if same_size and queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"queries and keys must have the same size D for a dot product, got queries "
            f"{tuple(queries.shape)} (D = {queries.shape[-1]}) and keys {tuple(keys.shape)} "
            f"(D = {keys.shape[-1]}); use additive attention for different sizes"
        )
    if same_size:
        require_feature_size(queries, "queries", "(B, Q, D)")
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        require_finite(t, name)


def require_pooling_inputs(scores, values, dropout=None) -> None:
    """``scores`` (B, Q, K) and ``values`` (B, K, V) of one floating dtype, finite; ``dropout`` None or callable."""
    require_float(scores, "scores")
    require_float(values, "values")
    require_rank(scores, "scores", (3,), "(B, Q, K)")
    require_rank(values, "values", (3,), "(B, K, V)")
    require_same_dtype(values, "values", scores, "scores")
    if values.shape[:2] != scores.shape[::2]:
        raise ValueError(
            f"values must have shape (B, K, V) = ({scores.shape[0]}, {scores.shape[2]}, V) to match scores "
            f"{tuple(scores.shape)}, got values {tuple(values.shape)}"
        )
    if dropout is not None and not callable(dropout):
        raise TypeError(f"dropout must be a function such as nn.Dropout(p), got {type(dropout).__name__}")
    require_finite(scores, "scores")
    require_finite(values, "values")


def require_queries_keys(queries, keys) -> None:
    """Queries (B, Q, D) and keys (B, K, D) of one floating dtype, D >= 1: the operands of a dot product."""
    for name, t, meaning in (("queries", queries, "(B, Q, D)"), ("keys", keys, "(B, K, D)")):
        require_float(t, name)
        require_rank(t, name, (3,), meaning)
    require_same_dtype(keys, "keys", queries, "queries")
    if queries.shape[0] != keys.shape[0] or queries.shape[2] != keys.shape[2]:
        raise ValueError(
            f"keys must have shape (B, K, D) = ({queries.shape[0]}, K, {queries.shape[2]}) to match queries "
            f"{tuple(queries.shape)}, got keys {tuple(keys.shape)}"
        )
    require_feature_size(queries, "queries", "(B, Q, D)")


def require_additive_inputs(queries, keys, w_q, w_k, w_v) -> None:
    """Queries (B, Q, Dq), keys (B, K, Dk), w_q (U, Dq), w_k (U, Dk), w_v (U,): one floating dtype."""
    for name, t, meaning in (("queries", queries, "(B, Q, Dq)"), ("keys", keys, "(B, K, Dk)")):
        require_float(t, name)
        require_rank(t, name, (3,), meaning)
    if queries.shape[0] != keys.shape[0]:
        raise ValueError(
            f"queries and keys must share the batch size B, got queries {tuple(queries.shape)} "
            f"and keys {tuple(keys.shape)}"
        )
    for name, t in (("keys", keys), ("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        require_float(t, name)
        require_same_dtype(t, name, queries, "queries")
    require_rank(w_v, "w_v", (1,), "(U,)")
    hidden = w_v.shape[0]
    for name, t, given, which in (("w_q", w_q, queries, "Dq"), ("w_k", w_k, keys, "Dk")):
        size, source = given.shape[-1], "queries" if given is queries else "keys"
        if t.shape != (hidden, size):
            raise ValueError(
                f"{name} must have shape (U, {which}) = ({hidden}, {size}) (U from w_v {tuple(w_v.shape)}, "
                f"{which} from {source} {tuple(given.shape)}), got {tuple(t.shape)}"
            )


def require_additive_layer_inputs(queries, keys, values, W_q, W_k) -> None:
    """``require_qkv`` (sizes may differ) plus sizes and dtype that fit the layer's ``W_q`` and ``W_k``."""
    require_qkv(queries, keys, values, same_size=False)
    for name, t, arg, size in (
        ("queries", queries, "query_size", W_q.in_features),
        ("keys", keys, "key_size", W_k.in_features),
    ):
        require_dim(t, name, -1, size, expected=f"{arg} = ")
    if queries.dtype != W_q.weight.dtype:
        raise TypeError(
            f"queries have dtype {queries.dtype} but the layer's parameters are {W_q.weight.dtype}; "
            f"convert the layer with .to({queries.dtype})"
        )


def require_self_attention_inputs(inputs, w_query, w_key, w_value) -> None:
    """inputs (T, Din); w_query, w_key (Din, D) with D >= 1; w_value (Din, V); one floating dtype, finite."""
    require_float(inputs, "inputs")
    require_rank(inputs, "inputs", (2,), "(T, Din)")
    for name, w in (("w_query", w_query), ("w_key", w_key), ("w_value", w_value)):
        require_float(w, name)
        require_rank(w, name, (2,), "(Din, V)" if name == "w_value" else "(Din, D)")
        require_same_dtype(w, name, inputs, "inputs")
        require_dim(w, name, 0, inputs.shape[1], expected="Din = ", note=f"inputs {tuple(inputs.shape)}")
    if w_query.shape[1] != w_key.shape[1]:
        raise ValueError(
            f"w_query and w_key must project to one size D, got {tuple(w_query.shape)} and {tuple(w_key.shape)}"
        )
    require_feature_size(w_query, "w_query", "(Din, D)")
    for name, t in (("inputs", inputs), ("w_query", w_query), ("w_key", w_key), ("w_value", w_value)):
        require_finite(t, name)


def require_heads_inputs(queries, keys, values, num_heads, valid_lens, mask, projections, num_kv_heads) -> int:
    """Every argument of ``multi_head_attention``, checked against the caller's sizes; returns G, the number of
    key/value heads.

    ``projections``: name -> function; a function with a ``.weight`` (an ``nn.Linear``) must match the
    inputs' dtype, and ``W_q``, ``W_k``, ``W_v`` their input's last size. ``mask``: (Q, K), (1, Q, K) or (B, Q, K).
    """
    require_qkv(queries, keys, values, same_size=False)
    require_int(num_heads, "num_heads")
    for name, fn in projections.items():
        if not callable(fn):
            raise TypeError(f"{name} must be a projection such as nn.Linear, got {type(fn).__name__}")
        weight = getattr(fn, "weight", None)  # an nn.Linear: its parameters must match the inputs' dtype
        if isinstance(weight, torch.Tensor) and weight.dtype != queries.dtype:
            raise TypeError(
                f"{name} has dtype {weight.dtype} but queries have dtype {queries.dtype}; "
                f"convert the inputs, or the projection with .to({queries.dtype})"
            )
        fed = {"W_q": ("queries", queries), "W_k": ("keys", keys), "W_v": ("values", values)}.get(name)
        if fed is not None and isinstance(weight, torch.Tensor) and weight.ndim == 2:  # in_features = weight.shape[1]
            require_dim(fed[1], fed[0], -1, weight.shape[1], note=f"the input size of {name}")
    batch, num_q, num_k = queries.shape[0], queries.shape[1], keys.shape[1]
    if valid_lens is not None:
        require_valid_lens(valid_lens, num_k, (batch, num_q))
    if mask is not None:
        require_mask(mask)
        wanted = [(num_q, num_k), (1, num_q, num_k), (batch, num_q, num_k)]
        if tuple(mask.shape) not in wanted:
            raise ValueError(
                f"mask must have shape (Q, K), (1, Q, K) or (B, Q, K) = {' or '.join(map(str, wanted))}, "
                f"got {tuple(mask.shape)}"
            )
    return require_kv_heads(num_heads, num_kv_heads)


def require_kv_features(k: torch.Tensor, v: torch.Tensor, head_size: int, groups: int) -> None:
    """Projected keys and values (B * G, K, dh) whose head size dh is the queries' ``head_size``."""
    if k.shape[-1] != head_size or v.shape[-1] != head_size:
        raise ValueError(
            f"W_k and W_v must give num_kv_heads * dh = {groups} * {head_size} features, "
            f"got {k.shape[-1] * groups} and {v.shape[-1] * groups}"
        )


def require_layer_inputs(queries, keys, values, layers) -> None:
    """``require_qkv`` (sizes may differ), each input fitting the input size and dtype of its ``nn.Linear`` of
    ``layers`` (W_q, W_k, W_v)."""
    require_qkv(queries, keys, values, same_size=False)
    for name, t, layer in zip(("queries", "keys", "values"), (queries, keys, values), layers, strict=True):
        require_dim(t, name, -1, layer.in_features)
        if t.dtype != layer.weight.dtype:
            raise TypeError(
                f"{name} have dtype {t.dtype} but the layer's parameters are {layer.weight.dtype}; "
                f"convert the inputs, or the layer with .to({t.dtype})"
            )


def require_attention_inputs(queries, keys, values, block_size=1, causal=False, window=None) -> None:
    """queries (..., Q, D), keys (..., K, D), values (..., K, V): one floating dtype, shared leading sizes (...),
    not empty, finite (``require_qkv`` is the batched 3-D version); then ``flash_attention``'s block size (an
    integer >= 1), ``causal`` and ``window``."""
    meanings = {"queries": "(..., Q, D)", "keys": "(..., K, D)", "values": "(..., K, V)"}
    named = {"queries": queries, "keys": keys, "values": values}
    for name, t in named.items():
        require_float(t, name)
        if t.ndim < 2:
            raise ValueError(f"{name} must have shape {meanings[name]} (2-D or more), got shape {tuple(t.shape)}")
    require_same_dtype(keys, "keys", queries, "queries")
    require_same_dtype(values, "values", queries, "queries")
    if not (queries.shape[:-2] == keys.shape[:-2] == values.shape[:-2]):
        raise ValueError(
            "queries, keys and values must share their leading sizes (...), got "
            f"queries {tuple(queries.shape)}, keys {tuple(keys.shape)}, values {tuple(values.shape)}"
        )
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            f"values must have one row per key: values.shape[-2] must be K = {keys.shape[-2]} "
            f"(keys {tuple(keys.shape)}), got values {tuple(values.shape)}"
        )
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"queries and keys must have the same size D for a dot product, got queries {tuple(queries.shape)} "
            f"(D = {queries.shape[-1]}) and keys {tuple(keys.shape)} (D = {keys.shape[-1]})"
        )
    for name, t in named.items():
        require_not_empty(t, name, meanings[name])
        require_finite(t, name)
    require_int(block_size, "block_size", 1)
    require_causal_window(causal, window)
