"""attn_course.cost: counting calls, bytes and slopes, peak memory and the IO model; nothing here asserts that anything
is fast."""

import math
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers import refused

import attn_course as ac
import attn_course.cost
from attn_course import attention_cost, loglog_slope
from attn_course.cost import _time_call as time_call

# ----------------------------------------------------------------------------------------------
# time_call
# ----------------------------------------------------------------------------------------------


class CountingFake:
    """A function that records the arguments of every call."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


@pytest.mark.parametrize("warmup, repeats", [(0, 1), (1, 5), (3, 2), (2, 7)])
def test_time_call_calls_the_function_warmup_plus_repeats_times(warmup, repeats):
    fake = CountingFake()
    seconds = time_call(fake, "a", 2, repeats=repeats, warmup=warmup)
    assert fake.calls == [("a", 2)] * (warmup + repeats)
    assert isinstance(seconds, float) and seconds >= 0


def test_time_call_defaults_are_one_warmup_and_five_repeats():
    fake = CountingFake()
    time_call(fake)
    assert fake.calls == [()] * 6


@pytest.mark.parametrize(
    "durations, median",
    [([0.3, 0.1, 0.2], 0.2), ([5.0, 1.0, 2.0, 4.0], 3.0), ([0.25], 0.25)],
    ids=["odd", "even", "one"],
)
def test_time_call_returns_the_median_of_the_timed_runs(durations, median, monkeypatch):
    """A fake clock that only the function advances: warmup runs take 100 s, which must not count."""
    clock = [0.0]
    steps = iter([100.0] + durations)

    def fn():
        clock[0] += next(steps)

    monkeypatch.setattr(attn_course.cost, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    assert time_call(fn, repeats=len(durations), warmup=1) == pytest.approx(median, rel=1e-12)


@pytest.mark.parametrize(
    "repeats, match",
    [
        (0, r"repeats must be an integer >= 1, got 0"),
        (-2, r"repeats must be an integer >= 1, got -2"),
        (True, r"repeats must be an integer >= 1, got True"),
        (2.0, r"repeats must be an integer >= 1, got 2\.0"),
        ("3", r"repeats must be an integer >= 1, got '3'"),
    ],
    ids=["zero", "negative", "bool", "float", "str"],
)
def test_time_call_error_messages(repeats, match, int_error):
    fake = CountingFake()
    with pytest.raises(int_error(repeats), match=match):
        time_call(fake, repeats=repeats)
    assert fake.calls == []  # checked before any call


@pytest.mark.parametrize("warmup", [-1, True, 1.5], ids=["negative", "bool", "float"])
def test_time_call_checks_warmup_like_repeats(warmup, int_error):
    """STYLE 5: warmup=-1 is silently taken as 0 and True as 1; it should be refused as repeats is."""
    fake = CountingFake()
    with pytest.raises(int_error(warmup), match=r"warmup must be an integer >= 0"):
        time_call(fake, repeats=1, warmup=warmup)
    assert fake.calls == []


# ----------------------------------------------------------------------------------------------
# attention_cost
# ----------------------------------------------------------------------------------------------

BYTES = {torch.float32: 4, torch.float64: 8}


@pytest.mark.parametrize(
    "num_queries, num_keys, d, batch",
    [(1, 1, 1, 1), (3, 5, 2, 1), (4, 7, 8, 2), (16, 32, 4, 3)],
)
def test_attention_cost_counts_bytes_exactly(num_queries, num_keys, d, batch, dtype):
    cost = attention_cost(num_queries, num_keys, d, batch=batch, repeats=1, dtype=dtype)
    assert set(cost) == {"seconds", "weight_bytes", "input_bytes"}
    size = BYTES[dtype]
    # weights (B, Q, K); queries (B, Q, D), keys (B, K, D) and values (B, K, D)
    assert cost["weight_bytes"] == batch * num_queries * num_keys * size
    assert cost["input_bytes"] == batch * (num_queries * d + 2 * num_keys * d) * size
    assert isinstance(cost["seconds"], float) and cost["seconds"] > 0


def test_attention_cost_hand_computed_example_and_default_dtype():
    # float32 by default: B = 2, Q = 10, K = 20, D = 8 -> weights 2 * 10 * 20 * 4 = 1600 bytes,
    # inputs 2 * (10 * 8 + 20 * 8 + 20 * 8) * 4 = 3200 bytes
    cost = attention_cost(10, 20, 8, batch=2, repeats=1)
    assert cost["weight_bytes"] == 1600
    assert cost["input_bytes"] == 3200


def test_attention_cost_weight_memory_grows_like_q_times_k_and_not_with_d():
    small = attention_cost(8, 8, 4, repeats=1)["weight_bytes"]
    assert attention_cost(16, 16, 4, repeats=1)["weight_bytes"] == 4 * small
    assert attention_cost(8, 8, 64, repeats=1)["weight_bytes"] == small


def test_attention_cost_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    attention_cost(4, 4, 4, repeats=1)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("num_queries", 0),
        *refused("num_keys", -1),
        *refused("d", 2.5, True),
        *refused("batch", 0, "2"),
        *refused("repeats", 0),
    ],
)
def test_attention_cost_error_messages(kwargs, match, int_error):
    args = {"num_queries": 2, "num_keys": 3, "d": 4, "repeats": 1} | kwargs
    with pytest.raises(int_error(*kwargs.values()), match=match):
        attention_cost(**args)


@pytest.mark.parametrize("dtype", [torch.int64, "float32"], ids=["integer", "str"])
def test_attention_cost_bad_dtype_gets_a_message_that_names_it(dtype):
    """STYLE 5: today torch.randn fails first (NotImplementedError "normal_kernel_cpu" / a long TypeError)."""
    with pytest.raises((TypeError, ValueError), match=r"\bdtype\b.*float"):
        attention_cost(2, 3, 4, repeats=1, dtype=dtype)


# ----------------------------------------------------------------------------------------------
# loglog_slope
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sizes, cost, slope",
    [
        ([8, 16, 32, 64], lambda n: 3 * n**2, 2.0),
        ([8, 16, 32, 64], lambda n: n**0.5, 0.5),
        ([1, 10, 1000], lambda n: 0.01 * n**3, 3.0),  # uneven sizes
        ([2, 3, 5, 7, 11], lambda n: 4.0 / n, -1.0),
        ([100, 200], lambda n: 5.0 * n, 1.0),  # two points suffice
    ],
    ids=["square", "sqrt", "cube-uneven", "inverse", "two-points"],
)
def test_loglog_slope_of_a_power_law_is_its_exponent(sizes, cost, slope):
    got = loglog_slope(sizes, [cost(n) for n in sizes])
    assert isinstance(got, float)
    assert got == pytest.approx(slope, rel=1e-12, abs=1e-12)


def test_loglog_slope_of_a_constant_is_zero():
    assert loglog_slope([1, 2, 4, 8], [7.0, 7.0, 7.0, 7.0]) == pytest.approx(0.0, abs=1e-12)


def test_loglog_slope_is_the_least_squares_fit():
    # log sizes 0, 1, 2 and log costs 0, 1, 3: slope = ((-1)(-4/3) + 0 + (1)(5/3)) / ((-1)^2 + 0 + 1^2) = 3/2
    sizes = [1.0, math.e, math.e**2]
    costs = [1.0, math.e, math.e**3]
    assert loglog_slope(sizes, costs) == pytest.approx(1.5, rel=1e-12)


def test_loglog_slope_accepts_tuples_arrays_and_tensors():
    sizes, costs = (2, 4, 8), (12.0, 48.0, 192.0)  # 3 n^2
    assert loglog_slope(np.array(sizes), np.array(costs)) == pytest.approx(2.0, rel=1e-12)
    assert loglog_slope(torch.tensor(sizes), torch.tensor(costs, dtype=torch.float64)) == pytest.approx(2.0)
    assert loglog_slope(sizes, costs) == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize(
    "sizes, costs, match",
    [
        ([1, 2, 3], [1.0, 2.0], r"sizes and costs must have the same length >= 2, got 3 and 2"),
        ([1, 2], [1.0, 2.0, 3.0], r"same length >= 2, got 2 and 3"),
        ([4], [1.0], r"same length >= 2, got 1 and 1"),
        ([], [], r"same length >= 2, got 0 and 0"),
        ([0, 2, 4], [1.0, 2.0, 3.0], r"sizes and costs must be positive to take logarithms"),
        ([-1, 2, 4], [1.0, 2.0, 3.0], r"must be positive"),
        ([1, 2, 4], [1.0, 0.0, 3.0], r"must be positive"),
        ([1, 2, 4], [1.0, 2.0, -3.0], r"must be positive"),
    ],
    ids=["longer-sizes", "longer-costs", "one-point", "empty", "zero-size", "negative-size", "zero-cost", "neg-cost"],
)
def test_loglog_slope_error_messages(sizes, costs, match):
    with pytest.raises(ValueError, match=match):
        loglog_slope(sizes, costs)


def test_loglog_slope_equal_sizes_give_a_message_not_a_zero_division():
    """All sizes equal: the slope is undefined; today the least-squares denominator raises ZeroDivisionError."""
    with pytest.raises(ValueError, match=r"sizes"):
        loglog_slope([4, 4, 4], [1.0, 2.0, 3.0])


# ----------------------------------------------------------------------------------------------
# attention_cost(scoring="additive"): the (B, Q, K, U) hidden tensor
# ----------------------------------------------------------------------------------------------


def test_attention_cost_additive_counts_the_hidden_tensor_exactly():
    # B = 2, Q = 10, K = 20, U = 8, float32: hidden 2 * 10 * 20 * 8 * 4 = 12800 bytes, U times the weights
    cost = attention_cost(10, 20, 6, batch=2, repeats=1, scoring="additive", num_hiddens=8)
    assert set(cost) == {"seconds", "weight_bytes", "input_bytes", "hidden_bytes"}
    assert cost["weight_bytes"] == 1600
    assert cost["hidden_bytes"] == 12800 == 8 * cost["weight_bytes"]
    assert cost["seconds"] > 0
    assert "hidden_bytes" not in attention_cost(10, 20, 6, repeats=1)


def test_attention_cost_additive_in_float64_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    cost = attention_cost(4, 5, 3, repeats=1, scoring="additive", num_hiddens=2, dtype=torch.float64)
    assert torch.equal(torch.get_rng_state(), state)
    assert cost["hidden_bytes"] == 4 * 5 * 2 * 8


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"scoring": "bilinear"}, ValueError, r"scoring must be one of \['dot', 'additive'\], got 'bilinear'"),
        ({"scoring": 1}, TypeError, r"scoring must be one of"),
        ({"num_hiddens": 0, "scoring": "additive"}, ValueError, r"num_hiddens must be an integer >= 1, got 0"),
    ],
    ids=["unknown", "not-a-str", "no-hiddens"],
)
def test_attention_cost_scoring_error_messages(kwargs, error, match):
    with pytest.raises(error, match=match):
        attention_cost(2, 3, 4, repeats=1, **kwargs)


# ----------------------------------------------------------------------------------------------
# peak_memory and io_cost (notebook 10)
# ----------------------------------------------------------------------------------------------


def test_peak_memory_sees_one_allocation_exactly():
    assert ac.peak_memory(torch.empty, 1000, 1000) == 4 * 1000 * 1000  # float32


def test_peak_memory_is_the_peak_not_the_sum():
    def two_in_turn():
        a = torch.ones(1000, 1000)  # 4 MB
        del a
        b = torch.ones(1000, 1000)  # 4 MB again, after the first was freed
        return b

    def two_at_once():
        a = torch.ones(1000, 1000)
        b = torch.ones(1000, 1000)
        return a, b

    assert ac.peak_memory(two_in_turn) == 4_000_000
    assert ac.peak_memory(two_at_once) == 8_000_000


def test_peak_memory_restores_the_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the tests run on one thread: start from another count, so a reset to 1 shows
    try:
        ac.peak_memory(torch.zeros, 10, threads=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_flash_attention_memory_grows_with_the_block_not_with_the_square():
    """Materialised: about two (Q, K) matrices; tiled: the output plus a few (block, block) tiles."""
    n, d = 1024, 32
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, n, d, generator=gen) for _ in range(3))
    materialised = ac.peak_memory(ac.scaled_dot_product_attention, q, k, v)
    tiled = ac.peak_memory(ac.flash_attention, q, k, v, 64)
    fused = ac.peak_memory(F.scaled_dot_product_attention, q, k, v)
    assert materialised >= 2 * 4 * n * n  # scores and weights
    assert tiled < 4 * n * d + 20 * 4 * 64 * 64  # the output and at most 20 tiles
    assert tiled < 2 * fused
    assert materialised > 10 * tiled


def test_peak_memory_errors():
    with pytest.raises(TypeError, match="fn must be a function to measure, got int"):
        ac.peak_memory(3)
    with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
        ac.peak_memory(torch.zeros, 3, threads=0)


def test_io_cost_closed_forms():
    cost = ac.io_cost(4096, 64, 128)
    n, d, b = 4096, 64, 128
    assert cost["naive_bytes"] == 4 * (4 * n * d + 4 * n * n)
    assert cost["tiled_bytes"] == 4 * (2 * n * d + 2 * (n // b) * n * d)
    assert cost["flops"] == 4 * n * n * d
    assert cost["tiled_intensity"] == pytest.approx(cost["flops"] / cost["tiled_bytes"])
    assert cost["tile_bytes"] == 4 * (4 * b * d + b * b + 2 * b)
    assert cost["kv_outer_bytes"] == 4 * (2 * n * d + (n // b) * (3 * n * d + 4 * n))


def _count_loads_and_stores(n, d, b, keys_outside):
    """Elements moved by the two loop orders, counted block by block as the algorithms are written."""
    moved = 0
    blocks = [min(b, n - start) for start in range(0, n, b)]
    if keys_outside:  # FlashAttention, Algorithm 1: K_j, V_j once; Q_i, O_i, l_i, m_i in and O_i, l_i, m_i out
        for key_rows in blocks:
            moved += 2 * key_rows * d
            for query_rows in blocks:
                moved += query_rows * d + query_rows * d + 2 * query_rows  # load Q_i, O_i, l_i, m_i
                moved += query_rows * d + 2 * query_rows  # write O_i, l_i, m_i
    else:  # FlashAttention-2: Q_i once, then every K_j, V_j; O_i out once
        for query_rows in blocks:
            moved += query_rows * d + sum(2 * key_rows * d for key_rows in blocks) + query_rows * d
    return moved


@pytest.mark.parametrize("n, d, b", [(64, 8, 16), (100, 6, 32), (7, 3, 7)])
def test_io_cost_tiled_counts_follow_the_two_loops(n, d, b):
    cost = ac.io_cost(n, d, b, bytes_per_element=2)
    assert cost["tiled_bytes"] == 2 * _count_loads_and_stores(n, d, b, keys_outside=False)
    assert cost["kv_outer_bytes"] == 2 * _count_loads_and_stores(n, d, b, keys_outside=True)
    assert cost["kv_outer_bytes"] > cost["tiled_bytes"]


def test_io_cost_tiling_moves_fewer_bytes_and_bigger_blocks_fewer_still():
    small, big = ac.io_cost(8192, 64, 32), ac.io_cost(8192, 64, 256)
    assert big["tiled_bytes"] < small["tiled_bytes"] < small["naive_bytes"]
    assert big["tiled_intensity"] > small["tiled_intensity"] > small["naive_intensity"]


def test_io_cost_fits_flags_a_tile_too_big_for_fast_memory():
    assert ac.io_cost(1024, 64, 64, fast_memory=192 * 1024)["fits"] == 1.0
    assert ac.io_cost(1024, 64, 512, fast_memory=192 * 1024)["fits"] == 0.0


def test_io_cost_uneven_blocks_round_up():
    assert ac.io_cost(100, 8, 30)["tiled_bytes"] == 4 * (2 * 100 * 8 + 2 * math.ceil(100 / 30) * 100 * 8)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"num_tokens": 0}, ValueError, "num_tokens must be an integer >= 1, got 0"),
        ({"num_tokens": 8, "block_size": 2.5}, TypeError, "block_size must be an integer >= 1"),
        ({"num_tokens": 8, "d": True}, TypeError, "d must be an integer >= 1"),
        ({"num_tokens": 8, "fast_memory": -1}, ValueError, "fast_memory must be a finite number > 0"),
    ],
)
def test_io_cost_errors(kwargs, error, words):
    with pytest.raises(error) as info:
        ac.io_cost(**kwargs)
    assert words in str(info.value)
