"""Builders that several test modules share: random queries, keys and values, a mask built by a plain loop, the
panels of a heatmap figure, and error cases."""

import re

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure


def random_qkv(gen, dtype, *, b=2, q=3, k=5, dq=4, dk=4, dv=6):
    """Queries (B, Q, Dq), keys (B, K, Dk) and values (B, K, V) drawn from the seeded generator ``gen``."""
    return (
        torch.randn(b, q, dq, generator=gen, dtype=dtype),
        torch.randn(b, k, dk, generator=gen, dtype=dtype),
        torch.randn(b, k, dv, generator=gen, dtype=dtype),
    )


def bool_mask_by_loop(valid_lens, num_q, num_k):
    """(B, Q, K) boolean mask (True = may attend) from (B,) or (B, Q) lengths, by a plain loop."""
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None].expand(-1, num_q)
    return torch.tensor([[[k < int(n) for k in range(num_k)] for n in per_q] for per_q in lens], dtype=torch.bool)


def heatmap_panels(fig):
    """The heatmap axes of a figure, without its colour bars."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def colorbars(fig):
    """The colour bars' axes of a figure."""
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def only_mesh(ax):
    """The one ``QuadMesh`` (the matrix) a heatmap panel draws."""
    meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(meshes) == 1
    return meshes[0]


def _forbidden_show(*args, **kwargs):
    raise AssertionError("plot helpers must not call plt.show()")


def draw_cleanly(monkeypatch, plot, *args, **kwargs):
    """``plot(*args, **kwargs)``, checked for what every plot helper owes its caller: it returns the one Figure it
    opened, never calls ``plt.show()``, and leaves matplotlib's settings and the global random state alone."""
    monkeypatch.setattr(plt, "show", _forbidden_show)
    before, rng = dict(matplotlib.rcParams), torch.get_rng_state()
    fig = plot(*args, **kwargs)
    assert isinstance(fig, Figure) and plt.get_fignums() == [fig.number]
    assert dict(matplotlib.rcParams) == before and torch.equal(torch.get_rng_state(), rng)
    return fig


def error_for(value, right_type) -> type[Exception]:
    """The house rule for bad input: a value of the wrong type raises TypeError, a wrong value ValueError.
    ``bool`` counts as the wrong type where an int or a float is asked for."""
    if isinstance(value, bool) or not isinstance(value, right_type):
        return TypeError
    return ValueError


def refused(name, *values, wanted="an integer >= 1", right_type=None, **fixed):
    """Error cases ``(kwargs, message pattern)``, one per bad value of the argument ``name`` (the others ``fixed``),
    each with the id ``name=value``, in the words every check of ``_validate`` uses: "<name> must be <wanted>, got
    <value>". With ``right_type`` (``int``, or ``(int, float)`` for a number), each case also carries the exception
    that ``error_for`` expects: ``(kwargs, error, message pattern)``."""
    cases = []
    for v in values:
        match = rf"{name} must be {re.escape(wanted)}, got {re.escape(repr(v))}"
        error = () if right_type is None else (error_for(v, right_type),)
        cases.append(pytest.param(fixed | {name: v}, *error, match, id=f"{name}={v!r}"))
    return cases


def named_cases(cases: dict) -> list:
    """``@pytest.mark.parametrize`` cases from ``{id: (argument, ..., error, match)}``: each case's id stands beside
    it, instead of in a separate list of ids that must keep the same order."""
    return [pytest.param(*case, id=name) for name, case in cases.items()]
