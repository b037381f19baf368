"""Attention pooling with kernels: Nadaraya-Watson regression (notebook 01; its figures: ``plots.pooling``).

Nadaraya-Watson predicts at a query ``q`` a weighted average of the values ``v_i``::

    f(q) = sum_i  K(|q - k_i| / h) / sum_j K(|q - k_j| / h)  *  v_i

The fraction is the attention weight of key ``i``; ``K`` is a kernel and ``h > 0`` its
bandwidth. Constant factors of ``K`` cancel in the fraction.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._validate import (
    LOW_PRECISION,
    require_float,
    require_kernel_weights,
)
from ._validate.args import require_nw_inputs

__all__ = [
    "gaussian",
    "boxcar",
    "epanechnikov",
    "constant",
    "KERNELS",
    "nadaraya_watson",
]


def gaussian(u: torch.Tensor) -> torch.Tensor:
    """Standard normal density ``exp(-u^2 / 2) / sqrt(2 pi)``, elementwise."""
    require_float(u, "u")
    return torch.exp(-0.5 * u**2) / math.sqrt(2 * math.pi)


def boxcar(u: torch.Tensor) -> torch.Tensor:
    """Uniform density on ``[-1, 1]``: ``1/2`` where ``|u| <= 1``, else ``0``."""
    require_float(u, "u")
    return torch.where(u.abs() <= 1, 0.5, 0.0).to(u.dtype)


def epanechnikov(u: torch.Tensor) -> torch.Tensor:
    """Epanechnikov density ``3/4 (1 - u^2)`` where ``|u| <= 1``, else ``0``."""
    require_float(u, "u")
    return 0.75 * torch.clamp(1 - u**2, min=0)


def constant(u: torch.Tensor) -> torch.Tensor:
    """Weight 1 for every key, however far: Nadaraya-Watson becomes average pooling."""
    require_float(u, "u")
    return torch.ones_like(u)


KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gaussian": gaussian,
    "boxcar": boxcar,
    "epanechnikov": epanechnikov,
    "constant": constant,
}


def _log_kernel(name: str, u2: torch.Tensor) -> torch.Tensor:
    """``log K(u)`` up to a constant, from ``u2 = u^2``; ``-inf`` outside the support.

    Working with logs lets the softmax normalise the weights: a far query whose Gaussian
    weights would all underflow to 0 in ``exp`` still gets weights that sum to 1.
    """
    if name == "gaussian":
        return -0.5 * u2
    # Boxcar and constant logits are built from u2 (times 0) so that they stay attached to the
    # bandwidth: learning h then gets a gradient of exactly 0 instead of an autograd error.
    if name == "constant":
        return 0.0 * u2
    if name == "boxcar":
        return torch.where(u2 <= 1, 0.0 * u2, -math.inf)
    # Epanechnikov: log(1 - u^2); the inner where keeps log1p away from arguments <= -1
    # so that gradients stay finite outside the support.
    safe = torch.where(u2 < 1, u2, torch.zeros_like(u2))
    return torch.where(u2 < 1, torch.log1p(-safe), -math.inf)


def _as_rows(x: torch.Tensor) -> torch.Tensor:
    return x.unsqueeze(-1) if x.ndim == 1 else x  # (N,) -> (N, 1)


def _function_logits(kernel: Callable[[torch.Tensor], torch.Tensor], dist2: torch.Tensor, bandwidth) -> torch.Tensor:
    """``log K(|q - k| / h)`` (Q, K) for a kernel given as a function, from the squared distances ``dist2`` (Q, K)."""
    positive = dist2 > 0  # sqrt has an infinite slope at 0: keep it away for finite gradients
    dist = torch.where(positive, torch.sqrt(torch.where(positive, dist2, 1.0)), 0.0)  # (Q, K)
    k_values = kernel(dist / bandwidth)  # (Q, K)
    require_kernel_weights(k_values, dist2.shape)
    logits = torch.log(k_values)  # log 0 = -inf: outside the support
    infinite = torch.isposinf(k_values)  # e.g. |u|^-p at u = 0: in the limit those keys take all the weight
    if infinite.any():
        hit = infinite.any(-1, keepdim=True)  # (Q, 1)
        logits = torch.where(hit, torch.where(infinite, 0.0, -math.inf).to(logits.dtype), logits)
    return logits


def _nearest_when_empty(logits: torch.Tensor, dist2: torch.Tensor, mask) -> torch.Tensor:
    """Logits (Q, K) in which a row with no key inside the kernel's support gives its nearest allowed key(s) all of
    its weight: the limit of growing h until a key is reached."""
    empty = ~torch.isfinite(logits).any(-1, keepdim=True)  # (Q, 1): no key inside the support
    if not empty.any():
        return logits
    d2 = dist2.detach() if mask is None else dist2.detach().masked_fill(~mask, math.inf)  # (Q, K)
    nearest = (d2 == d2.min(-1, keepdim=True).values) & torch.isfinite(d2)  # (Q, K)
    return torch.where(empty, torch.where(nearest, 0.0, -math.inf).to(logits.dtype), logits)


def nadaraya_watson(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    kernel: str | Callable[[torch.Tensor], torch.Tensor] = "gaussian",
    bandwidth: float | torch.Tensor = 1.0,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nadaraya-Watson attention pooling.

    Args:
        queries: (Q,) scalar queries, or (Q, D) one vector per row. Floating point.
        keys: (K,) or (K, D), the same kind as ``queries``.
        values: (K,) or (K, V), one value per key.
        kernel: ``"gaussian"``, ``"boxcar"``, ``"epanechnikov"``, ``"constant"``, or a function
            ``K(u)`` of the scaled distance ``u = |q - k| / h`` returning weights >= 0; where it returns
            ``+inf`` (``|u|^-2`` at ``u = 0``, say), those keys share all of the query's weight.
        bandwidth: ``h > 0``: a number or a 0-d tensor (which may require grad).
        mask: optional bool (Q, K); ``True`` = the query may use that key. Leave-one-out
            training, for example, masks the diagonal.

    Returns:
        predictions: (Q,) if ``values`` is (K,), else (Q, V).
        weights: (Q, K), each row >= 0 and summing to 1 (all zeros for a row the mask empties).

    Weights are a softmax of ``log K``, so they never underflow to 0/0. If a compact kernel
    (boxcar, Epanechnikov) has no key within one bandwidth of a query, that query's weight
    goes to its nearest allowed key(s), the limit of growing ``h`` until a key is reached.
    """
    require_nw_inputs(queries, keys, values, kernel, bandwidth, mask, KERNELS)
    if isinstance(bandwidth, torch.Tensor):
        bandwidth = bandwidth.to(queries.dtype).reshape(())  # keeps the caller's dtype and any gradient
    if queries.dtype in LOW_PRECISION:  # a squared distance overflows float16 (300^2 > 65504)
        predictions, weights = nadaraya_watson(queries.float(), keys.float(), values.float(), kernel, bandwidth, mask)
        return predictions.to(queries.dtype), weights.to(queries.dtype)  # computed in float32, given back as asked
    diff = _as_rows(queries).unsqueeze(1) - _as_rows(keys).unsqueeze(0)  # (Q, 1, D) - (1, K, D) -> (Q, K, D)
    dist2 = (diff**2).sum(-1)  # (Q, K) squared distances
    if isinstance(kernel, str):
        logits = _log_kernel(kernel, dist2 / bandwidth**2)  # (Q, K)
    else:
        logits = _function_logits(kernel, dist2, bandwidth)  # (Q, K)
    if mask is not None:
        logits = logits.masked_fill(~mask, -math.inf)  # (Q, K)
    logits = _nearest_when_empty(logits, dist2, mask)  # (Q, K)
    allowed = torch.isfinite(logits)
    # Fill with the dtype's most negative number, not -inf: a row with nothing allowed
    # then gives zeros (after the final fill) and finite gradients instead of NaN.
    weights = torch.softmax(logits.masked_fill(~allowed, torch.finfo(logits.dtype).min), dim=-1)
    weights = weights.masked_fill(~allowed, 0.0)  # (Q, K)
    predictions = weights @ values  # (Q, K) @ (K,) -> (Q,)   or   (Q, K) @ (K, V) -> (Q, V)
    return predictions, weights
