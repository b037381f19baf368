"""A model that never learns fails the notebook: nbval compares no trained number, so the claims must catch it.

``tools/zero_grad.py`` runs whole notebooks under nbval this way (01, 07, 08, 09 and 11: README, "For course
developers"); this test runs notebook 07 until its first failing cell, every optimiser step given zero gradients.
"""

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


class _Manager(ipc_kernels.IPCKernelManager):
    """A kernel of this environment's Python (nbval's), on Unix sockets."""

    def __init__(self, **kwargs):
        super().__init__(kernel_spec_manager=NbvalKernelspecManager(), **kwargs)


def test_notebook_07_fails_on_a_claim_when_no_optimiser_step_changes_a_weight(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=CURRENT_ENV_KERNEL_NAME,
        kernel_manager_class=_Manager,
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    env = zero_grad.zero_grad_env(tmp_path / "ipython")
    with pytest.raises(CellExecutionError) as failure:
        client.execute(env=ipc_kernels.kernel_env(ipc_kernels.xdist_workers(), env))
    assert (tmp_path / "ipython" / "profile_default" / "startup" / "hook-registered").exists()
    assert failure.value.ename == "ClaimError", failure.value
    failed = next(cell for cell in client.nb.cells if any(o.output_type == "error" for o in cell.get("outputs", [])))
    assert "nbval-ignore-output" in failed.metadata.get("tags", []), "the claim stands in a cell whose numbers vary"
    assert "the notebook claims that" in failure.value.evalue and "but this run measured" in failure.value.evalue
