"""attn_course.checks.nb09, the checks of notebook 09 (a decoder-only model and the KV cache):
"Correct" for a right answer, a hint for each mistake."""

import pytest
import torch
from _check_helpers import assert_correct, assert_hint

from attn_course.checks import (
    check_cache_memory,
    check_cache_update,
    check_repeat_kv,
)

# ----------------------------------------------------------------------------------------------
# Notebook 09: check_repeat_kv, check_cache_update (build it), check_cache_memory (Llama 2 7B, 4096 tokens, GiB)
# ----------------------------------------------------------------------------------------------


def test_check_repeat_kv_right_answer():
    assert_correct(check_repeat_kv(lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1)))
    assert_correct(check_repeat_kv(lambda kv, h: kv[:, torch.arange(h) // (h // kv.shape[1])]))


def _repeat_in_place(kv, h):
    kv.mul_(1.0)
    kv += 1
    return kv.repeat_interleave(h // kv.shape[1], dim=1)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (3, ["expected a function", "int"]),
        (lambda kv, h: kv.repeat(1, h // kv.shape[1], 1, 1), ["wrong order", "repeat_interleave"]),
        (lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=2), ["expected shape", "dim 1"]),
        (lambda kv, h: kv, ["expected shape", "H / G times"]),
        (lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1) * 2, ["values differ"]),
        (lambda kv, h: kv.tolist(), ["must return a tensor", "list"]),
        (lambda kv, h: 1 / 0, ["raised ZeroDivisionError"]),
        (_repeat_in_place, ["in place"]),
    ],
)
def test_check_repeat_kv_hints(answer, words):
    assert_hint(check_repeat_kv(answer), *words)


def test_check_cache_update_right_answer():
    assert_correct(check_cache_update(lambda cached, new: new if cached is None else torch.cat([cached, new], 2)))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (lambda cached, new: torch.cat([cached, new], 2), ["raised TypeError"]),
        (lambda cached, new: new if cached is None else torch.cat([new, cached], 2), ["after the old ones"]),
        (lambda cached, new: new if cached is None else torch.cat([cached, new], 3), ["raised RuntimeError"]),
        (lambda cached, new: new if cached is None else cached, ["should give", "dim 2"]),
        (lambda cached, new: new * 2, ["empty cache"]),
        (lambda cached, new: new if cached is None else torch.cat([cached, new], 2) + 1, ["values differ"]),
    ],
)
def test_check_cache_update_hints(answer, words):
    assert_hint(check_cache_update(answer), *words)


def test_check_cache_memory_right_answer():
    assert_correct(check_cache_memory(2.0))
    assert_correct(check_cache_memory(torch.tensor(2 * 32 * 32 * 128 * 4096 * 2 / 2**30)))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("two", ["one number", "str"]),
        (1.0, ["keys and values"]),
        (4.0, ["2 bytes"]),
        (0.5, ["factor 2", "another factor 2"]),
        (2 * 2**30 / 1e9, ["2^30"]),
        (7.0, ["multiply 2"]),
    ],
)
def test_check_cache_memory_hints(answer, words):
    assert_hint(check_cache_memory(answer), *words)
