"""Input checks of sparse attention (``sparse``, notebook 13) (private); see ``_validate``, whose checks these are built
from.
"""

from __future__ import annotations

from . import (
    require_bool,
    require_finite,
    require_float,
    require_int,
    require_mask,
    require_nonnegative,
    require_qkv,
    require_rank,
    require_same_dtype,
)

# A private module: every helper imports the checks it needs by name, so it has no __all__.


def require_mass_inputs(weights, selected) -> None:
    """attention_mass_kept's inputs: ``weights`` (B, Q, K) floating, finite, >= 0; ``selected`` a bool tensor of the
    same shape."""
    require_float(weights, "weights")
    require_rank(weights, "weights", (3,), "(B, Q, K)")
    require_mask(selected, "selected")
    if selected.shape != weights.shape:
        raise ValueError(
            f"selected must have the shape of weights (B, Q, K) = {tuple(weights.shape)}, one flag per weight, "
            f"got {tuple(selected.shape)}"
        )
    require_finite(weights, "weights")
    require_nonnegative(weights, "weights", "attention weights")


def require_topk_inputs(queries, keys, values, top_k, causal) -> None:
    """topk_attention's inputs: batched queries, keys and values; ``top_k`` an integer >= 1; ``causal`` a bool."""
    require_qkv(queries, keys, values)
    require_int(top_k, "top_k")
    require_bool(causal, "causal")


def require_block_sparse_inputs(queries, keys, values, block_size, top_blocks, causal) -> None:
    """block_sparse_attention's inputs: batched queries, keys and values; ``block_size`` and ``top_blocks`` integers
    >= 1; ``causal`` a bool."""
    require_qkv(queries, keys, values)
    require_int(block_size, "block_size")
    require_int(top_blocks, "top_blocks")
    require_bool(causal, "causal")


def require_indexer_inputs(index_queries, index_keys, head_weights) -> None:
    """lightning_indexer's inputs: ``index_queries`` (B, Q, H_I, D_I), ``index_keys`` (B, K, D_I) and
    ``head_weights`` (B, Q, H_I), one floating dtype, finite."""
    for name, t, rank, meaning in (
        ("index_queries", index_queries, 4, "(B, Q, H_I, D_I)"),
        ("index_keys", index_keys, 3, "(B, K, D_I)"),
        ("head_weights", head_weights, 3, "(B, Q, H_I)"),
    ):
        require_float(t, name)
        require_rank(t, name, (rank,), meaning)
    require_same_dtype(index_keys, "index_keys", index_queries, "index_queries")
    require_same_dtype(head_weights, "head_weights", index_queries, "index_queries")
    batch, num_q, heads, size = index_queries.shape
    if index_keys.shape[0] != batch or index_keys.shape[2] != size:
        raise ValueError(
            f"index_keys must have shape (B, K, D_I) = ({batch}, K, {size}) to match index_queries "
            f"{tuple(index_queries.shape)}, got index_keys {tuple(index_keys.shape)}"
        )
    if tuple(head_weights.shape) != (batch, num_q, heads):
        raise ValueError(
            f"head_weights must have shape (B, Q, H_I) = {(batch, num_q, heads)}, one weight per query and indexer "
            f"head of index_queries {tuple(index_queries.shape)}, got head_weights {tuple(head_weights.shape)}"
        )
    for name, t in (("index_queries", index_queries), ("index_keys", index_keys), ("head_weights", head_weights)):
        require_finite(t, name)


def require_nsa_inputs(queries, keys, values, gates, block_size, top_blocks, window) -> None:
    """native_sparse_attention's inputs: batched queries, keys and values; ``gates`` (B, Q, 3) in [0, 1] in the dtype
    of queries; ``block_size``, ``top_blocks`` and ``window`` integers >= 1."""
    require_qkv(queries, keys, values)
    require_float(gates, "gates")
    require_rank(gates, "gates", (3,), "(B, Q, 3)")
    require_same_dtype(gates, "gates", queries, "queries")
    wanted = (*queries.shape[:2], 3)
    if tuple(gates.shape) != wanted:
        raise ValueError(
            f"gates must have shape (B, Q, 3) = {wanted}, one gate per query and branch (compressed, selected, "
            f"window), got shape {tuple(gates.shape)}"
        )
    require_finite(gates, "gates")
    outside = (gates < 0) | (gates > 1)
    if gates.numel() and gates.device.type != "meta" and bool(outside.any()):
        raise ValueError(f"gates must lie in [0, 1], got {float(gates[outside][0])}")
    require_int(block_size, "block_size")
    require_int(top_blocks, "top_blocks")
    require_int(window, "window")
