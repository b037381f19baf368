"""Notebook execution: seconds per notebook in a fresh kernel, against the floor measured in the same run.

Each notebook runs as a fresh kernel would run it (nbclient, kernel ``attn-course``, working directory
``notebooks/``), from kernel start to the last cell. The floor is a notebook of one cell that only imports
the course's libraries and selects the inline backend, generated in a temporary folder; it is run before
the notebooks and after them (after one unrecorded warm-up run), and the floor is the mean of the two.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from ipc_kernels import IPCKernelManager  # noqa: E402 - Unix sockets in a private folder, as the build and nbval

KERNEL = "attn-course"
FLOOR_SOURCE = """\
%matplotlib inline
import ipywidgets
import matplotlib.pyplot as plt
import torch

import attn_course as ac
"""


def run_notebook(path: Path, cwd: Path, timeout: int = 300) -> float:
    """Seconds from kernel start to the end of the last cell; raises if a cell fails or takes over ``timeout``
    seconds.

    The kernel talks over Unix sockets in a private folder (``tools/ipc_kernels.py``): TCP ports picked at random
    can collide with those of kernels that other work on the machine starts at the same moment.
    """
    notebook = nbformat.read(path, as_version=4)
    manager = IPCKernelManager(kernel_name=KERNEL)
    client = NotebookClient(notebook, km=manager, timeout=timeout, resources={"metadata": {"path": str(cwd)}})
    start = time.perf_counter()
    try:
        client.execute()
        return time.perf_counter() - start  # up to the last cell's end, not the kernel's shutdown
    finally:
        if manager.has_kernel:  # a kernel manager handed to nbclient is left to its owner to stop
            manager.shutdown_kernel(now=True)


def floor_notebook(folder: Path) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(FLOOR_SOURCE))
    notebook.metadata["kernelspec"] = {
        "name": KERNEL,
        "display_name": "Python (attention course)",
        "language": "python",
    }
    path = folder / "00_floor.ipynb"
    nbformat.write(notebook, path)
    return path


def run(notebooks: list[Path], progress=None) -> dict:
    """``{"floor": seconds, "floor_runs": [...], "notebooks": {name: seconds, or the error as a string}}``."""
    cwd = notebooks[0].parent
    with tempfile.TemporaryDirectory() as tmp:
        floor = floor_notebook(Path(tmp))
        if progress:
            progress("notebooks: warm-up run of the floor notebook (not recorded)")
        run_notebook(floor, cwd)
        floor_runs = [run_notebook(floor, cwd)]
        times = {}
        for path in notebooks:
            if progress:
                progress(f"notebooks: {path.name}")
            try:
                times[path.name] = run_notebook(path, cwd)
            except Exception as error:  # noqa: BLE001 - reported in the table, the other notebooks still run
                times[path.name] = f"failed: {type(error).__name__}: {str(error).strip().splitlines()[-1:]}"
        if progress:
            progress("notebooks: floor again")
        floor_runs.append(run_notebook(floor, cwd))
    return {"floor": sum(floor_runs) / len(floor_runs), "floor_runs": floor_runs, "notebooks": times}
