"""attn_course.checks.efficient, the checks of notebook 10 on efficient attention (an online-softmax update, a
FlashAttention tile): "Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import checks

# ----------------------------------------------------------------------------------------------
# check_online_step and check_tile_update (build it)
# ----------------------------------------------------------------------------------------------


def _online_step(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max[:, None]).sum(-1)


def _online_step_in_place(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    running_sum.mul_(torch.exp(running_max - new_max)).add_(torch.exp(block - new_max[:, None]).sum(-1))
    return new_max, running_sum


def _online_step_block_in_place(running_max, running_sum, block):
    """Right numbers, but the block is turned into its exponentials in place (the old check did not see it)."""
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    return new_max, running_sum * torch.exp(running_max - new_max) + block.sub_(new_max[:, None]).exp_().sum(-1)


def _online_step_rounded(running_max, running_sum, block):
    new_max, new_sum = _online_step(running_max, running_sum, block)
    return new_max, new_sum.round(decimals=2)


def _online_step_six_rows(running_max, running_sum, block):
    """A size written in: right on blocks of 6 rows only."""
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max.view(6, 1)).sum(-1)


def _online_step_float32(running_max, running_sum, block):
    new_max, new_sum = _online_step(running_max.float(), running_sum.float(), block.float())
    return new_max.double(), new_sum.double()


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_online_step, id="reference-formula"),
        pytest.param(_online_step_float32, id="float32"),
    ],
)
def test_check_online_step_right_answer(fn):
    assert_correct(checks.check_online_step(fn), "scores of 1e4")


def _bad_step(kind):
    def step(running_max, running_sum, block):
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        if kind == "no-rescale":
            return new_max, running_sum + torch.exp(block - new_max[:, None]).sum(-1)
        if kind == "old-max":
            return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(
                block - running_max[:, None]
            ).sum(-1)
        if kind == "inverted":
            return new_max, running_sum * torch.exp(new_max - running_max) + torch.exp(block - new_max[:, None]).sum(-1)
        if kind == "no-max-subtracted":
            return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block).sum(-1)
        if kind == "block-max-only":
            return block.amax(-1), running_sum * torch.exp(running_max - new_max) + torch.exp(
                block - new_max[:, None]
            ).sum(-1)
        if kind == "placeholders":
            return None, None
        if kind == "one-tensor":
            return new_max
        if kind == "keepdim":
            return block.amax(-1, keepdim=True), running_sum[:, None]
        raise RuntimeError("boom")

    return step


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "step(running_max, running_sum, block)"], id="none"),
        pytest.param(3, ["expected a function", "int"], id="int"),
        pytest.param(_bad_step("no-rescale"), ["not rescaled", "exp(running_max - new_max)"], id="no-rescale"),
        pytest.param(_bad_step("old-max"), ["against the new maximum", "-inf"], id="old-max"),
        pytest.param(_bad_step("inverted"), ["inverted"], id="inverted"),
        pytest.param(_bad_step("no-max-subtracted"), ["subtract new_max before exp", "overflows"], id="overflow"),
        pytest.param(_bad_step("block-max-only"), ["new_max is off", "larger of running_max"], id="block-max"),
        pytest.param(_bad_step("one-tensor"), ["return two tensors", "got a tensor of shape"], id="one"),
        pytest.param(
            lambda m, s, b: (m, s, b), ["return two tensors", "got a tuple of 3 (Tensor, Tensor, Tensor)"], id="three"
        ),
        pytest.param(_bad_step("placeholders"), ["replace the None placeholders"], id="none-pair"),
        pytest.param(_bad_step("keepdim"), ["shape (5,)", "dim=-1"], id="keepdim"),
        pytest.param(_bad_step("raise"), ["raised RuntimeError", "boom"], id="raise"),
        pytest.param(_online_step_in_place, ["changed its input running_sum in place"], id="inplace"),
        pytest.param(_online_step_block_in_place, ["changed its input block in place"], id="block-inplace"),
        pytest.param(_online_step_rounded, ["close", "rounded to 2 decimals"], id="rounded"),
        pytest.param(_online_step_six_rows, ["raised RuntimeError", "hidden case: the first block"], id="six-rows"),
    ],
)
def test_check_online_step_hints(answer, words):
    assert_hint(checks.check_online_step(answer), *words)


def test_check_online_step_takes_the_two_tensors_in_a_list_too():
    """A list [new_max, new_sum] holds the right answer: its fault is not that it "does not return two tensors"."""

    def step(running_max, running_sum, block):
        new_max = torch.maximum(running_max, block.amax(-1))
        rescale = torch.exp(running_max - new_max).nan_to_num(0.0)
        return [new_max, running_sum * rescale + torch.exp(block - new_max[:, None]).sum(-1)]

    assert_correct(checks.check_online_step(step))


def _tile_update(running_max, running_sum, acc, scores, values):
    """The notebook's solution: a stand-in maximum of 0 where a row has seen only -inf."""
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    safe = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)
    probs = torch.exp(scores - safe[:, None])
    rescale = torch.exp(running_max - safe)
    return new_max, running_sum * rescale + probs.sum(-1), acc * rescale[:, None] + probs @ values


def _tile_update_nan_to_num(running_max, running_sum, acc, scores, values):
    """Another right answer: compute as if nothing were masked, then replace the NaN of empty rows by 0."""
    new_max = torch.maximum(running_max, scores.amax(dim=-1))
    probs = torch.exp(scores - new_max[:, None]).nan_to_num(0.0)
    rescale = torch.exp(running_max - new_max).nan_to_num(0.0)
    return new_max, running_sum * rescale + probs.sum(-1), acc * rescale[:, None] + probs @ values


def _tile_update_float32(*inputs):
    return tuple(t.double() for t in _tile_update(*(t.float() for t in inputs)))


@pytest.mark.parametrize("fn", [_tile_update, _tile_update_nan_to_num, _tile_update_float32])
def test_check_tile_update_right_answer(fn):
    assert_correct(checks.check_tile_update(fn), "fully masked", "flash_attention")


def _bad_tile(kind):
    def update(running_max, running_sum, acc, scores, values):
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        safe = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)
        probs = torch.exp(scores - safe[:, None])
        rescale = torch.exp(running_max - safe)
        new_sum = running_sum * rescale + probs.sum(-1)
        new_acc = acc * rescale[:, None] + probs @ values
        if kind == "no-rescale":
            return new_max, running_sum + probs.sum(-1), acc + probs @ values
        if kind == "no-rescale-acc":
            return new_max, new_sum, acc + probs @ values
        if kind == "wrong-sign":
            return new_max, new_sum, acc * torch.exp(safe - running_max)[:, None] + probs @ values
        if kind == "forgot-l":
            return new_max, running_sum, new_acc
        if kind == "l-not-rescaled":
            return new_max, running_sum + probs.sum(-1), new_acc
        if kind == "normalised":
            return new_max, new_sum, new_acc / new_sum[:, None]
        if kind == "old-max":
            old = torch.where(running_max == -math.inf, torch.zeros_like(running_max), running_max)
            return new_max, new_sum, acc * rescale[:, None] + torch.exp(scores - old[:, None]) @ values
        if kind == "nan-on-masked":  # no stand-in: -inf - (-inf) = NaN on a row that has seen only -inf
            probs = torch.exp(scores - new_max[:, None])
            rescale = torch.exp(running_max - new_max)
            return new_max, running_sum * rescale + probs.sum(-1), acc * rescale[:, None] + probs @ values
        if kind == "nan-sum":  # the output right, the running sum NaN: the NaN is named, not missed
            return new_max, new_sum * math.nan, new_acc
        if kind == "safe-max-returned":
            return safe, new_sum, new_acc
        if kind == "acc-in-place":
            return new_max, new_sum, acc.mul_(rescale[:, None]).add_(probs @ values)
        if kind == "scores-in-place":
            probs = scores.sub_(safe[:, None]).exp_()
            return new_max, running_sum * rescale + probs.sum(-1), acc * rescale[:, None] + probs @ values
        if kind == "hard-coded-v":  # an output of 3 value columns, the size of the first case
            return new_max, new_sum, (acc * rescale[:, None] + probs @ values)[:, :3]
        if kind == "hard-coded-rows":
            return new_max, new_sum, new_acc.reshape(5, -1)
        if kind == "rounded":
            return new_max, new_sum, new_acc.round(decimals=3)
        if kind == "placeholders":
            return None, None, None
        if kind == "two":
            return new_max, new_sum
        raise ValueError("boom")

    return update


@pytest.mark.parametrize(
    "kind, words",
    [
        ("no-rescale", ["old output is not rescaled", "exp(running_max - new_max)"]),
        ("no-rescale-acc", ["old output is not rescaled"]),
        ("wrong-sign", ["inverted", "<= 1"]),
        ("forgot-l", ["new_sum is the old running_sum", "update l too"]),
        ("l-not-rescaled", ["new_sum is off", "while new_acc is right"]),
        ("normalised", ["un-normalised", "once, after the last block"]),
        ("old-max", ["against the new maximum"]),
        ("nan-on-masked", ["fully masked block gives NaN", "-inf - (-inf)", "torch.where"]),
        ("nan-sum", ["new_sum on", "holds NaN"]),
        ("safe-max-returned", ["must stay -inf", "only inside exp"]),
        ("acc-in-place", ["changed its input acc in place", "hidden case"]),
        ("scores-in-place", ["changed its input scores in place"]),
        ("hard-coded-v", ["new_acc must have shape (6, 7), got (6, 3)", "write none in"]),
        ("hard-coded-rows", ["raised RuntimeError", "6 rows"]),
        ("rounded", ["close", "rounded to 3 decimals"]),
        ("placeholders", ["replace the None placeholders"]),
        ("two", ["return three tensors"]),
        ("raise", ["raised ValueError", "boom", "the first block"]),
    ],
)
def test_check_tile_update_hints(kind, words):
    assert_hint(checks.check_tile_update(_bad_tile(kind)), *words)


@pytest.mark.parametrize("answer, words", [(None, ["replace None", "tile_update("]), (3, ["expected a function"])])
def test_check_tile_update_not_a_function(answer, words):
    assert_hint(checks.check_tile_update(answer), *words)


def test_check_tile_update_cases_hold_a_fully_masked_block_and_varied_sizes():
    from attn_course.checks.efficient import _tile_cases

    cases = _tile_cases()
    assert any(bool((inputs["scores"] == -math.inf).all(dim=-1).any()) for _, inputs in cases)
    assert any(bool((inputs["running_max"] == -math.inf).all()) for _, inputs in cases if "masked" in _)
    sizes = {tuple(inputs["scores"].shape) + (inputs["values"].shape[1],) for _, inputs in cases}
    assert len(sizes) == len(cases)  # R, b and V differ from case to case


def test_check_tile_update_names_an_unshifted_exp():
    """exp(scores) with no maximum subtracted equals exp(scores - old maximum) on the first block (-inf taken as 0):
    the hint names both, never the old maximum alone."""

    def unshifted(running_max, running_sum, acc, scores, values):
        new_max = torch.maximum(running_max, scores.amax(-1))
        safe = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)
        rescale = torch.exp(running_max - safe)
        fresh = torch.exp(scores - safe[:, None])
        return new_max, running_sum * rescale + fresh.sum(-1), acc * rescale[:, None] + torch.exp(scores) @ values

    assert_hint(checks.check_tile_update(unshifted), "exp(scores) unshifted", "overflows")


def test_check_tile_update_takes_the_three_tensors_in_a_list_too():
    assert_correct(checks.check_tile_update(lambda *inputs: list(_tile_update(*inputs))), "fully masked")


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


def _online_step_numpy(running_max, running_sum, block):
    return tuple(t.numpy() for t in _online_step(running_max, running_sum, block))


def _online_step_global_max(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.max())  # one maximum for all rows
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max[:, None]).sum(-1)


def _online_step_half(running_max, running_sum, block):
    return _online_step(running_max.half(), running_sum.half(), block.half())


def _tile_update_list(*inputs):
    return [t.numpy() for t in _tile_update(*inputs)]


ATTACKS = {
    "check_online_step": [
        attack("left as None", "replace None", None),
        attack("old sum not rescaled", "not rescaled", _bad_step("no-rescale")),
        attack("block exponentiated against the old maximum", "against the new maximum", _bad_step("old-max")),
        attack("rescaling inverted", "inverted", _bad_step("inverted")),
        attack("no maximum subtracted", "overflows", _bad_step("no-max-subtracted")),
        attack("new_max is the block's maximum alone", "ignores running_max", _bad_step("block-max-only")),
        attack("keepdim=True", ("must have shape (5,)", "got (5, 1)"), _bad_step("keepdim")),
        attack("running_sum updated in place", "changed its input running_sum in place", _online_step_in_place),
        attack("block exponentiated in place", "changed its input block in place", _online_step_block_in_place),
        attack("new_sum rounded", "rounded to 2 decimals", _online_step_rounded),
        attack("6 rows written in", "the error names a size (6)", _online_step_six_rows),
        attack("the placeholders left", "replace the None placeholders", _bad_step("placeholders")),
        attack("one tensor returned", ("return two tensors", "got a tensor of shape"), _bad_step("one-tensor")),
        attack("NumPy arrays returned", "ndarray", _online_step_numpy),
        attack("the maximum over every row (block.max())", "one maximum for all rows", _online_step_global_max),
        attack("computed in float16", "float16", _online_step_half),
    ],
    "check_tile_update": [
        attack("left as None", "replace None", None),
        attack("nothing rescaled", "old output is not rescaled", _bad_tile("no-rescale")),
        attack("rescaling inverted", "inverted", _bad_tile("wrong-sign")),
        attack("running sum not updated", "update l too", _bad_tile("forgot-l")),
        attack("output normalised at every step", "un-normalised", _bad_tile("normalised")),
        attack("P against the old maximum", "against the new maximum", _bad_tile("old-max")),
        attack("NaN on a fully masked block", "-inf - (-inf)", _bad_tile("nan-on-masked")),
        attack("the stand-in maximum returned", "must stay -inf", _bad_tile("safe-max-returned")),
        attack("acc updated in place", "changed its input acc in place", _bad_tile("acc-in-place")),
        attack("V = 3 written in", "write none in", _bad_tile("hard-coded-v")),
        attack("5 rows written in", "written in", _bad_tile("hard-coded-rows")),
        attack("output rounded", "rounded to 3 decimals", _bad_tile("rounded")),
        attack("two tensors returned", "got a tuple of 2", _bad_tile("two")),
        attack("a list of NumPy arrays", "ndarray", _tile_update_list),
    ],
}
