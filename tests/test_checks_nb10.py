"""attn_course.checks.nb10, the checks of notebook 10 (efficient attention):
"Correct" for a right answer, a hint for each mistake."""

import pytest
import torch
from _check_helpers import assert_correct, assert_hint

from attn_course import (
    checks,
)

# ----------------------------------------------------------------------------------------------
# notebook 10: check_online_step (build it), check_causal_tiles, check_tiled_bytes
# ----------------------------------------------------------------------------------------------


def _online_step(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max[:, None]).sum(-1)


def _online_step_in_place(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    running_sum.mul_(torch.exp(running_max - new_max)).add_(torch.exp(block - new_max[:, None]).sum(-1))
    return new_max, running_sum


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
        pytest.param(_bad_step("one-tensor"), ["return two tensors"], id="one"),
        pytest.param(_bad_step("placeholders"), ["replace the None placeholders"], id="none-pair"),
        pytest.param(_bad_step("keepdim"), ["shape (5,)", "dim=-1"], id="keepdim"),
        pytest.param(_bad_step("raise"), ["raised RuntimeError", "boom"], id="raise"),
        pytest.param(_online_step_in_place, ["in place"], id="inplace"),
    ],
)
def test_check_online_step_hints(answer, words):
    assert_hint(checks.check_online_step(answer), *words)


@pytest.mark.parametrize("answer", [36, 36.0, torch.tensor(36)])
def test_check_causal_tiles_right_answer(answer):
    assert_correct(checks.check_causal_tiles(answer), "28 skipped")


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("many", ["one number"]),
        (64, ["every tile", "skipped"]),
        (28, ["below the diagonal only", "diagonal tiles"]),
        (28.0, ["below the diagonal only"]),
        (35, ["ceil(N / b)"]),
    ],
)
def test_check_causal_tiles_hints(answer, words):
    assert_hint(checks.check_causal_tiles(answer), *words)


def test_check_tiled_bytes_right_answer():
    from attn_course import io_cost

    assert_correct(checks.check_tiled_bytes(io_cost(4096, 64, 128)["tiled_bytes"]), "69,206,016 bytes")


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (69_206_016 // 4, ["number of elements", "4 bytes"]),
        (4 * 2 * 32 * 4096 * 64, ["reading Q once"]),
        (4 * 4 * 4096 * 64, ["once per query block"]),
        (1.0, ["2 N d", "ceil(N / b)"]),
    ],
)
def test_check_tiled_bytes_hints(answer, words):
    assert_hint(checks.check_tiled_bytes(answer), *words)
