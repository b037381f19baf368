"""tools/ipc_kernels.py: kernels on Unix sockets in private folders, one retry that is said aloud, nbval's hook.

These start real kernels (about a second each). The concurrency itself is checked by ``tools/stress_kernels.py``.
"""

import json
import os
import stat
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_site  # noqa: E402
import ipc_kernels  # noqa: E402
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager  # noqa: E402


def _current_env_manager(**kwargs):
    return ipc_kernels.IPCKernelManager(kernel_spec_manager=NbvalKernelspecManager(), **kwargs)


def test_kernel_listens_on_unix_sockets_in_a_private_folder_removed_at_shutdown():
    manager, client = ipc_kernels.start_kernel(CURRENT_ENV_KERNEL_NAME, make_manager=_current_env_manager)
    folder = Path(manager.ip).parent
    try:
        assert manager.transport == "ipc"
        assert folder.name.startswith("attn-kernel-")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, "other users must not reach the sockets"
        sockets = sorted(folder.iterdir())
        assert len(sockets) == 5, sockets  # shell, iopub, stdin, control, heartbeat
        assert all(stat.S_ISSOCK(p.stat().st_mode) for p in sockets)
        reply = client.execute_interactive("x = 6 * 7", timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert not folder.exists()


def test_two_managers_never_share_a_socket_folder():
    first, second = ipc_kernels.IPCKernelManager(), ipc_kernels.IPCKernelManager()
    try:
        assert first.ip != second.ip
        assert Path(first.ip).parent != Path(second.ip).parent
    finally:
        for manager in (first, second):
            manager.cleanup_resources()
    assert not Path(first.ip).parent.exists()


def test_a_caller_may_still_choose_tcp():
    manager = ipc_kernels.IPCKernelManager(transport="tcp", ip="127.0.0.1")
    assert (manager.transport, manager.ip) == ("tcp", "127.0.0.1")


class _FlakyManager:
    """Stands in for a KernelManager: its start fails ``failures`` times in all, then works."""

    failures = 0
    starts = 0

    def __init__(self, kernel_name):
        self.kernel_name = kernel_name
        self.has_kernel = False
        self.cleaned = False

    def start_kernel(self, **kwargs):
        type(self).starts += 1
        if type(self).starts <= type(self).failures:
            raise RuntimeError("Kernel died before replying to kernel_info")
        self.has_kernel = True

    def client(self):
        class Client:
            def start_channels(self):
                pass

            def wait_for_ready(self, timeout):
                pass

        return Client()

    def cleanup_resources(self):
        self.cleaned = True


@pytest.fixture
def flaky():
    _FlakyManager.starts = 0
    return _FlakyManager


def test_one_failed_start_is_retried_with_a_fresh_kernel_and_said(flaky, capfd):
    flaky.failures = 1
    manager, _ = ipc_kernels.start_kernel("attn-course", make_manager=flaky)
    assert flaky.starts == 2 and manager.has_kernel
    said = capfd.readouterr().err
    assert "failed to start (RuntimeError: Kernel died before replying to kernel_info); retrying once" in said


def test_a_second_failed_start_is_raised_not_hidden(flaky, capfd):
    flaky.failures = 2
    with pytest.raises(RuntimeError, match="Kernel died"):
        ipc_kernels.start_kernel("attn-course", make_manager=flaky)
    assert flaky.starts == 2, "one retry, not a loop"
    assert capfd.readouterr().err.count("retrying once") == 1


def test_a_first_start_that_works_is_not_retried(flaky, capfd):
    flaky.failures = 0
    ipc_kernels.start_kernel("attn-course", make_manager=flaky)
    assert flaky.starts == 1
    assert "retrying" not in capfd.readouterr().err


def test_nbval_starts_its_kernels_through_start_kernel(monkeypatch):
    import nbval.kernel

    monkeypatch.setattr(nbval.kernel, "start_new_kernel", nbval.kernel.start_new_kernel)  # undone after the test
    ipc_kernels.use_in_nbval()
    patched = nbval.kernel.start_new_kernel
    ipc_kernels.use_in_nbval()
    assert nbval.kernel.start_new_kernel is patched, "installing twice must not wrap twice"
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")  # as in a worker of `make test`
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    kernel = nbval.kernel.RunningKernel(CURRENT_ENV_KERNEL_NAME)
    try:
        assert kernel.km.transport == "ipc"
        assert Path(kernel.km.ip).parent.name.startswith("attn-kernel-")
        printed = []

        def stdout(msg):
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                printed.append(msg["content"]["text"])

        kernel.kc.execute_interactive(
            "import os; print(os.environ.get('OMP_NUM_THREADS'))", timeout=30, output_hook=stdout
        )
        assert "".join(printed).strip() == str(max(1, ipc_kernels.usable_cores() // 2)), printed
    finally:
        kernel.stop()


@pytest.mark.parametrize(("cores", "side_by_side", "threads"), [(2, 2, 1), (2, 3, 1), (8, 2, 4), (7, 2, 3), (1, 2, 1)])
def test_kernels_run_side_by_side_share_the_cores(monkeypatch, cores, side_by_side, threads):
    monkeypatch.setattr(ipc_kernels, "usable_cores", lambda: cores)
    given = {"PATH": "/bin"}
    env = ipc_kernels.kernel_env(side_by_side, given)
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": str(threads)}
    assert given == {"PATH": "/bin"}, "the caller's mapping must not change"


def test_a_kernel_that_runs_alone_keeps_pytorchs_default(monkeypatch):
    monkeypatch.setattr(ipc_kernels, "usable_cores", lambda: 8)
    given = {"PATH": "/bin"}
    env = ipc_kernels.kernel_env(1, given)
    assert env == given and env is not given


def test_a_thread_count_already_set_wins(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert ipc_kernels.kernel_env(2)["OMP_NUM_THREADS"] == "3"
    assert ipc_kernels.kernel_env(2, {"OMP_NUM_THREADS": "5"})["OMP_NUM_THREADS"] == "5"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_kernel_env_names_a_bad_count(bad):
    with pytest.raises(ValueError, match=r"side_by_side must be a whole number of kernels >= 1, got"):
        ipc_kernels.kernel_env(bad)


def test_without_xdist_a_kernel_runs_alone(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert ipc_kernels.xdist_workers() == 1
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    assert ipc_kernels.xdist_workers() == 4


def test_the_build_workers_share_the_cores(monkeypatch):
    """Each worker of the build's pool has its share in its environment, which its papermill kernels inherit."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with build_site.kernel_pool(2) as pool:
        seen = pool.submit(os.getenv, "OMP_NUM_THREADS").result(timeout=60)
    assert seen == str(max(1, ipc_kernels.usable_cores() // 2))
    assert "OMP_NUM_THREADS" not in os.environ, "the build's own process must keep its environment"


def test_the_build_retries_a_kernel_that_dies_once_and_reports_the_second_death(tmp_path, monkeypatch):
    """A kernel that exits at once fails both starts: the build says it retried and reports the error."""
    spec = tmp_path / "kernels" / "dies-at-start"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-c", "raise SystemExit(3)", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "dies", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setattr(build_site, "KERNEL", "dies-at-start")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nbformat.write(notebook, tmp_path / "in.ipynb")
    seconds, error, log = build_site.execute(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), {}, "key")
    assert error is not None and "died" in error.lower()
    assert log.count(build_site.RETRY) == 1
