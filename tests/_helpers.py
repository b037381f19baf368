"""Builders that several test modules share: random queries, keys and values, and a mask built by a plain loop."""

import torch


def random_qkv(gen, dtype, *, b=2, q=3, k=5, dq=4, dk=4, dv=6):
    """Queries (B, Q, Dq), keys (B, K, Dk) and values (B, K, V) drawn from the seeded generator ``gen``."""
    return (
        torch.randn(b, q, dq, generator=gen, dtype=dtype),
        torch.randn(b, k, dk, generator=gen, dtype=dtype),
        torch.randn(b, k, dv, generator=gen, dtype=dtype),
    )


def bool_mask_by_loop(valid_lens, num_q, num_k):
    """(B, Q, K) boolean mask (True = may attend) from (B,) or (B, Q) lengths, by a plain loop."""
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None].expand(-1, num_q)
    return torch.tensor([[[k < int(n) for k in range(num_k)] for n in per_q] for per_q in lens], dtype=torch.bool)
