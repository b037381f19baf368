"""Every exercise check under attack: each ``tests/test_checks_<topic>.py`` holds ``ATTACKS``, at least eight plausible
wrong answers per check (a mutated input, a size written in, the other convention or axis, a transposed or rounded
result, a wrong container, None, the right answer for another case). Each must be rejected with a hint that names its
real cause, and no check may move torch's global random generator."""

import importlib
from pathlib import Path

import pytest
import torch
from _check_helpers import assert_hint

from attn_course import checks

MODULES = sorted(path.stem for path in Path(__file__).parent.glob("test_checks_*.py"))
CHECKS = [name for name in checks.__all__ if name.startswith("check_")]


def _tables():
    tables = {}
    for module in MODULES:
        for name, rows in getattr(importlib.import_module(module), "ATTACKS", {}).items():
            if name in tables:
                raise ValueError(f"{name} has attacks in two test files")
            tables[name] = rows
    return tables


TABLES = _tables()
ROWS = [
    pytest.param(name, words, answers, id=f"{name}: {label}")
    for name, rows in TABLES.items()
    for label, words, answers in rows
]


def test_every_check_has_an_attack_table_of_at_least_eight_distinct_wrong_answers():
    short = {name: len(TABLES.get(name, [])) for name in CHECKS if len(TABLES.get(name, [])) < 8}
    assert not short, f"checks with fewer than 8 attacks: {short}"
    unknown = sorted(set(TABLES) - set(CHECKS))
    assert not unknown, f"attack tables for names that are not checks: {unknown}"
    for name, rows in TABLES.items():
        labels = [label for label, _, _ in rows]
        assert len(set(labels)) == len(labels), f"{name} has two attacks of the same name"


@pytest.mark.parametrize("name, words, answers", ROWS)
def test_a_wrong_answer_is_rejected_with_a_hint_that_names_its_cause(name, words, answers):
    state = torch.random.get_rng_state()
    assert_hint(getattr(checks, name)(*answers), *words)
    assert torch.equal(state, torch.random.get_rng_state()), f"{name} moved torch's global generator"
