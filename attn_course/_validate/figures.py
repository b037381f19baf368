"""Input checks of the figures of matrices and vectors (private): ``show_heatmaps`` and ``show_matrix``
(``plots.heatmaps``, ``plots.selfattention``), then the figures of notebooks 11 to 13 (``plots.rotary``,
``plots.extrapolation``, ``plots.linear``, ``plots.sparse``); see ``_validate``, whose checks these are built from.
The figures of what a model returned are checked in ``model_figures``.

A figure opens with one call from here, so its body is the drawing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from . import (
    LOW_PRECISION,
    require_finite,
    require_float,
    require_int,
    require_nonempty_list,
    require_nonnegative,
    require_number,
    require_rank,
    require_self_attention_inputs,
    require_sequence,
)
from .rotary_linear import require_scaling

# A private module: every helper imports the checks it needs by name, so it has no __all__.


def require_array(x, name: str) -> np.ndarray:
    """``x`` (a tensor, an array or nested lists of numbers) as a float NumPy array, or a TypeError naming ``name``."""
    wanted = f"{name} must be a tensor or an array of numbers"
    if x is None or isinstance(x, str | bytes):
        raise TypeError(f"{wanted}, got {type(x).__name__}")
    try:
        if isinstance(x, torch.Tensor):  # NumPy has no bfloat16: low precision is widened first
            x = x.detach().cpu()
            x = (x.float() if x.dtype in LOW_PRECISION else x).numpy()
        return np.asarray(x).astype(float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{wanted}, got {type(x).__name__} ({error})") from None


# ---- show_heatmaps (plots.heatmaps) and show_matrix (plots.selfattention) ------------------------------------------


def require_heatmaps(matrices, titles, xticklabels, yticklabels, vmin, vmax, ax) -> tuple:
    """show_heatmaps' arguments: the matrices as a grid (R, C, Q, K), one list of tick labels per panel for each
    axis, whether all panels share them, and the colour scale (lo, hi); ``ax`` None or one axes per panel."""
    data = require_array(matrices, "matrices")
    vmin, vmax = (None if v is None else require_number(v, name) for name, v in (("vmin", vmin), ("vmax", vmax)))
    if data.ndim not in (2, 3, 4) or 0 in data.shape:
        raise ValueError(
            f"matrices must have shape (Q, K), (P, Q, K) or (R, C, Q, K) with no empty axis, got shape {data.shape}"
        )
    grid = data.reshape((1, 1) + data.shape[-2:]) if data.ndim == 2 else data
    grid = grid[None] if grid.ndim == 3 else grid  # (R, C, Q, K)
    rows, cols, num_q, num_k = grid.shape
    x_panels, y_panels = (
        _panel_labels(name, labels, n, rows * cols)
        for name, labels, n in (("xticklabels", xticklabels, num_k), ("yticklabels", yticklabels, num_q))
    )
    if titles is not None:
        require_sequence(titles, "titles", "panel titles")
    if titles is not None and len(titles) != rows * cols:
        raise ValueError(f"titles must hold {rows * cols} titles (one per panel), got {len(titles)}")
    if not np.isfinite(data).all():
        raise ValueError("matrices must be finite; got NaN or infinity (check the masking)")
    given = 0 if ax is None else np.asarray(ax, dtype=object).size
    if ax is not None and given != rows * cols:
        raise ValueError(f"ax must hold one axes per panel ({rows * cols}), got {given}")
    lo = min(0.0, float(data.min())) if vmin is None else vmin
    hi = float(data.max()) if vmax is None else vmax
    shared = x_panels[1] and y_panels[1]  # one set of labels for every panel: only the outer panels write them
    labels = {"xticklabels": x_panels[0], "yticklabels": y_panels[0]}
    return grid, labels, shared, (lo, hi if hi > lo else lo + 1.0)


def _panel_labels(name: str, labels, n: int, panels: int) -> tuple[list, bool]:
    """One list of ``n`` tick labels (or None) per panel, and whether one list serves every panel."""
    if labels is not None:
        require_sequence(labels, name, "tick labels")
    per_panel = labels is not None and len(labels) > 0 and isinstance(labels[0], (list, tuple))
    if per_panel and len(labels) != panels:
        raise ValueError(f"{name} must hold one list per panel ({panels}), got {len(labels)} lists")
    lists = list(labels) if per_panel else [labels] * panels
    for panel in lists:
        if panel is not None and len(panel) != n:
            raise ValueError(
                f"{name} must hold {n} labels (one per {'key' if name[0] == 'x' else 'query'}), got {len(panel)}"
            )
    return lists, not per_panel  # per-panel lists are each panel's own, even when two agree (a slider keeps its frame)


def require_matrix(matrix, row_labels, col_labels, vmin, vmax) -> np.ndarray:
    """show_matrix's arguments: a finite (R, C) matrix, returned as a float array; R row and C column labels (or
    None); the colour scale vmin < vmax, either None."""
    data = require_array(matrix, "matrix")
    if data.ndim != 2 or 0 in data.shape:
        raise ValueError(f"matrix must be 2-D (R, C) with no empty axis, got shape {data.shape}")
    if not np.isfinite(data).all():
        raise ValueError("matrix must be finite, got NaN or infinity")
    for name, labels, n in (("row_labels", row_labels, data.shape[0]), ("col_labels", col_labels, data.shape[1])):
        if labels is not None:
            require_sequence(labels, name, "labels")
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} must hold {n} labels, got {len(labels)}")
    bounds = [None if v is None else require_number(v, name) for name, v in (("vmin", vmin), ("vmax", vmax))]
    if None not in bounds and bounds[0] >= bounds[1]:
        raise ValueError(f"vmin must be below vmax, got vmin = {bounds[0]} and vmax = {bounds[1]}")
    return data


def require_step_figure(inputs, w_query, w_key, w_value, token, token_names, axes=None) -> list[str]:
    """plot_self_attention_steps' arguments: those of ``self_attention_steps``, with no empty panel to draw; a token
    in [0, T - 1]; T token names (returned, ``x0, x1, ...`` by default); ``axes`` None or 8 axes."""
    require_self_attention_inputs(inputs, w_query, w_key, w_value)
    for name, t in (("inputs", inputs), ("w_value", w_value)):  # an empty panel has nothing to draw
        if 0 in t.shape:
            raise ValueError(f"{name} must have no empty axis to be drawn, got shape {tuple(t.shape)}")
    num_tokens = inputs.shape[0]
    require_int(token, "token", 0, num_tokens - 1)
    names = list(token_names) if token_names is not None else [f"x{i}" for i in range(num_tokens)]
    if len(names) != num_tokens:
        raise ValueError(f"token_names must hold {num_tokens} names (one per token), got {len(names)}")
    given = 8 if axes is None else np.asarray(axes, dtype=object).size
    if given != 8:
        raise ValueError(f"axes must hold 8 axes (two rows of four panels), got {given}")
    return names


# ---- RoPE, context extension and linear attention (plots.rotary, plots.extrapolation, plots.linear) ----------------


def require_vector_pair(q, k) -> int:
    """One query and one key: floating (D,) tensors of one even size D, finite; returns D."""
    for name, t in (("q", q), ("k", k)):
        require_float(t, name)
        require_rank(t, name, (1,), "(D,)")
        require_finite(t, name)
    if q.shape != k.shape or q.shape[0] % 2:
        raise ValueError(f"q and k must have the same even size D, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    return q.shape[0]


def require_results(results, train_len, metric, x, baseline) -> None:
    """plot_extrapolation's data: a DataFrame with columns scheme, seed, ``x`` and ``metric`` (numbers), not empty;
    the training length >= 1; a baseline None or a non-empty dict."""
    require_int(train_len, "train_len")
    if not isinstance(metric, str):
        raise TypeError(f"metric must be the name of a column of results (a str), got {metric!r}")
    if not isinstance(x, str):
        raise TypeError(f"x must be the name of a column of results (a str), got {x!r}")
    missing = {"scheme", "seed", x, metric} - set(getattr(results, "columns", ()))
    if missing:
        raise ValueError(
            f"results must be a DataFrame with columns scheme, seed, {x} and {metric}, missing {sorted(missing)}"
        )
    if len(results) == 0:
        raise ValueError("results must hold at least one row (scheme, seed, test length), got an empty DataFrame")
    if results[metric].dtype.kind not in "biuf":
        raise TypeError(f"results[{metric!r}] must hold numbers, got dtype {results[metric].dtype}")
    if baseline is not None and (not isinstance(baseline, dict) or not baseline):
        got = "an empty dict" if isinstance(baseline, dict) else type(baseline).__name__
        raise TypeError(f"baseline must be a dict test length -> value, not empty, got {got}")


def require_scalings(head_dim, scalings, original_len) -> None:
    """plot_rope_scalings' arguments: D >= 2, a non-empty dict label -> RoPE scaling, the original length >= 1."""
    require_int(head_dim, "head_dim", 2)
    require_int(original_len, "original_len")
    if not isinstance(scalings, dict) or not scalings:
        got = "an empty dict" if isinstance(scalings, dict) else type(scalings).__name__
        raise TypeError(f"scalings must be a dict label -> scaling, not empty, got {got}")
    for scaling in scalings.values():
        require_scaling(scaling)


def require_query_key_rows(queries, keys) -> None:
    """Unbatched queries (Q, D) and keys (K, D), floating, with one size D >= 1 and at least one row each."""
    for name, t, meaning in (("queries", queries, "(Q, D)"), ("keys", keys, "(K, D)")):
        require_float(t, name)
        require_rank(t, name, (2,), meaning)
    if queries.shape[-1] != keys.shape[-1] or queries.shape[-1] == 0:
        raise ValueError(
            f"queries and keys must share a size D >= 1, got queries {tuple(queries.shape)} and keys "
            f"{tuple(keys.shape)}"
        )
    if queries.shape[0] == 0 or keys.shape[0] == 0:
        raise ValueError(
            f"queries and keys must each hold at least one row to draw weights, got queries {tuple(queries.shape)} "
            f"and keys {tuple(keys.shape)}"
        )


def require_recall_curves(pairs, curves, reference) -> None:
    """plot_recall_curves' data: a non-empty list of numbers of pairs, a non-empty mapping name -> one value per
    entry of ``pairs``, and a ``reference`` None or one value per entry."""
    if isinstance(pairs, str | bytes) or not isinstance(pairs, Sequence) or not pairs:
        raise TypeError(f"pairs must be a non-empty list of numbers of pairs, got {pairs!r} ({type(pairs).__name__})")
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(f"curves must map each memory's name to its values, got {curves!r} ({type(curves).__name__})")
    named = [(f"curves[{name!r}]", values) for name, values in curves.items()]
    if reference is not None:
        named.append(("reference", reference))
    for what, values in named:
        if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
            raise TypeError(f"{what} must be a list of numbers, got {type(values).__name__}")
        if len(values) != len(pairs):
            raise ValueError(f"{what} must have one value per entry of pairs ({len(pairs)}), got {len(values)}")


# ---- sparse attention (plots.sparse) -------------------------------------------------------------------------------


def require_mass_by_position(weights, k, labels) -> list[str]:
    """plot_mass_by_position's arguments: ``k`` an integer >= 1, and weights and labels as plot_mass_kept takes them."""
    require_int(k, "k")
    return require_mass_curves(weights, [k], labels)[1]


def require_mass_curves(weights, budgets, labels) -> tuple[list[int], list[str]]:
    """plot_mass_kept's arguments: causal weights (H, Q, K) or (H, B, Q, K), floating, finite, >= 0, K >= Q >= 1,
    H >= 1, 0 on every key after its query; a non-empty list of budgets, integers >= 1 (returned sorted, without
    repeats); H labels or None (returned, ``head 0, head 1, ...`` by default)."""
    require_float(weights, "weights")
    require_rank(weights, "weights", (3, 4), "(H, Q, K) or (H, B, Q, K)")
    heads, num_q, num_k = weights.shape[0], weights.shape[-2], weights.shape[-1]
    if heads == 0 or num_q == 0 or num_k < num_q or weights.numel() == 0:
        raise ValueError(
            f"weights must have shape (H, Q, K) or (H, B, Q, K) with H >= 1, B >= 1 and K >= Q >= 1 (every query sees "
            f"a key), got shape {tuple(weights.shape)}"
        )
    require_finite(weights, "weights")
    require_nonnegative(weights, "weights", "attention weights")
    after = torch.ones(num_q, num_k, dtype=torch.bool, device=weights.device).triu(num_k - num_q + 1)  # (Q, K)
    if bool((weights[..., after] != 0).any()):
        raise ValueError(
            "weights must be causal: 0 on every key after its query (query i sees keys 0..i + K - Q), got a weight "
            f"of {float(weights[..., after].abs().max())} after one"
        )
    require_nonempty_list(budgets, "budgets", "numbers of keys k (integers >= 1)")
    for i, k in enumerate(budgets):
        require_int(k, f"budgets[{i}]")
    if labels is not None:
        require_sequence(labels, "labels", "head names")
        if len(labels) != heads:
            raise ValueError(f"labels must hold {heads} names (one per head of weights), got {len(labels)}")
    return sorted(set(budgets)), [str(x) for x in labels] if labels is not None else [f"head {h}" for h in range(heads)]


def require_selection_figure(queries, keys, top_k, block_size, axes=None) -> None:
    """plot_sparse_selection's arguments: queries and keys (T, D) of one shape, floating, finite, T >= 1, D >= 1;
    ``top_k`` and ``block_size`` integers >= 1; ``axes`` None or three axes."""
    require_query_key_rows(queries, keys)
    if queries.shape != keys.shape:
        raise ValueError(
            f"queries and keys must have one shape (T, D): one key per query position (causal self-attention), got "
            f"queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
        )
    require_finite(queries, "queries")
    require_finite(keys, "keys")
    require_int(top_k, "top_k")
    require_int(block_size, "block_size")
    given = 3 if axes is None else np.asarray(axes, dtype=object).size
    if given != 3:
        raise ValueError(f"axes must hold three axes (top-k, MoBA, window), got {given}")
