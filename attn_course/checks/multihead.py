"""Checks for the exercises on multi-head attention: splitting into heads, their parameters (notebook 06).

Notebook 06's checks on positions are in ``checks.positional``.
"""

from __future__ import annotations

import operator

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = [
    "check_split_shape",
    "check_parameter_count",
    "check_split_merge",
    "check_multi_head",
]


def check_split_shape(shape) -> Feedback:
    """The shape of ``split_heads(x, 4)`` for ``x`` of shape (2, 5, 8)."""
    if shape is None:
        return fb.hint("replace None with the shape, e.g. (1, 2, 3).")
    try:
        items = None if isinstance(shape, str) else list(shape)
    except TypeError:  # a number, or a 0-d tensor
        items = None
    if items is None:
        return fb.hint(f"expected a shape such as (1, 2, 3): whole numbers in a tuple, got {type(shape).__name__}.")
    try:
        got = tuple(operator.index(s) for s in items)
    except TypeError:
        kinds = " and ".join(sorted({type(s).__name__ for s in items if not isinstance(s, int)}))
        return fb.hint(f"a shape holds whole numbers (ints), got {kinds} in {tuple(items)!r}.")
    if got == (8, 5, 2):
        return fb.ok("B * H = 2 * 4 = 8 sequences of 5 positions, each head of size 8 / 4 = 2.")
    if got == (2, 4, 5, 2):
        return fb.hint("that is the shape before the head axis is folded into the batch axis: (B * H, T, dh).")
    if got == (8, 5, 8):
        return fb.hint("each head sees only its share of the features: dh = 8 / 4.")
    if got == (2, 5, 4, 2):
        return fb.hint("that is after the first reshape; the heads then move next to the batch and merge with it.")
    if got == (5, 8, 2):
        return fb.hint("the folded batch axis B * H comes first, then T and dh: (B, T, H * dh) -> (B * H, T, dh).")
    if got == (4, 5, 2):
        return fb.hint("the batch axis holds B * H = 2 * 4 sequences, every head of every sequence, not H alone.")
    if len(got) != 3:
        return fb.hint(f"split_heads gives a shape of three axes, (B * H, T, dh); yours has {len(got)}.")
    return fb.hint("(B, T, H * dh) -> (B * H, T, dh) with B = 2, T = 5, H = 4.")


@fb.number_answer("the number of parameters")
def check_parameter_count(answer: float) -> Feedback:
    """Parameters of ``MultiHeadAttention(num_hiddens=64, num_heads=8)`` (no biases)."""
    if answer == 4 * 64 * 64:
        return fb.ok(
            "4 matrices of 64 x 64 = 16384, whatever the number of heads: heads split the work, not add to it."
        )
    if answer == 3 * 64 * 64:
        return fb.hint("W_q, W_k and W_v, yes, but also the output projection W_o.")
    if answer == 8 * 4 * 64 * 64:
        return fb.hint(
            "each head uses a slice of the projections, of size 64 / 8: the heads share the 64 x 64 matrices."
        )
    if answer == 4 * 64 * 64 + 4 * 64:
        return fb.hint("this layer has no biases (bias=False).")
    if answer == 4 * 64 * 64 // 8:
        return fb.hint(
            "that is one head's share (64 / 8 columns of each matrix); count the entries of W_q, W_k, W_v and W_o "
            "whole, as every head's share is in them."
        )
    if answer == 64 * 64:
        return fb.hint("that is one matrix; there are four of them, W_q, W_k, W_v and W_o.")
    if answer == 4 * 64:
        return fb.hint("each of the four matrices is 64 x 64, so each holds 64 * 64 entries, not 64.")
    return fb.hint("count the entries of W_q, W_k, W_v and W_o, each num_hiddens x num_hiddens.")


# ---- build it: split and merge heads, a multi-head layer ------------------------------

_CASES_SEED = 60_606  # private: the learner does not see the cases


def _split_variants(x: torch.Tensor, num_heads: int) -> dict[str, torch.Tensor]:
    """The right split and its typical mistakes, for x (B, T, H * dh)."""
    batch, steps, size = x.shape
    dh = size // num_heads
    right = x.reshape(batch, steps, num_heads, dh).permute(0, 2, 1, 3).reshape(batch * num_heads, steps, dh)
    return {
        "right": right,
        "no permute": x.reshape(batch * num_heads, steps, dh),  # positions and heads mixed up
        "head-major": x.reshape(batch, steps, num_heads, dh).permute(2, 0, 1, 3).reshape(-1, steps, dh),
        "strided": x.reshape(batch, steps, dh, num_heads).permute(0, 3, 1, 2).reshape(-1, steps, dh),
    }


_SPLIT_HINTS = {
    "no permute": "a reshape alone mixes positions and heads: reshape to (B, T, H, dh), permute to (B, H, T, dh), "
    "then reshape to (B * H, T, dh).",
    "head-major": "wrong head order: batch element b * H + h must be (sequence b, head h); permute to (B, H, T, dh), "
    "not (H, B, T, dh).",
    "strided": "wrong reshape: head h owns the consecutive features h * dh .. (h + 1) * dh - 1; reshape to "
    "(B, T, H, dh), not (B, T, dh, H).",
}


def check_split_merge(split_heads, merge_heads) -> Feedback:
    """Build it: ``split_heads(x, H)``: (B, T, H * dh) -> (B * H, T, dh), and ``merge_heads``, its inverse.

    Compared with the reference on hidden random sizes; ``merge_heads(split_heads(x, H), H)`` must give ``x`` back.
    """
    for name, fn in (("split_heads", split_heads), ("merge_heads", merge_heads)):
        problem = fb.function_problem(fn, f"your function {name}(x, num_heads)", f"a function {name}(x, num_heads)")
        if problem is not None:
            return problem
    gen = torch.Generator().manual_seed(_CASES_SEED)
    for batch, steps, num_heads, dh in ((2, 5, 4, 3), (3, 4, 2, 5), (1, 6, 3, 2)):
        x = torch.randn(batch, steps, num_heads * dh, generator=gen)
        variants = _split_variants(x, num_heads)  # the reference first, from the original x
        case = f"on x of shape {tuple(x.shape)} with num_heads = {num_heads}, "
        split, problem = fb.call_on_copies(split_heads, {"x": x, "num_heads": num_heads})
        if problem is not None:
            return fb.hint("split_heads: " + case + problem.message)
        if isinstance(split, torch.Tensor) and tuple(split.shape) == (batch, num_heads, steps, dh):
            return fb.hint(
                f"split_heads: got {tuple(split.shape)} = (B, H, T, dh); fold the head axis into the batch axis, "
                f"(B * H, T, dh) = {(batch * num_heads, steps, dh)}."
            )
        problem = fb.tensor_problem(split, (batch * num_heads, steps, dh), "split_heads's result (B * H, T, dh)")
        if problem is not None:
            return fb.hint("split_heads: " + problem.message)
        if not torch.equal(split, variants["right"]):
            for mistake, hint in _SPLIT_HINTS.items():
                if torch.equal(split, variants[mistake]):
                    return fb.hint("split_heads: " + hint)
            return fb.hint(
                "split_heads: the result differs from (B, T, D) -> (B, T, H, dh) -> (B, H, T, dh) -> (B * H, T, dh)."
            )
        merged, problem = fb.call_on_copies(merge_heads, {"x": variants["right"], "num_heads": num_heads})
        if problem is not None:
            return fb.hint(
                f"merge_heads: on x of shape {tuple(variants['right'].shape)} with num_heads = {num_heads}, "
                + problem.message
            )
        problem = fb.tensor_problem(merged, tuple(x.shape), "merge_heads's result (B, T, H * dh)")
        if problem is not None:
            return fb.hint("merge_heads: " + problem.message)
        if not torch.equal(merged, x):
            return fb.hint(
                "merge_heads does not undo split_heads: reshape to (B, H, T, dh), permute back to (B, T, H, dh), "
                "then reshape to (B, T, H * dh)."
            )
    return fb.ok("split_heads gives (B * H, T, dh) in the order (sequence, head), and merge_heads undoes it exactly.")


def _merge(out: torch.Tensor, batch: int, num_heads: int, order: str) -> torch.Tensor:
    """(B * H, T, dh) -> (B, T, H * dh), undoing the split ``order`` of ``_split_variants``."""
    steps, dh = out.shape[1:]
    if order == "head-major":
        return out.reshape(num_heads, batch, steps, dh).permute(1, 2, 0, 3).reshape(batch, steps, -1)
    if order == "strided":
        return out.reshape(batch, num_heads, steps, dh).permute(0, 2, 3, 1).reshape(batch, steps, -1)
    if order == "no permute":
        return out.reshape(batch, steps, -1)
    return out.reshape(batch, num_heads, steps, dh).permute(0, 2, 1, 3).reshape(batch, steps, -1)  # (B, T, D)


def _multi_head(x_q, x_kv, weights, num_heads, *, split="right", merge="right", project=True, scale=None, dim=-1):
    """Reference multi-head attention with row-vector weights (x @ W), and its typical mistakes."""
    W_q, W_k, W_v, W_o = weights
    q, k, v = (_split_variants(t, num_heads)[split] for t in (x_q @ W_q, x_kv @ W_k, x_kv @ W_v))  # (B * H, T, dh)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    out = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim) @ v  # (B * H, Q, K) @ (B * H, K, dh)
    merged = _merge(out, x_q.shape[0], num_heads, merge)  # (B, Q, D)
    return merged @ W_o if project else merged


_MULTI_HEAD_MISTAKES = [
    (
        {"split": "strided", "merge": "strided"},
        "wrong reshape: head h owns the consecutive features "
        "h * dh .. (h + 1) * dh - 1; reshape to (B, T, H, dh), not (B, T, dh, H).",
    ),
    (
        {"split": "no permute", "merge": "no permute"},
        "a reshape alone mixes positions and heads: permute to (B, H, T, dh) between the reshapes.",
    ),
    (
        {"split": "no permute"},
        "a reshape alone mixes positions and heads: permute to (B, H, T, dh) between the reshapes.",
    ),
    (
        {"merge": "no permute"},
        "merging: a reshape alone mixes positions and heads; permute (B, H, T, dh) back to "
        "(B, T, H, dh) before the last reshape.",
    ),
    (
        {"split": "head-major"},
        "wrong head order: the split orders (head, sequence) but the merge (sequence, head); "
        "use one order, (B, H, T, dh), in both.",
    ),
    (
        {"merge": "head-major"},
        "wrong head order: the merge orders (head, sequence) but the split (sequence, head); "
        "use one order, (B, H, T, dh), in both.",
    ),
    ({"split": "strided"}, "wrong reshape when splitting: head h owns features h * dh .. (h + 1) * dh - 1."),
    ({"merge": "strided"}, "wrong reshape when merging: head h's output goes to features h * dh .. (h + 1) * dh - 1."),
    ({"project": False}, "the output projection is missing: multiply the merged heads by W_o."),
    ({"scale": 1.0}, "the scale is missing: each head divides its scores by sqrt(dh), dh = D / H."),
    ({"dim": -2}, "the softmax runs over the queries: each query's weights over the keys sum to 1, dim=-1."),
]


@fb.function_answer(
    "your function multi_head(queries, keys_values, W_q, W_k, W_v, W_o, num_heads)", "a function multi_head(...)"
)
@fb.own_random_state
def check_multi_head(multi_head) -> Feedback:
    """Build it: ``multi_head(queries (B, Q, D), keys_values (B, K, D), W_q, W_k, W_v, W_o, num_heads)`` -> (B, Q, D).

    Weights are (D, D) tensors used as ``x @ W``, without biases. Compared with ``torch.nn.MultiheadAttention``
    loaded with the same weights (``in_proj_weight`` holds ``W.T``), on hidden random cases.
    """
    gen = torch.Generator().manual_seed(_CASES_SEED + 1)
    # head sizes dh = 3, 4 and 2, model sizes D = 6, 12 and 10: a scale or a size written as a number fails somewhere
    for batch, num_q, num_k, size, num_heads in ((2, 4, 4, 6, 2), (1, 3, 5, 12, 3), (2, 5, 2, 10, 5)):
        x_q = torch.randn(batch, num_q, size, generator=gen)
        x_kv = torch.randn(batch, num_k, size, generator=gen)
        weights = [torch.randn(size, size, generator=gen) / size**0.5 for _ in range(4)]  # (D, D) each, x @ W
        torch_mha = torch.nn.MultiheadAttention(size, num_heads, bias=False, batch_first=True)
        with torch.no_grad():  # the reference first, from the original inputs
            torch_mha.in_proj_weight.copy_(torch.cat([w.T for w in weights[:3]]))  # (3D, D): nn.Linear holds W.T
            torch_mha.out_proj.weight.copy_(weights[3].T)
            want, _ = torch_mha(x_q, x_kv, x_kv, need_weights=False)  # (B, Q, D)
        names = ("queries", "keys_values", "W_q", "W_k", "W_v", "W_o")
        out, problem = fb.call_on_copies(
            multi_head, {**dict(zip(names, (x_q, x_kv, *weights), strict=True)), "num_heads": num_heads}
        )
        if problem is not None:
            return problem
        problem = fb.tensor_problem(out, (batch, num_q, size), "the output (B, Q, D)")
        if problem is not None:
            return problem
        if fb.close(out, want, 1e-4):
            continue
        problem = fb.not_finite(out.detach(), "your output")
        if problem is not None:
            return problem
        for kwargs, hint in _MULTI_HEAD_MISTAKES:
            if fb.close(out, _multi_head(x_q, x_kv, weights, num_heads, **kwargs), 1e-4):
                return fb.hint(hint)
        if fb.close(out, _multi_head(x_q, x_kv, [w.T for w in weights], num_heads), 1e-4):
            return fb.hint("the weights are used transposed: the projections are x @ W with W of shape (D, D).")
        if fb.close(out, _multi_head(x_q, x_kv, weights, num_heads, scale=size**-0.5), 1e-4):
            return fb.hint("wrong scale: each head has dh = D / H features, so divide by sqrt(dh), not sqrt(D).")
        for other in range(1, size + 1):
            if size % other == 0 and other != num_heads and fb.close(out, _multi_head(x_q, x_kv, weights, other), 1e-4):
                return fb.hint(
                    f"your output is that of {other} heads, but this case has num_heads = {num_heads}: split with the "
                    "argument num_heads, not a number written in."
                )
        return fb.hint("the outputs differ from torch.nn.MultiheadAttention loaded with the same weights.")
    return fb.ok("matches torch.nn.MultiheadAttention loaded with your weights: heads split, attend, merge, project.")
