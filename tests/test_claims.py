"""checks.claim: what a notebook says of a trained result holds, or the cell fails naming what was measured."""

import numpy as np
import pytest
import torch

from attn_course.checks import ClaimError, claim


def test_a_claim_that_holds_prints_it(capsys):
    claim("the loss falls below 0.1", 0.04 < 0.1, 0.04)
    claim("a NumPy bool counts", np.float64(0.3) > 0.2, np.float64(0.3))
    claim("a one-element bool tensor counts", torch.tensor([2.0]) > 1, torch.tensor([2.0]))
    assert capsys.readouterr().out.splitlines() == [
        "✓ the loss falls below 0.1",
        "✓ a NumPy bool counts",
        "✓ a one-element bool tensor counts",
    ]


def test_a_claim_that_fails_names_the_statement_and_the_measured_value(capsys):
    with pytest.raises(ClaimError, match=r"claims that the loss falls below 0\.1, but this run measured 2\.303$"):
        claim("the loss falls below 0.1", 2.302585 < 0.1, 2.302585)
    assert capsys.readouterr().out == "", "a failed claim prints no tick"
    assert issubclass(ClaimError, AssertionError)


@pytest.mark.parametrize(
    ("measured", "shown"),
    [
        ({"PI": 1.23456, "YaRN": 0.5}, "{'PI': 1.235, 'YaRN': 0.5}"),
        ([0.91, 0.123456], "[0.91, 0.1235]"),
        (torch.tensor([0.5, 0.25]), "[0.5, 0.25]"),
        (np.array([3, 4]), "[3, 4]"),
        (torch.tensor(0.75), "0.75"),
        (True, "True"),
        ("3 + 4 = 7", "'3 + 4 = 7'"),
    ],
)
def test_measured_values_are_shown_readably(measured, shown):
    with pytest.raises(ClaimError) as error:
        claim("it holds", False, measured)
    assert str(error.value).endswith(f"measured {shown}")


@pytest.mark.parametrize(
    ("statement", "holds", "message"),
    [
        ("", True, "statement must be a sentence"),
        (None, True, "statement must be a sentence"),
        ("the loss falls", 0.04, "holds must be a bool .*got float"),
        ("the loss falls", "yes", "holds must be a bool .*got str"),
        ("the loss falls", None, "holds must be a bool .*got NoneType"),
        ("the loss falls", torch.tensor([True, False]), "holds must be one bool, got a torch.bool tensor of shape"),
        ("the loss falls", torch.tensor(1.0), "holds must be one bool, got a torch.float32 tensor"),
    ],
)
def test_a_claim_is_a_sentence_and_a_bool(statement, holds, message):
    """A truthy number is not a test: ``claim("loss below 0.1", loss, loss)`` would pass for any nonzero loss."""
    with pytest.raises(TypeError, match=message):
        claim(statement, holds, 0.0)
