"""Input checks of the figures of notebooks 11 and 12 (private): ``plots.rotary``, ``plots.extrapolation`` and
``plots.linear``; see ``_validate``, whose checks these are built from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import require_finite, require_float, require_int, require_rank
from .rotary_linear import require_scaling

# A private module: every helper imports the checks it needs by name, so it has no __all__.


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
