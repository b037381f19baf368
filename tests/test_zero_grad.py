"""A model that never learns fails the notebook: nbval compares no trained number, so the claims must catch it.

``tools/zero_grad.py`` runs whole notebooks under nbval this way (01, 07, 08, 09 and 11: README, "For course
developers"); this test runs notebook 07 until its first failing cell, every optimiser step given zero gradients.

It trains on fewer examples for fewer epochs than the notebook's parameters (as papermill would inject them): with
zero gradients no weight ever moves, so the claims judge the models as initialised however long they train, and
the full run (about 20 s) would prove nothing more. That the weights never move is not taken on trust: a second
startup file records every optimiser step, and the test asserts that steps were taken and that none changed a
weight (a hook that zeroed too late, or training that bypassed torch.optim, would learn and show here).
"""

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import ipc_kernels  # noqa: E402
import zero_grad  # noqa: E402
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "07_attention_in_seq2seq.ipynb"
# Two epochs, the fewest that cell's "still falling in the last epoch" claim can read; two batches of 128 each.
PARAMETERS = "NUM_TRAIN = 256\nEPOCHS = 2\n"

# Runs after tools/zero_grad.py's startup file (IPython runs them in name order): for every optimiser step, whether
# it changed any parameter, written to steps.json beside this file after each step.
TALLY = """\
import json as _json
from pathlib import Path as _Path

import torch as _torch
from torch.optim.optimizer import register_optimizer_step_post_hook as _post, register_optimizer_step_pre_hook as _pre

_tally, _before = {"steps": 0, "changed": 0}, {}
_steps = _Path(__file__).parent / "steps.json"  # __file__ exists only while IPython runs this file


def _params(optimizer):
    return [p for group in optimizer.param_groups for p in group["params"]]


def _snapshot(optimizer, args, kwargs):
    _before[id(optimizer)] = [p.detach().clone() for p in _params(optimizer)]


def _compare(optimizer, args, kwargs):
    before = _before.pop(id(optimizer))
    _tally["steps"] += 1
    _tally["changed"] += any(not _torch.equal(p.detach(), b) for p, b in zip(_params(optimizer), before))
    _steps.write_text(_json.dumps(_tally))


_pre(_snapshot)
_post(_compare)
"""


class _Manager(ipc_kernels.IPCKernelManager):
    """A kernel of this environment's Python (nbval's), on Unix sockets."""

    def __init__(self, **kwargs):
        super().__init__(kernel_spec_manager=NbvalKernelspecManager(), **kwargs)


def _with_parameters(notebook, source: str):
    """``notebook`` with a cell after its parameters cell that sets ``source``, as papermill injects parameters."""
    at = next(i for i, c in enumerate(notebook.cells) if "parameters" in c.metadata.get("tags", []))
    injected = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    notebook.cells.insert(at + 1, injected)
    return notebook


def test_notebook_07_fails_on_a_claim_when_no_optimiser_step_changes_a_weight(tmp_path):
    notebook = _with_parameters(nbformat.read(NOTEBOOK, as_version=4), PARAMETERS)
    client = NotebookClient(
        notebook,
        kernel_name=CURRENT_ENV_KERNEL_NAME,
        kernel_manager_class=_Manager,
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    env = zero_grad.zero_grad_env(tmp_path / "ipython")
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    (startup / "01-tally-steps.py").write_text(TALLY)
    with pytest.raises(CellExecutionError) as failure:
        client.execute(env=ipc_kernels.kernel_env(ipc_kernels.xdist_workers(), env))
    assert (startup / "hook-registered").exists()
    tally = json.loads((startup / "steps.json").read_text())
    assert tally["steps"] > 0 and tally["changed"] == 0, f"optimiser steps that changed a weight: {tally}"
    assert failure.value.ename == "ClaimError", failure.value
    failed = next(cell for cell in client.nb.cells if any(o.output_type == "error" for o in cell.get("outputs", [])))
    assert "nbval-ignore-output" in failed.metadata.get("tags", []), "the claim stands in a cell whose numbers vary"
    assert "the notebook claims that" in failure.value.evalue and "but this run measured" in failure.value.evalue
