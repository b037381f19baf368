"""attn_course.checks.transformer, the checks of notebook 08 (a tiny Transformer):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import as_int_float_tensor_numpy, assert_correct, assert_hint, attack

from attn_course import (
    PositionWiseFFN,
    causal_mask,
)
from attn_course.checks import (
    check_causal_row,
    check_ffn_parameters,
    check_layer_norm,
)

# ----------------------------------------------------------------------------------------------
# check_layer_norm: x = [1, 2, 3, 6], mean 3, population variance 3.5
# ----------------------------------------------------------------------------------------------

LN_X = torch.tensor([1.0, 2.0, 3.0, 6.0])
LN_RIGHT = (LN_X - 3.0) / math.sqrt(3.5)  # [-1.069, -0.535, 0, 1.604]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(LN_RIGHT, id="exact"),
        pytest.param(LN_RIGHT.double(), id="float64"),
        pytest.param(torch.tensor([-1.069, -0.535, 0.0, 1.604]), id="rounded"),
        pytest.param(torch.nn.functional.layer_norm(LN_X, (4,)), id="functional"),
        pytest.param(torch.nn.LayerNorm(4, elementwise_affine=False)(LN_X), id="module"),
    ],
)
def test_check_layer_norm_right_answer(answer):
    assert_correct(check_layer_norm(answer), "variance 3.5")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "a tensor of 4 numbers"], id="none"),
        pytest.param(LN_RIGHT.tolist(), ["torch.Tensor", "list"], id="list"),
        pytest.param(LN_RIGHT[None], ["expected shape (4,)", "got (1, 4)"], id="2-D"),
        pytest.param(LN_RIGHT[:3], ["expected shape (4,)", "got (3,)"], id="short"),
        pytest.param((LN_X - 3.0) / LN_X.std(), ["population variance", "n = 4, not n - 1"], id="sample-std"),
        pytest.param(LN_X - 3.0, ["centred, yes", "divide by the standard deviation"], id="centred-only"),
        pytest.param((LN_X - 3.0) / 3.5, ["subtract the mean", "standard deviation"], id="divided-by-variance"),
        pytest.param(LN_X / LN_X.norm(), ["subtract the mean"], id="unit-norm"),
        pytest.param(LN_X, ["subtract the mean"], id="input"),
        pytest.param(LN_RIGHT.round(decimals=2), ["close", "rounded to 2 decimals"], id="rounded-2"),
        pytest.param(LN_RIGHT.round(decimals=1), ["close", "rounded to 1 decimal"], id="rounded-1"),
        pytest.param(torch.full((4,), float("nan")), ["your answer holds NaN"], id="nan"),
        pytest.param((LN_X - 3.0) / 0.0, ["holds NaN"], id="divided-by-zero"),
    ],
)
def test_check_layer_norm_hints(answer, words):
    assert_hint(check_layer_norm(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_ffn_parameters: PositionWiseFFN(32, 64) = Linear(32, 64) + Linear(64, 32), with biases
# ----------------------------------------------------------------------------------------------

FFN_PARAMS = 32 * 64 + 64 + 64 * 32 + 32  # 4192


@pytest.mark.parametrize("answer", as_int_float_tensor_numpy(FFN_PARAMS))
def test_check_ffn_parameters_right_answer(answer):
    assert_correct(check_ffn_parameters(answer), "4192")


def test_check_ffn_parameters_agrees_with_the_module():
    count = sum(p.numel() for p in PositionWiseFFN(num_hiddens=32, ffn_hiddens=64).parameters())
    assert count == FFN_PARAMS == 4192
    assert_correct(check_ffn_parameters(count))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "the number of parameters"], id="none"),
        pytest.param("4k", ["one number", "str"], id="str"),
        pytest.param(torch.tensor([4192, 1]), ["one number", "Tensor"], id="tensor-2"),
        pytest.param(32 * 64 + 64 * 32, ["both linear layers have biases too"], id="no-biases"),
        pytest.param(
            12 * FFN_PARAMS,
            ["same two layers serve every position", "does not depend on the length"],
            id="per-position-12",
        ),
        pytest.param(13 * FFN_PARAMS, ["does not depend on the length"], id="per-position-13"),
        pytest.param(32 * 64 + 64, ["two nn.Linear layers, 32 -> 64 and 64 -> 32"], id="one-layer"),
        pytest.param(0, ["two nn.Linear layers"], id="zero"),
        pytest.param(float("nan"), ["your count is nan"], id="nan"),
        pytest.param(float("inf"), ["your count is inf"], id="inf"),
    ],
)
def test_check_ffn_parameters_hints(answer, words):
    assert_hint(check_ffn_parameters(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_causal_row: row 3 of the causal mask for 6 positions, True = may attend
# ----------------------------------------------------------------------------------------------

CAUSAL_ROW = torch.tensor([True, True, True, True, False, False])


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(CAUSAL_ROW, id="literal"),
        pytest.param(causal_mask(6)[3], id="causal-mask"),
        pytest.param(torch.arange(6) <= 3, id="arange"),
        pytest.param(torch.ones(6, 6, dtype=torch.bool).tril()[3], id="tril"),
    ],
)
def test_check_causal_row_right_answer(answer):
    assert_correct(check_causal_row(answer), "never the future")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "a bool tensor of 6 entries"], id="none"),
        pytest.param(CAUSAL_ROW.tolist(), ["torch.Tensor", "list"], id="list"),
        pytest.param(causal_mask(6), ["expected shape (6,)", "got (6, 6)"], id="whole-mask"),
        pytest.param(CAUSAL_ROW.float(), ["masks are bool tensors (True = may attend)", "torch.float32"], id="float"),
        pytest.param(CAUSAL_ROW.long(), ["masks are bool tensors", "torch.int64"], id="int"),
        pytest.param(~CAUSAL_ROW, ["polarity", "True means may attend"], id="polarity"),
        pytest.param(causal_mask(6)[2], ["may attend to itself", "rows count from 0"], id="strictly-before"),
        pytest.param(
            torch.ones(6, dtype=torch.bool), ["the encoder's view", "must not see later target tokens"], id="all-true"
        ),
        pytest.param(causal_mask(6)[4], ["numbered from 0", "0 to 3, itself included"], id="row-4"),
        pytest.param(torch.zeros(6, dtype=torch.bool), ["numbered from 0"], id="all-false"),
    ],
)
def test_check_causal_row_hints(answer, words):
    assert_hint(check_causal_row(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------

ATTACKS = {
    "check_layer_norm": [
        attack("left as None", "replace None", None),
        attack("a list", "list", LN_RIGHT.tolist()),
        attack("a row of shape (1, 4)", "got (1, 4)", LN_RIGHT[None]),
        attack("the sample standard deviation (n - 1)", "n = 4, not n - 1", (LN_X - 3.0) / LN_X.std()),
        attack("centred only", "centred, yes", LN_X - 3.0),
        attack("divided by the variance", "square root", (LN_X - 3.0) / 3.5),
        attack("RMSNorm: no centring", "root mean square", LN_X / LN_X.pow(2).mean().sqrt()),
        attack("x itself", "x unchanged", LN_X.clone()),
        attack("the sign flipped", "sign", (3.0 - LN_X) / math.sqrt(3.5)),
        attack("rounded to 2 decimals", "rounded to 2 decimals", LN_RIGHT.round(decimals=2)),
        attack("an integer tensor", "integer", LN_RIGHT.round().long()),
        attack("a NumPy array", "ndarray", LN_RIGHT.numpy()),
        attack("a string", "str", "[-1.069, -0.535, 0, 1.604]"),
    ],
    "check_ffn_parameters": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "4192"),
        attack("no biases", "biases too", 32 * 64 + 64 * 32),
        attack("counted once per position (12 positions)", "does not depend on the length", 12 * FFN_PARAMS),
        attack("one of the two layers", "one of the two layers", 32 * 64 + 64),
        attack("one bias missing", "one bias", 32 * 64 + 64 * 32 + 32),
        attack("bytes of float32", "bytes", 4 * FFN_PARAMS),
        attack("an AddNorm's LayerNorm counted too", "LayerNorm", FFN_PARAMS + 2 * 32),
        attack("a list", "list", [FFN_PARAMS]),
        attack("NaN", "nan", float("nan")),
    ],
    "check_causal_row": [
        attack("left as None", "replace None", None),
        attack("a list", "list", CAUSAL_ROW.tolist()),
        attack("the whole mask", "got (6, 6)", causal_mask(6)),
        attack("a float tensor", "torch.float32", CAUSAL_ROW.float()),
        attack("polarity reversed", "polarity", ~CAUSAL_ROW),
        attack("position 3 may not see itself", "may attend to itself", causal_mask(6)[2]),
        attack("the encoder's all-True row", "the encoder's view", torch.ones(6, dtype=torch.bool)),
        attack("row 3 of the transposed mask (triu)", "transposed", torch.ones(6, 6, dtype=torch.bool).triu()[3]),
        attack("a NumPy bool array", "ndarray", np.arange(6) <= 3),
        attack("a column of shape (6, 1)", "got (6, 1)", CAUSAL_ROW[:, None]),
        attack("row 4", "row 4", causal_mask(6)[4]),
        attack("a string", "str", "[True, True, True, True, False, False]"),
    ],
}
