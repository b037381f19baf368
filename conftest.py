"""pytest, every run: under ``--nbval``, kernels talk over Unix sockets in private folders (``tools/ipc_kernels.py``).

nbval starts one kernel per notebook on each pytest-xdist worker; over TCP two of them could pick the same port.
"""

import sys
from pathlib import Path


def pytest_configure(config):
    if getattr(config.option, "nbval", False) or getattr(config.option, "nbval_lax", False):
        sys.path.insert(0, str(Path(__file__).parent / "tools"))
        from ipc_kernels import use_in_nbval

        use_in_nbval()
