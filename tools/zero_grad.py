#!/usr/bin/env python3
"""Prove that the tests still see training: run notebooks under nbval with every optimiser step given zero gradients.

    .venv/bin/python tools/zero_grad.py notebooks/07_*.ipynb notebooks/08_*.ipynb ...

nbval never compares a trained number (README, "For course developers": what nbval compares); what the prose says of
training is asserted in code with ``checks.claim``. This tool checks that those claims have teeth: each kernel starts
with an IPython startup file that registers ``torch.optim.optimizer.register_optimizer_step_pre_hook``, a hook that
zeroes every gradient before every step of every optimiser, so no model learns anything. For each notebook it prints
the cells nbval failed and why, and it exits 0 only when

- every notebook fails, at least one cell with a ``ClaimError`` (a model that never learns is caught), and
- no failure is a "Cell outputs differ" (a compared cell whose output depends on training would fail on another
  processor too: it should be tagged ``nbval-ignore-output`` and its claim asserted).

A failure of another kind (a ``NameError`` after a claim stopped its cell early) is reported, not counted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in each kernel before the notebook's first cell (IPython's startup folder of the profile in IPYTHONDIR).
# IPython reports an error in a startup file and goes on, so the file leaves a mark once its hook is registered.
STARTUP = """\
from pathlib import Path as _Path

from torch.optim.optimizer import register_optimizer_step_pre_hook as _register


def _zero_gradients(optimizer, args, kwargs):
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if parameter.grad is not None:
                parameter.grad.zero_()


_register(_zero_gradients)
(_Path(__file__).parent / "hook-registered").touch()
"""


def zero_grad_env(folder: Path) -> dict[str, str]:
    """The environment for kernels that never learn: an IPython profile in ``folder`` with the zeroing hook."""
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-zero-gradients.py").write_text(STARTUP)
    return {**os.environ, "IPYTHONDIR": str(folder)}


def run_nbval(notebooks: list[Path], env: dict[str, str], workers: int, report: Path) -> str:
    """pytest --nbval on ``notebooks`` (as ``make test`` runs it), a JUnit XML report in ``report``; its output."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={report}"]
    if workers > 1:
        command += ["-n", str(workers), "--dist", "loadfile"]
    command += ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval.cfg", *map(str, notebooks)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return done.stdout + done.stderr


def verdicts(report: Path, notebooks: list[Path]) -> dict[str, dict[str, list[int]]]:
    """Per notebook name, the failed cells by kind: ``claim``, ``differs`` and ``other``."""
    found = {path.name: {"claim": [], "differs": [], "other": []} for path in notebooks}
    for case in ET.parse(report).iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            continue
        text = (failure.get("message") or "") + (failure.text or "")
        kind = "differs" if "Cell outputs differ" in text else "claim" if "ClaimError" in text else "other"
        notebook = next(name for name in found if case.get("classname", "").endswith(name))  # "notebooks.07_….ipynb"
        cell = int(case.get("name", "Cell -1").rsplit(" ", 1)[-1])
        found[notebook][kind].append(cell)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2, as make test)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="attn-zero-grad-") as folder:
        report = Path(folder) / "report.xml"
        output = run_nbval(args.notebooks, zero_grad_env(Path(folder) / "ipython"), args.workers, report)
        if not report.exists():
            print(output[-3000:])
            return 2
        found = verdicts(report, args.notebooks)
        if not (Path(folder) / "ipython" / "profile_default" / "startup" / "hook-registered").exists():
            print("the zero-gradient hook was never registered in a kernel: nothing was proved")
            return 2
    ok = True
    for name, kinds in found.items():
        caught = bool(kinds["claim"]) and not kinds["differs"]
        ok &= caught
        print(
            f"{name}: {'caught' if caught else 'NOT CAUGHT'}: claims failed in cells {kinds['claim'] or 'none'}; "
            f"compared outputs differ in cells {kinds['differs'] or 'none'}; other failures in cells "
            f"{kinds['other'] or 'none'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
