"""The verdict type of the checks, and the helpers that every topic's check module shares to give hints.

A check module imports it as ``from . import feedback as fb`` and writes ``fb.hint(...)``, ``@fb.tensor_answer(...)``:
the prefix says where a helper lives, and no module repeats a long import list.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._validate import LOW_PRECISION

__all__ = [
    "Feedback",
    "ok",
    "hint",
    "tensor_problem",
    "shape_problem",
    "earlier_shape",
    "low_precision",
    "half_precision",
    "raised_on",
    "close",
    "as_number",
    "described",
    "own_random_state",
    "function_problem",
    "answer_check",
    "tensor_answer",
    "function_answer",
    "number_answer",
    "call_learner",
    "first_hint",
    "call_on_copies",
    "rounded",
    "not_finite",
]


@dataclass(frozen=True)
class Feedback:
    """The verdict of a check: ``passed`` and a one-line ``message``; shows as "Correct: ..." or "Not yet: ..."."""

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return ("Correct: " if self.passed else "Not yet: ") + self.message


def ok(message: str) -> Feedback:
    """A passed verdict: "Correct: <message>"."""
    return Feedback(True, message)


def hint(message: str) -> Feedback:
    """A verdict that is not yet passed: "Not yet: <message>"."""
    return Feedback(False, message)


def tensor_problem(answer, shape: tuple[int, ...], what: str) -> Feedback | None:
    """A hint when the answer is missing, not a tensor, or of the wrong shape; else None."""
    if answer is None:
        return hint(f"replace None with {what}.")
    if not isinstance(answer, torch.Tensor):
        return hint(f"expected a torch.Tensor ({what}), got {type(answer).__name__}.")
    if tuple(answer.shape) != shape:
        got = tuple(answer.shape)
        turned = len(shape) >= 2 and shape[-2] != shape[-1] and got == (*shape[:-2], shape[-1], shape[-2])
        return hint(
            f"expected shape {tuple(shape)}, got {got}"
            + (": transposed, the last two axes are swapped (rows and columns)." if turned else ".")
        )
    return low_precision(answer)


def shape_problem(answer, shape: tuple[int, ...], what: str, named: dict[tuple[int, ...], str]) -> Feedback | None:
    """:func:`tensor_problem`, but a tensor of one of the ``named`` wrong shapes gets "expected shape ..., got ...:
    <what that shape is>" (a sum over the wrong axis, an entry too many)."""
    if isinstance(answer, torch.Tensor) and tuple(answer.shape) in named:
        return hint(f"expected shape {tuple(shape)}, got {tuple(answer.shape)}: {named[tuple(answer.shape)]}")
    return tensor_problem(answer, shape, what)


def earlier_shape(answer, shape: tuple[int, ...], earlier: list[tuple[int, ...]]) -> Feedback | None:
    """A hint when a build-it answer has the shape of an earlier hidden case instead of ``shape`` (sizes written in,
    or one case's result returned whatever the input); else None."""
    got = tuple(answer.shape) if isinstance(answer, torch.Tensor) else None
    if got is None or got == tuple(shape) or got not in earlier:
        return None
    return hint(
        f"expected shape {tuple(shape)} for these inputs, got {got}, the shape of an earlier hidden case: the result "
        "must follow the sizes of its inputs (read them from .shape), not the same sizes every call."
    )


def low_precision(answer: torch.Tensor, what: str = "your tensor") -> Feedback | None:
    """A hint when ``answer`` is float16 or bfloat16 (about 3 significant digits, too few to check); else None."""
    if answer.dtype in LOW_PRECISION:
        return hint(
            f"{what} is {str(answer.dtype).removeprefix('torch.')}, which keeps only about 3 significant digits: "
            "compute in float32 or float64 (leave out .half() and dtype=torch.float16)."
        )
    return None


def half_precision(*tensors, what: str = "your function's result") -> Feedback | None:
    """:func:`low_precision` of the first of ``tensors`` that is float16 or bfloat16; None if none is."""
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor) and (problem := low_precision(tensor, what)) is not None:
            return problem
    return None


def raised_on(problem: Feedback, sizes, worked_before: bool) -> Feedback:
    """``problem`` (from ``call_on_copies``) with a sentence added when the learner's code raised and a size looks
    written in: the error quotes a size that this case has not (nor a product of two of them), or the same code ran on
    an earlier hidden case of other sizes. Other problems come back unchanged."""
    if not problem.message.startswith("your function raised"):
        return problem
    sizes = {int(n) for n in sizes}
    allowed = sizes | {a * b for a in sizes for b in sizes} | {0, 1}
    text = re.sub(r"dim(ension)?\s+-?\d+|\[-?\d+, -?\d+\]\s*,\s*but got -?\d+", " ", problem.message)
    foreign = [n for n in map(int, re.findall(r"(?<![\w.])\d+(?![\w.])", text)) if n not in allowed]
    if foreign or worked_before:
        why = (
            f"the error names a size ({foreign[0]}) that this case does not have"
            if foreign
            else "the same code ran on the earlier hidden cases, of other sizes"
        )
        return hint(
            f"{problem.message.rstrip('.')}: {why}. A size written in, or axes that line up only at those sizes (a "
            "size of 1 broadcasts)? Take every size from the inputs (their .shape) and line the axes up."
        )
    return problem


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-4) -> bool:
    """Whether ``a`` equals ``b`` to ``tol`` (absolute and relative), compared in float64."""
    return bool(torch.allclose(a.detach().double(), b.double(), atol=tol, rtol=tol))


def as_number(answer, what: str) -> float | Feedback:
    """The answer as a float, or a hint when it is missing or not one number (a string or a bool is not one, even
    where Python's ``float`` would take it)."""
    if answer is None:
        return hint(f"replace None with {what}.")
    if isinstance(answer, (str, bytes, bool)):
        kind = type(answer).__name__
        return hint(f"expected one number ({what}), got the {kind} {answer!r}: write the number itself.")
    try:
        return float(answer.detach() if isinstance(answer, torch.Tensor) else answer)
    except (TypeError, ValueError, RuntimeError):
        return hint(f"expected one number ({what}), got {type(answer).__name__}.")


def described(value) -> str:
    """What came, in a few words, for a hint: "None", "a list of 2 (Tensor, Tensor)", "a tensor of shape (3,)"."""
    if value is None:
        return "None"
    if isinstance(value, (tuple, list)):
        kinds = ", ".join(type(item).__name__ for item in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)}" + (f" ({kinds})" if value else "")
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    shape = getattr(value, "shape", None)
    return f"a {type(value).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")


def own_random_state(check: Callable) -> Callable:
    """Decorate a check that builds ``torch.nn`` layers for its reference (their initial weights draw from torch's
    global generator): the global generator is left as the check found it, so a learner's later random numbers do not
    depend on whether the check cell ran."""

    @functools.wraps(check)
    def checked(*args, **kwargs):
        with torch.random.fork_rng(devices=[]):
            return check(*args, **kwargs)

    return checked


def function_problem(fn, missing: str, expected: str) -> Feedback | None:
    """A hint when the answer is not yet a function: "replace None with <missing>." or "expected <expected>, got
    <type>."; else None."""
    if fn is None:
        return hint(f"replace None with {missing}.")
    if not callable(fn):
        return hint(f"expected {expected}, got {type(fn).__name__}.")
    return None


def answer_check(problem: Callable[[object], Feedback | None]) -> Callable:
    """Decorate a check: when ``problem(answer)`` gives a hint (a missing answer, a wrong type or shape), the check
    returns it without running; otherwise the check runs on the answer."""

    def decorate(check: Callable[[object], Feedback]) -> Callable[[object], Feedback]:
        @functools.wraps(check)
        def checked(answer) -> Feedback:
            if isinstance(answer, torch.Tensor):
                answer = answer.detach()  # an answer that requires grad is checked for its values alone
            found = problem(answer)
            return found if found is not None else check(answer)

        return checked

    return decorate


def tensor_answer(shape: tuple[int, ...], what: str) -> Callable:
    """The check runs only on a tensor of ``shape``; otherwise the answer gets ``tensor_problem``'s hint."""
    return answer_check(lambda answer: tensor_problem(answer, shape, what))


def function_answer(missing: str, expected: str) -> Callable:
    """The check runs only on a function; None or anything else gets ``function_problem``'s hint."""
    return answer_check(lambda fn: function_problem(fn, missing, expected))


def number_answer(what: str) -> Callable:
    """The check runs on the answer turned into a float; None or anything else gets ``as_number``'s hint."""

    def decorate(check: Callable[[float], Feedback]) -> Callable[[object], Feedback]:
        @functools.wraps(check)
        def checked(answer) -> Feedback:
            value = as_number(answer, what)
            return value if isinstance(value, Feedback) else check(value)

        return checked

    return decorate


def call_learner(fn, *args):
    """``fn(*args)`` and None, or None and a hint naming the exception that the learner's code raised."""
    try:
        return fn(*args), None
    except Exception as error:  # the learner's code: report what went wrong
        return None, hint(f"your function raised {type(error).__name__}: {str(error).rstrip('.')}.")


def first_hint(*hints: Feedback | None) -> Feedback | None:
    """The first hint that is not None (a Feedback that is not passed is falsy, so ``or`` cannot pick it)."""
    return next((found for found in hints if found is not None), None)


def call_on_copies(fn, args: dict):
    """The learner's ``fn`` called on copies of the named ``args`` (compute the reference from ``args`` themselves).

    Gives ``(result, None)``, or ``(None, hint)`` when the learner's code raised, or changed one of its inputs in
    place (the hint names it). The originals are never handed to the learner, so a reference computed from them before
    or after the call is the same.
    """
    copies = {
        name: value.clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value) for name, value in args.items()
    }
    result, problem = call_learner(fn, *copies.values())
    if problem is not None:
        return None, problem
    for name, value in args.items():
        if isinstance(value, torch.Tensor) and not torch.equal(copies[name], value):
            return None, hint(
                f"your function changed its input {name} in place; leave inputs as they are and build new tensors."
            )
    return result, None


def rounded(answer: torch.Tensor | float, right: torch.Tensor | float) -> Feedback | None:
    """A hint when the answer is the right one rounded (to 1, 2 or 3 decimals): "close: give more decimals"; else None.

    Checks call it after their exact comparison fails and before their conceptual hints, so that a rounded but
    correct answer is not told it has the idea wrong.
    """
    got = torch.as_tensor(answer, dtype=torch.float64).detach()
    want = torch.as_tensor(right, dtype=torch.float64).detach()
    if got.shape != want.shape or not bool(torch.isfinite(got).all()):
        return None
    for decimals in (3, 2, 1):
        step = 0.5 * 10.0**-decimals + 1e-12
        if bool(((got - want).abs() <= step).all()) and bool(
            ((got - got.round(decimals=decimals)).abs() <= 1e-6 * got.abs().clamp(min=1)).all()
        ):
            return hint(
                f"close: your numbers look rounded to {decimals} decimal{'s' if decimals > 1 else ''}; "
                "give the computed values in full (do not round them)."
            )
    return None


def not_finite(answer: torch.Tensor, what: str = "your answer") -> Feedback | None:
    """A hint when ``answer`` holds NaN or infinity (named first: any other hint about it would mislead); else None."""
    if isinstance(answer, torch.Tensor) and answer.is_floating_point() and not bool(torch.isfinite(answer).all()):
        bad = "NaN" if bool(torch.isnan(answer).any()) else "infinity"
        return hint(
            f"{what} holds {bad}. A NaN usually comes from exp of inf - inf or 0 / 0: for example a row whose every "
            "score is -inf; an infinity from exp of a large score that was not shifted by the row's maximum."
        )
    return None
