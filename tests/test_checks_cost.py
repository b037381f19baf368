"""attn_course.checks.cost, the checks on what attention costs: the memory of the scores and a score's parameters
(notebook 03), the tiles of causal FlashAttention and the bytes it moves (notebook 10). "Correct" for a right answer, a
hint for each mistake."""

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import AdditiveAttention, checks
from attn_course.checks import (
    check_attention_memory,
    check_parameter_growth,
)

# ----------------------------------------------------------------------------------------------
# check_attention_memory: B = 8, Q = K = 1024, U = 128, float32 -> 32 MiB of scores, 4096 MiB hidden
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [(32, 4096), (32.0, 4096.0), [32, 4096], torch.tensor([32.0, 4096.0])])
def test_check_attention_memory_right_answer(answer):
    assert_correct(check_attention_memory(answer), "4096 MiB")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(32, ["two numbers"], id="one-number"),
        pytest.param((8, 1024), ["4 bytes"], id="numbers-not-bytes"),
        pytest.param((33.554432, 4294.967296), ["2**20"], id="decimal-mb"),
        pytest.param((4, 512), ["B = 8"], id="one-sequence"),
        pytest.param((32, 32), ["U = 128"], id="no-u"),
        pytest.param((32, 1024), ["(8, 1024, 1024, 128)"], id="scores-only"),
        pytest.param((1, 2), ["bytes = B * Q * K"], id="wrong"),
    ],
)
def test_check_attention_memory_hints(answer, words):
    assert_hint(check_attention_memory(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_parameter_growth: D = 512, U = 64: additive U (2D + 1) = 65,600, bilinear D^2 = 262,144
# ----------------------------------------------------------------------------------------------


def test_check_parameter_growth_right_answer():
    layer = AdditiveAttention(key_size=512, query_size=512, num_hiddens=64)
    counted = sum(p.numel() for p in layer.parameters())
    assert_correct(check_parameter_growth((counted, 512 * 512)))
    assert_correct(check_parameter_growth([65600.0, 262144]))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param("65600", ["two numbers"], id="str"),
        pytest.param((65536, 262144), ["w_v"], id="no-w-v"),
        pytest.param((512 * 1025, 262144), ["U stays at 64"], id="u-equals-d"),
        pytest.param((65600 + 65, 262144), ["no biases"], id="biases"),
        pytest.param((100, 262144), ["W_q (U x D)"], id="wrong-additive"),
        pytest.param((65600, 1024), ["D x D"], id="wrong-bilinear"),
    ],
)
def test_check_parameter_growth_hints(answer, words):
    assert_hint(check_parameter_growth(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_causal_tiles and check_tiled_bytes (notebook 10)
# ----------------------------------------------------------------------------------------------


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
        (28, ["7 blocks per side from floor(1000 / 128)", "ceil(1000 / 128) = 8"]),  # floor's count is the same 28
        (28.0, ["below the diagonal only"]),
        (35, ["ceil(N / b)"]),
    ],
)
def test_check_causal_tiles_hints(answer, words):
    assert_hint(checks.check_causal_tiles(answer), *words)


def test_check_tiled_bytes_right_answer():
    from attn_course import io_cost

    assert_correct(checks.check_tiled_bytes(io_cost(4096, 64, 128)["tiled_bytes"]), "69,206,016 bytes", "66 MiB")
    assert "MB" not in repr(checks.check_tiled_bytes(69_206_016))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (69_206_016 // 4, ["number of elements", "4 bytes"]),
        (4 * 2 * 32 * 4096 * 64, ["reading Q once"]),
        (4 * 4 * 4096 * 64, ["once per query block"]),
        (66.0, ["in MiB", "in bytes"]),
        (69.2, ["in MiB", "in bytes"]),
        (69_200_000, ["close", "exact number of bytes"]),
        (1.0, ["2 N d", "ceil(N / b)"]),
    ],
)
def test_check_tiled_bytes_hints(answer, words):
    assert_hint(checks.check_tiled_bytes(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


ATTACKS = {
    "check_attention_memory": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "32, 4096"),
        attack("one number", "two numbers", 32),
        attack("three numbers", "a tuple of 3", (32, 4096, 4128)),
        attack("bytes, not MiB", "in bytes", (32 * 2**20, 4096 * 2**20)),
        attack("numbers, not bytes", "4 bytes", (8, 1024)),
        attack("MB of 10**6 bytes", "2**20", (33.554432, 4294.967296)),
        attack("one sequence", "B = 8", (4, 512)),
        attack("the hidden tensor without U", "U = 128", (32, 32)),
        attack("the pair swapped", "swapped", (4096, 32)),
        attack("float64, 8 bytes", "not 8", (64, 8192)),
        attack("GiB, not MiB", "GiB", (32 / 1024, 4)),
    ],
    "check_parameter_growth": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "65600, 262144"),
        attack("one number", "two numbers", 65600),
        attack("three numbers", "a tuple of 3", (65600, 262144, 64)),
        attack("w_v left out", "w_v", (65536, 262144)),
        attack("U = D", "U stays at 64", (512 * 1025, 262144)),
        attack("with biases", "no biases", (65600 + 65, 262144)),
        attack("the pair swapped", "swapped", (262144, 65600)),
        attack("the first row of the table, D = 64", "D = 64", (8256, 4096)),
        attack("bilinear as D", "D x D", (65600, 512)),
    ],
    "check_causal_tiles": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "36"),
        attack("every tile", "every tile", 64),
        attack("below the diagonal only", "below the diagonal only", 28),
        attack("1000 / 128 not rounded up", "the last block is shorter", 1000 / 128 * (1000 / 128 + 1) / 2),
        attack("pairs of positions, not tiles", "pairs of positions", 1000 * 1001 // 2),
        attack("the blocks per side", "blocks per side, not tiles", 8),
        attack("half of the tiles", "half", 32),
        attack("blocks of 64", "16 blocks per side", 16 * 17 // 2),
        attack("a list", "list", [36]),
    ],
    "check_tiled_bytes": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "69206016"),
        attack("elements, not bytes", "number of elements", 69_206_016 // 4),
        attack("Q and the output left out", "reading Q once", 4 * 2 * 32 * 4096 * 64),
        attack("K and V read once", "not once in all", 4 * 4 * 4096 * 64),
        attack("in MiB", "in MiB", 66.0),
        attack("rounded", "exact number of bytes", 69_200_000),
        attack("float16's 2 bytes", "2 bytes per element", 69_206_016 // 2),
        attack("the materialised pass", "materialised", 4 * (4 * 4096 * 64 + 4 * 4096 * 4096)),
        attack("blocks of 64, as in a printed example", "b = 128", 4 * (2 * 4096 * 64 + 2 * 64 * 4096 * 64)),
        attack("a list", "list", [69_206_016]),
    ],
}
