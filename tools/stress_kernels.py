#!/usr/bin/env python3
"""Start many kernels in concurrent pairs through the build's and nbval's code paths; fail on any failed start.

    python tools/stress_kernels.py                  40 kernel starts, two at the same moment each time
    python tools/stress_kernels.py --starts 100     more
    python tools/stress_kernels.py --transport tcp  the same over TCP, as before ipc_kernels (for comparison)

Two worker processes line up at a barrier before every start, as the site build's two papermill workers and
nbval's two pytest-xdist workers do when their kernels start together. Each start goes through one of:

- ``build``: ``tools/build_site.py``'s ``execute`` (papermill, nbclient, ``IPCKernelManager``) on a one-cell
  notebook;
- ``nbval``: nbval's own ``RunningKernel`` with the kernel start that the root ``conftest.py`` installs
  (``ipc_kernels.use_in_nbval``), in the current environment's kernel, as ``make nbval`` runs it.

The pairs cycle through build + nbval, build + build and nbval + nbval. Every kernel prints the transport and the
socket folder it was given; the check also fails if a kernel says it is on TCP when IPC was asked for, or if two
kernels shared a folder. A retry counts as a failure here: this check proves that the first start does not fail.
Not part of ``make test`` (it takes about a minute); the README says when to run it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))

PAIRS = [("build", "nbval"), ("build", "build"), ("nbval", "nbval")]
PROBE = (
    "import json, ipykernel.connect\n"
    "info = json.loads(ipykernel.connect.get_connection_info())\n"
    "print('TRANSPORT', info['transport'], info['ip'])"
)


def _use_transport(transport: str) -> None:
    """In this worker, make IPCKernelManager use ``transport`` ("tcp" only to show what the old race looked like)."""
    if transport == "tcp":
        import ipc_kernels

        original = ipc_kernels.IPCKernelManager.__init__

        def over_tcp(self, **kwargs):
            original(self, transport="tcp", ip="127.0.0.1", **kwargs)

        ipc_kernels.IPCKernelManager.__init__ = over_tcp


def _probe_notebook(folder: Path) -> Path:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE))
    notebook.metadata["kernelspec"] = {"name": "attn-course", "display_name": "Python (attention course)"}
    path = folder / "probe.ipynb"
    nbformat.write(notebook, path)
    return path


def _start_build(folder: Path, index: int) -> tuple[str | None, bool, str]:
    """(error or None, retried, the kernel's TRANSPORT line) through build_site.execute."""
    import build_site
    import nbformat

    target = folder / f"out-{index}.ipynb"
    _, error, log = build_site.execute(str(_probe_notebook(folder)), str(target), {}, key="stress")
    retried = build_site.RETRY in log
    said = ""
    if error is None:
        outputs = nbformat.read(target, as_version=4).cells[0].outputs
        said = "".join(o.get("text", "") for o in outputs).strip()
    return error, retried, said


def _start_nbval(folder: Path, index: int) -> tuple[str | None, bool, str]:
    """(error or None, retried, the kernel's TRANSPORT line) through nbval's RunningKernel."""
    import ipc_kernels
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, RunningKernel

    ipc_kernels.use_in_nbval()
    retries = []
    said_before = ipc_kernels.say
    ipc_kernels.say = lambda message: (retries.append(message), said_before(message))
    lines = []
    try:
        kernel = RunningKernel(CURRENT_ENV_KERNEL_NAME, cwd=str(folder))
        try:
            kernel.kc.execute_interactive(
                PROBE, timeout=60, output_hook=lambda msg: lines.append(msg["content"].get("text", ""))
            )
        finally:
            kernel.stop()
        return None, bool(retries), "".join(lines).strip()
    except Exception as error:  # noqa: BLE001 - reported in the table
        return f"{type(error).__name__}: {error}", bool(retries), ""
    finally:
        ipc_kernels.say = said_before


def worker(slot: int, starts: int, barrier, results, transport: str) -> None:
    _use_transport(transport)
    import build_site  # noqa: F401 - imported before the first barrier, so both workers start kernels together
    import nbval.kernel  # noqa: F401

    with tempfile.TemporaryDirectory(prefix=f"stress-{slot}-") as tmp:
        folder = Path(tmp)
        for index in range(slot, starts, 2):
            path = PAIRS[(index // 2) % len(PAIRS)][slot]
            barrier.wait()
            begin = time.perf_counter()
            error, retried, said = (_start_build if path == "build" else _start_nbval)(folder, index)
            results.put(
                {
                    "index": index,
                    "path": path,
                    "seconds": time.perf_counter() - begin,
                    "error": error,
                    "retried": retried,
                    "said": said,
                }
            )


def problems_of(result: dict, transport: str) -> list[str]:
    found = []
    if result["error"]:
        found.append(f"failed: {result['error'].strip().splitlines()[-1][:200]}")
    if result["retried"]:
        found.append("the first start failed (retried)")
    if not result["error"]:
        words = result["said"].split()
        if len(words) != 3 or words[0] != "TRANSPORT":
            found.append(f"the kernel did not say its transport: {result['said']!r}")
        elif words[1] != transport:
            found.append(f"the kernel listens on {words[1]}, not {transport}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=40, help="kernel starts in all (an even number; default 40)")
    parser.add_argument("--transport", choices=["ipc", "tcp"], default="ipc", help="ipc (the course's) or tcp")
    args = parser.parse_args(argv)
    if args.starts < 2 or args.starts % 2:
        parser.error(f"--starts must be an even number >= 2, got {args.starts}")

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=worker, args=(slot, args.starts, barrier, results, args.transport)) for slot in (0, 1)
    ]
    print(f"{args.starts} kernel starts over {args.transport}, two at the same moment each time")
    begin = time.perf_counter()
    for process in workers:
        process.start()
    rows, folders = [], {}
    while len(rows) < args.starts:
        if not any(p.is_alive() for p in workers) and results.empty():
            break
        try:
            row = results.get(timeout=1)
        except Exception:  # noqa: BLE001 - queue.Empty: look whether the workers are still alive
            continue
        rows.append(row)
        row["problems"] = problems_of(row, args.transport)
        words = row["said"].split()
        if len(words) == 3 and args.transport == "ipc":
            folders.setdefault(str(Path(words[2]).parent), []).append(row["index"])
        status = "ok" if not row["problems"] else "; ".join(row["problems"])
        print(f"  start {row['index'] + 1:>3}  {row['path']:<5}  {row['seconds']:5.1f} s  {status}", flush=True)
    for process in workers:
        process.join(timeout=30)
    failures = [r for r in rows if r["problems"]]
    shared = {folder: users for folder, users in folders.items() if len(users) > 1}
    missing = args.starts - len(rows)
    print(
        f"{len(rows)} starts in {time.perf_counter() - begin:.1f} s: {len(failures)} failed "
        f"({sum(r['retried'] for r in rows)} retried), {len(shared)} socket folders shared, {missing} never reported"
    )
    print(json.dumps({"starts": len(rows), "failures": len(failures), "shared_folders": len(shared)}))
    return 1 if failures or shared or missing else 0


if __name__ == "__main__":
    sys.exit(main())
