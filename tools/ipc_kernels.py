"""Kernels that cannot collide: every kernel the course's tools start talks over Unix sockets in a folder of its own.

Why: over TCP, jupyter_client picks "free" ports by binding to them and releasing them, and the kernel binds them
again a moment later. Two kernels started at the same moment (the site build runs two notebooks at a time, nbval
runs on two pytest-xdist workers) can pick the same port, and one of them dies with ``ZMQError: Address already in
use`` (papermill issue #511; ipykernel PR #412 explains the race). A Unix socket in a private temporary folder has
a name that no other kernel can pick, so the race is gone rather than made rarer.

Who uses it:

- ``tools/build_site.py`` (papermill, through nbclient's ``kernel_manager_class`` and ``on_notebook_start``);
- nbval, through the root ``conftest.py``, which calls :func:`use_in_nbval` when pytest runs with ``--nbval``;
- ``benchmarks/notebook_times.py``;
- ``tools/stress_kernels.py``, which starts kernels in concurrent pairs through the paths above.

JupyterLab in ``tests/browser/test_lab.py`` gets the same transport from a test-only config folder
(``KernelManager.transport = "ipc"``, sockets beside each kernel's connection file in a temporary runtime folder).
A user's own ``make lab`` is left as Jupyter sets it up.

A kernel that still fails to start (for another reason: a machine under load, a kernel that crashes on import) is
started again once, fresh, and the retry is printed; a second failure is raised, never hidden.

Kernels that run side by side share the cores (:func:`kernel_env`): with PyTorch's default of one thread per core,
two kernels on two cores run four threads, and OpenMP's waiting threads spin on the cores the other kernel needs.
nbval's kernels (one per pytest-xdist worker), the site build's (``--jobs`` at a time) and the JupyterLab test's each
get ``OMP_NUM_THREADS`` = logical CPUs // kernels at once. A kernel that runs alone (``make lab``, ``make bench``,
``make execute``) keeps PyTorch's default. The tests pass either way: nbval compares only what no thread count can
change (README, "For course developers": what nbval compares). (With two hardware threads per core, logical
CPUs // 2 is PyTorch's own default, so such a machine sees no change.)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from jupyter_client.manager import KernelManager
from jupyter_core.utils import run_sync

# A Unix socket's path is at most 107 bytes on Linux; the kernel adds "-<port>" to the prefix below.
_MAX_SOCKET_PATH = 100


def private_socket_prefix() -> str:
    """A new private folder (mode 0700) and the socket prefix inside it: ``/tmp/attn-kernel-XXXX/kernel``."""
    folder = Path(tempfile.mkdtemp(prefix="attn-kernel-"))
    prefix = folder / "kernel"
    if len(str(prefix)) + 6 > _MAX_SOCKET_PATH:  # TMPDIR is too deep for a socket path: use /tmp
        shutil.rmtree(folder, ignore_errors=True)
        folder = Path(tempfile.mkdtemp(prefix="attn-kernel-", dir="/tmp"))
        prefix = folder / "kernel"
    return str(prefix)


class IPCKernelManager(KernelManager):
    """A ``KernelManager`` whose kernel listens on Unix sockets in a private temporary folder.

    The folder is made when the manager is made and removed when the kernel is shut down for good (not on a
    restart). ``transport`` and ``ip`` given by the caller win, as for any ``KernelManager``.
    """

    def __init__(self, **kwargs):
        if "ip" not in kwargs:
            kwargs.setdefault("transport", "ipc")
        if kwargs.get("transport") == "ipc" and "ip" not in kwargs:
            kwargs["ip"] = private_socket_prefix()  # absolute: the kernel runs in another working directory
        super().__init__(**kwargs)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.transport == "ipc":
            folder = Path(self.ip).parent
            if folder.name.startswith("attn-kernel-"):
                shutil.rmtree(folder, ignore_errors=True)

    cleanup_resources = run_sync(_async_cleanup_resources)  # the base class binds its own coroutine here


def usable_cores() -> int:
    """The logical CPUs this process may run on (its CPU affinity where the system tells it, else every one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def kernel_env(side_by_side: int, environ=None) -> dict[str, str]:
    """The environment for one of ``side_by_side`` kernels that run at once: a copy of ``environ`` (default
    ``os.environ``) with ``OMP_NUM_THREADS`` = usable logical CPUs // ``side_by_side``, at least 1. A kernel that runs
    alone (``side_by_side == 1``) gets the copy unchanged: PyTorch's own default (one thread per physical core). A
    value already set wins.
    """
    if isinstance(side_by_side, bool) or not isinstance(side_by_side, int) or side_by_side < 1:
        raise ValueError(f"side_by_side must be a whole number of kernels >= 1, got {side_by_side!r}")
    env = dict(os.environ if environ is None else environ)
    if side_by_side > 1:
        env.setdefault("OMP_NUM_THREADS", str(max(1, usable_cores() // side_by_side)))
    return env


def xdist_workers() -> int:
    """How many pytest-xdist workers run (``PYTEST_XDIST_WORKER_COUNT``, which xdist sets in each); 1 without xdist.

    A process that a worker starts inherits the variable, so a tool run from a test sees the workers' count too.
    """
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def say(message: str) -> None:
    """Print to the terminal even where stdout is captured (pytest's capture, the build's kernel log)."""
    stream = sys.__stderr__ or sys.stderr
    print(message, file=stream, flush=True)


def start_kernel(kernel_name: str, startup_timeout: float = 60, make_manager=IPCKernelManager, **start_kwargs):
    """Start a kernel and wait until it answers; on failure start a fresh one once. Returns ``(manager, client)``.

    ``start_kwargs`` go to ``KernelManager.start_kernel`` (``cwd``, ``stderr``...); ``make_manager(kernel_name=...)``
    makes the manager.
    """
    for attempt in (1, 2):
        manager = make_manager(kernel_name=kernel_name)
        client = None
        try:
            manager.start_kernel(**start_kwargs)
            client = manager.client()
            client.start_channels()
            client.wait_for_ready(timeout=startup_timeout)
            return manager, client
        except Exception as error:
            if client is not None:
                client.stop_channels()
            if manager.has_kernel:
                manager.shutdown_kernel(now=True)
            else:
                manager.cleanup_resources()
            if attempt == 2:
                raise
            say(f"kernel {kernel_name!r} failed to start ({type(error).__name__}: {error}); retrying once, fresh")
    raise AssertionError("unreachable")


def use_in_nbval() -> None:
    """Make nbval start every kernel with :func:`start_kernel` (Unix sockets, one retry, the cores shared out among
    the pytest-xdist workers' kernels). Idempotent."""
    import nbval.kernel

    if getattr(nbval.kernel.start_new_kernel, "ipc", False):
        return

    def make_manager(**kwargs):  # nbval's spec manager also knows its "current environment" kernel
        return IPCKernelManager(kernel_spec_manager=nbval.kernel.NbvalKernelspecManager(), **kwargs)

    def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):  # nbval's signature
        kwargs["env"] = kernel_env(xdist_workers(), kwargs.get("env"))  # one kernel per worker runs at a time
        return start_kernel(kernel_name, startup_timeout, make_manager=make_manager, **kwargs)

    start_new_kernel.ipc = True
    nbval.kernel.start_new_kernel = start_new_kernel
