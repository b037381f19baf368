"""Notebook execution: seconds per notebook in a fresh kernel, against the floor measured in the same run.

Each notebook runs as a fresh kernel would run it (nbclient, kernel ``attn-course``, working directory
``notebooks/``), from kernel start to the last cell. The floor is a notebook of one cell that only imports
the course's libraries and selects the inline backend, generated in a temporary folder; it is run before
the notebooks and after them (after one unrecorded warm-up run), and the floor is the mean of the two.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

KERNEL = "attn-course"
FLOOR_SOURCE = """\
%matplotlib inline
import ipywidgets
import matplotlib.pyplot as plt
import torch

import attn_course as ac
"""


def run_notebook(path: Path, cwd: Path, timeout: int = 600) -> float:
    """Seconds from kernel start to the end of the last cell; raises if a cell fails."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, kernel_name=KERNEL, timeout=timeout, resources={"metadata": {"path": str(cwd)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


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
    """``{"floor": seconds, "floor_runs": [...], "notebooks": {name: seconds}}``."""
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
            times[path.name] = run_notebook(path, cwd)
        if progress:
            progress("notebooks: floor again")
        floor_runs.append(run_notebook(floor, cwd))
    return {"floor": sum(floor_runs) / len(floor_runs), "floor_runs": floor_runs, "notebooks": times}
