"""attn_course.checks.decoder, the checks of notebook 09 on the decoder-only model (grouped-query attention, a
cached decoding step, the KV cache's size): "Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course.checks import (
    check_cache_memory,
    check_decode_step,
    check_repeat_kv,
)

# ----------------------------------------------------------------------------------------------
# check_repeat_kv, check_decode_step (build it), check_cache_memory (Llama 2 7B, 4096 tokens, GiB)
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


def _decode_step(q, k, v, cache, *, scale=True, include_cache=True, new_first=False, softmax_dim=-1):
    """A decode step, right by default; each keyword makes one typical mistake."""
    keys, values = k, v
    if cache is not None:
        keys = torch.cat([k, cache[0]], 2) if new_first else torch.cat([cache[0], k], 2)
        values = torch.cat([v, cache[1]], 2) if new_first else torch.cat([cache[1], v], 2)
    attend_k, attend_v = (keys, values) if include_cache else (k, v)
    scores = q @ attend_k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=softmax_dim) @ attend_v, (keys, values)


def _step_without_none(q, k, v, cache):
    keys, values = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)  # fails at the first call: cache is None
    return torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ values, (keys, values)


def _step_in_place(q, k, v, cache):
    q.mul_(2)
    return _decode_step(q, k, v, cache)


def _step_keeping_one(q, k, v, cache):
    out, _ = _decode_step(q, k, v, cache)
    return out, (k, v)  # the cache never grows


def _step_stacking(q, k, v, cache):
    if cache is None:
        return _decode_step(q, k, v, None)
    keys, values = torch.stack([cache[0], k], 2).flatten(2, 3), torch.stack([cache[1], v], 2).flatten(2, 3)
    return torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ values, (keys, values)


def _append(cache, k, v):  # a learner's helper that forgets to return what it built
    keys = k if cache is None else torch.cat([cache[0], k], dim=2)  # noqa: F841


def _step_with_a_helper_returning_none(q, k, v, cache):
    keys, values = _append(cache, k, v)
    return _decode_step(q, keys, values, None)


def test_check_decode_step_right_answer():
    assert_correct(check_decode_step(_decode_step), "full causal attention")
    assert_correct(check_decode_step(lambda q, k, v, c: _decode_step(q.float(), k.float(), v.float(), c)))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (lambda q, k, v, c: _decode_step(q, k, v, c, include_cache=False), ["ignores the cached positions", "dim 2"]),
        (_step_keeping_one, ["should have shape", "concatenate", "dim 2"]),
        (lambda q, k, v, c: _decode_step(q, k, v, c, new_first=True), ["goes after the cached ones"]),
        (lambda q, k, v, c: _decode_step(q, k, v, c, scale=False), ["sqrt(d_h)"]),
        (lambda q, k, v, c: _decode_step(q, k, v, c, softmax_dim=-2), ["over the keys"]),
        (lambda q, k, v, c: (_decode_step(q, k, v, c)[0] + 1, _decode_step(q, k, v, c)[1]), ["differs from full"]),
        (lambda q, k, v, c: (_decode_step(q, k, v, c)[0] * math.nan, _decode_step(q, k, v, c)[1]), ["NaN"]),
        (lambda q, k, v, c: _decode_step(q, k, v, c)[0], ["return two things", "got a tensor of shape"]),
        (_step_with_a_helper_returning_none, ["used a None where a tuple", "If the None comes from a helper of yours"]),
        (lambda q, k, v, c: (_decode_step(q, k, v, c)[0], None), ["tuple (keys, values)"]),
        (lambda q, k, v, c: (_decode_step(q, k, v, c)[0][:, :, 0], _decode_step(q, k, v, c)[1]), ["out should have"]),
        (_step_in_place, ["in place", "q"]),
    ],
)
def test_check_decode_step_hints(answer, words):
    feedback = check_decode_step(answer)
    assert_hint(feedback, *words)
    assert "Error:" not in feedback.message  # the hints explain; they do not repeat a raw error


def _step_with_a_typo(q, k, v, cache):
    keys = k if cache is None else torch.cat([cache[0], k], dim=2)
    values = v if cache is None else torch.cat([cache[1], v], dim=2)
    return _decode_step(q, keys, values, None)[0], (kyes, values)  # noqa: F821  (a typo: NameError)


def _step_without_transpose(q, k, v, cache):
    keys = k if cache is None else torch.cat([cache[0], k], dim=2)
    values = v if cache is None else torch.cat([cache[1], v], dim=2)
    weights = torch.softmax(q @ keys / math.sqrt(q.shape[-1]), dim=-1)  # keys not transposed: a shape error
    return weights @ values, (keys, values)


def _step_failing_later(q, k, v, cache):
    if cache is not None and cache[0].shape[2] == 2:
        raise ValueError("my own mistake")
    return _decode_step(q, k, v, cache)


@pytest.mark.parametrize(
    "answer, words, unwanted",
    [
        # the first call fails for a reason other than cache None: the raised error, not the None hint
        (_step_with_a_typo, ["at step 0", "NameError", "kyes"], "first call gets cache None"),
        (_step_without_transpose, ["at step 0", "RuntimeError"], "first call gets cache None"),
        # a later call fails: the raised error; the concatenation hint only for tensors of mismatched sizes
        (_step_failing_later, ["at step 2", "ValueError", "my own mistake"], "concatenate"),
        (_step_stacking, ["at step 2", "RuntimeError", "size", "concatenate", "dim 2"], "first call"),
    ],
)
def test_check_decode_step_reports_the_error_raised(answer, words, unwanted):
    feedback = check_decode_step(answer)
    assert_hint(feedback, *words)
    assert unwanted not in feedback.message


def test_check_decode_step_none_hint_names_the_error_too():
    assert_hint(check_decode_step(_step_without_none), "first call gets cache None", "NoneType")


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


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


def _repeat_tiled_by_expand(kv, h):
    batch, groups, keys, size = kv.shape
    return kv[:, None].expand(batch, h // groups, groups, keys, size).reshape(batch, h, keys, size)  # (0, 1, 0, 1)


def _decode_step_times_sqrt(q, k, v, cache):
    keys = k if cache is None else torch.cat([cache[0], k], 2)
    values = v if cache is None else torch.cat([cache[1], v], 2)
    return torch.softmax(q @ keys.transpose(-2, -1) * math.sqrt(q.shape[-1]), -1) @ values, (keys, values)


def _decode_step_sqrt_six(q, k, v, cache):
    keys = k if cache is None else torch.cat([cache[0], k], 2)
    values = v if cache is None else torch.cat([cache[1], v], 2)
    return torch.softmax(q @ keys.transpose(-2, -1) / math.sqrt(6), -1) @ values, (keys, values)  # d_h = 6 written in


def _decode_step_tril(q, k, v, cache):
    """A causal mask of shape (1, t + 1) made with tril: the new query keeps key 0 only."""
    keys = k if cache is None else torch.cat([cache[0], k], 2)
    values = v if cache is None else torch.cat([cache[1], v], 2)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, 1, t + 1)
    mask = torch.ones(1, keys.shape[2], dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~mask, -math.inf), -1) @ values, (keys, values)


def _decode_step_three(q, k, v, cache):
    out, cache = _decode_step(q, k, v, cache)
    return out, (*cache, cache[0].shape[2])


ATTACKS = {
    "check_repeat_kv": [
        attack("left as None", "replace None", None),
        attack(
            "tiled with repeat: heads (0, 1, 0, 1)", "wrong order", lambda kv, h: kv.repeat(1, h // kv.shape[1], 1, 1)
        ),
        attack("tiled with expand and reshape", "wrong order", _repeat_tiled_by_expand),
        attack(
            "repeated along the keys (dim 2)",
            "along dim 2",
            lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=2),
        ),
        attack("kv returned unchanged", "kv unchanged", lambda kv, h: kv),
        attack("H copies, not H / G", "not H times", lambda kv, h: kv.repeat_interleave(h, dim=1)),
        attack("2 copies written in", "written in", lambda kv, h: kv.repeat_interleave(2, dim=1)),
        attack(
            "(B, K, H, d_h): the axes swapped",
            "axes",
            lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1).transpose(1, 2),
        ),
        attack("a list", "list", lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1).tolist()),
        attack("a NumPy array", "ndarray", lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1).numpy()),
        attack("adds 1 to kv in place", "in place", _repeat_in_place),
        attack("float16", "dtype", lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1).half()),
    ],
    "check_decode_step": [
        attack("left as None", "replace None", None),
        attack(
            "ignores the cache",
            "ignores the cached positions",
            lambda q, k, v, c: _decode_step(q, k, v, c, include_cache=False),
        ),
        attack("the cache never grows", "should have shape", _step_keeping_one),
        attack(
            "new position first",
            "goes after the cached ones",
            lambda q, k, v, c: _decode_step(q, k, v, c, new_first=True),
        ),
        attack(
            "no 1/sqrt(d_h)", "divide the scores by sqrt(d_h)", lambda q, k, v, c: _decode_step(q, k, v, c, scale=False)
        ),
        attack("times sqrt(d_h) instead of divided", "multiplied", _decode_step_times_sqrt),
        attack("d_h = 6 written in", "written in", _decode_step_sqrt_six),
        attack(
            "softmax over the queries", "over the keys", lambda q, k, v, c: _decode_step(q, k, v, c, softmax_dim=-2)
        ),
        attack("a tril mask of shape (1, t + 1)", "no mask", _decode_step_tril),
        attack("scales q in place", "changed its input q in place", _step_in_place),
        attack("returns out alone", "return two things", lambda q, k, v, c: _decode_step(q, k, v, c)[0]),
        attack("a cache of three things", "a tuple of 3", _decode_step_three),
        attack("cache None at the first call", "first call gets cache None", _step_without_none),
        attack(
            "computed in float16",
            "float16",
            lambda q, k, v, c: _decode_step(
                q.half(), k.half(), v.half(), c if c is None else tuple(t.half() for t in c)
            ),
        ),
    ],
    "check_cache_memory": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "2"),
        attack("keys only", "the cache holds keys and values", 1.0),
        attack("float32's 4 bytes", "2 bytes per value, not 4", 4.0),
        attack("GB instead of GiB", "not 10^9", 2 * 2**30 / 1e9),
        attack("neither factor 2", "another factor 2", 0.5),
        attack("in MiB", "MiB", 2048.0),
        attack("in bytes", "number of bytes", float(2 * 2**30)),
        attack("one layer", "one layer's cache", 2 / 32),
        attack("one token", "one token's cache", 2 / 4096),
        attack("Llama 2 70B's row of the table", "Llama 2 70B", 2 * 80 * 8 * 128 * 4096 * 2 / 2**30),
        attack("the prose's batch of 8", "a batch of 8", 16.0),
        attack("a list", "list", [2.0]),
    ],
}
