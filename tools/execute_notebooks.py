#!/usr/bin/env python3
"""Run course notebooks top to bottom in a fresh kernel and store their outputs, as nbval will compare them.

    .venv/bin/python tools/execute_notebooks.py notebooks/07_attention_in_seq2seq.ipynb [...]
    make execute NOTEBOOKS="notebooks/07_*.ipynb"

The same as JupyterLab's "Restart Kernel and Run All Cells" followed by a save with the widget state: each
notebook runs in the course kernel (``attn-course``) from ``notebooks/``, one after the other, over Unix sockets
(``ipc_kernels``). A notebook whose cell raises (a claim about a trained result that fails, for one) is left as it
was, and the command exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from ipc_kernels import IPCKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

KERNEL = "attn-course"
CELL_TIMEOUT = 300


def execute(path: Path) -> float:
    """Execute one notebook in place; returns its seconds. Raises CellExecutionError without writing."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL,
        kernel_manager_class=IPCKernelManager,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
        record_timing=False,  # no timestamps in the cells: they would change every run
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nbformat.write(notebook, path)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="notebooks to run and save in place")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.notebooks:
        try:
            print(f"{path.name}: {execute(path):.1f} s")
        except CellExecutionError as error:
            failed += 1
            print(f"{path.name}: FAILED, not written\n{str(error).strip().splitlines()[-1]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
