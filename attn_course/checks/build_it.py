"""What the build-it checks of one step share (the online softmax, a FlashAttention tile, linear attention's recurrent
step, the delta rule): their hidden cases are float64, the step's tensors are unpacked with one set of hints, a
learner's float32 result is compared up to float32 rounding, and every hint names the hidden case it failed on.
"""

from __future__ import annotations

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["gaussian", "float32_close", "with_case", "is_tensors", "step_results", "shape_hint", "mistake_hint"]


def gaussian(*shape, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    """A float64 tensor of ``shape`` drawn from ``gen``: standard normal numbers times ``scale``."""
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale


def float32_close(answer: torch.Tensor, want: torch.Tensor, equal_nan: bool = False) -> bool:
    """Equal up to float32 rounding; -inf equals -inf; NaN equals nothing unless ``equal_nan``."""
    return bool(torch.allclose(answer.detach().double(), want, rtol=1e-5, atol=1e-6, equal_nan=equal_nan))


def with_case(problem: Feedback, what: str) -> Feedback:
    """``problem``'s hint with the hidden case it came from: "... (hidden case: <what>)."."""
    return fb.hint(f"{problem.message.rstrip('.')} (hidden case: {what}).")


def is_tensors(result, count: int) -> bool:
    """Whether ``result`` is ``count`` tensors, in a tuple (or a list: the same answer in another container)."""
    return (
        isinstance(result, (tuple, list)) and len(result) == count and all(isinstance(t, torch.Tensor) for t in result)
    )


def step_results(result, count: int, what: str, placeholders: str, expected: str, none_in=(tuple,)):
    """The ``count`` tensors that a learner's step returned, detached; or a hint: "replace the None placeholders:
    <placeholders>." when a None is left in a tuple (or another of ``none_in``), "<expected>; got <what came>." when
    ``result`` is not ``count`` tensors, or float16 and bfloat16 named (``what`` names the results)."""
    if isinstance(result, none_in) and any(t is None for t in result):
        return fb.hint(f"replace the None placeholders: {placeholders}.")
    if not is_tensors(result, count):
        return fb.hint(f"{expected}; got {fb.described(result)}.")
    tensors = tuple(t.detach() for t in result)
    low = fb.half_precision(*tensors, what=what)
    return tensors if low is None else low


def shape_hint(what: str, advice: str, *results: tuple[str, torch.Tensor, torch.Tensor]) -> Feedback | None:
    """A hint for the first of ``results``, ``(name, got, want)``, whose ``got`` has another shape than ``want``: it
    names the result, the hidden case ``what`` and gives the ``advice``; None when every shape is right."""
    for name, got, want in results:
        if tuple(got.shape) != tuple(want.shape):
            return fb.hint(
                f"{name} must have shape {tuple(want.shape)}, got {tuple(got.shape)} (hidden case: {what}); {advice}"
            )
    return None


def tensor_answer(result: torch.Tensor, want: torch.Tensor, earlier, what: str, name: str) -> torch.Tensor | Feedback:
    """A returned tensor checked for its shape (an earlier case's size, a size taken from elsewhere), low precision and
    a floating dtype: the detached tensor, or the hint that names what is off. ``name`` says what it is ("U")."""
    shape = fb.first_hint(
        fb.earlier_shape(result, want.shape, earlier),
        shape_hint(what, "take every size from the inputs.", (name, result, want)),
        fb.low_precision(result, name),
    )
    if shape is not None or result.is_floating_point():
        return result.detach() if shape is None else shape
    dtype = str(result.dtype).removeprefix("torch.")
    return fb.hint(f"{name} holds {dtype} numbers: return floating numbers (float32 or float64).")


def mistake_hint(got: torch.Tensor, want: torch.Tensor, mistakes, *otherwise: Feedback | None) -> Feedback:
    """The hint for a result ``got`` that is not ``want``: the hint of the first typical mistake ``(its result, hint)``
    that ``got`` equals; else "your numbers look rounded" if they are; else the first of ``otherwise`` that is not
    None (so the last should be a hint)."""
    for wrong, hint in mistakes:
        if wrong.shape == got.shape and float32_close(got, wrong):
            return fb.hint(hint)
    return fb.first_hint(fb.rounded(got, want), *otherwise)
