"""The requirements of `make test-oldest`: requirements.txt with every runtime dependency at its lowest version.

The lower bounds in pyproject.toml (``torch>=2.13``) are versions the unit tests pass on. This prints
requirements.txt with each of those packages pinned to its bound instead of its usual version, for a second
environment (``.venv-oldest``) in which ``make test-oldest`` runs the unit tests. Every runtime dependency must have
a lower bound (``>=``) and appear in requirements.txt; anything else is an error, so that a new dependency cannot
skip the oldest test. The tools that only the site, the browser tests, JupyterLab and the linter use
(``NOT_FOR_UNIT_TESTS``) are left out: the unit tests never import them (tests/test_environment.py checks it), and
installing them took the second environment about a quarter of its time.

Usage: python tools/oldest_requirements.py > .venv-oldest/requirements.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOWER = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*>=\s*(?P<version>[0-9][A-Za-z0-9.]*)$")
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==")
# For `make lab`, `make html`, `make test-browser` and `make lint`, never imported by the unit tests nor attn_course.
NOT_FOR_UNIT_TESTS = {"jupyterlab", "sphinx", "myst-nb", "sphinx-book-theme", "sphinx-copybutton", "ruff", "playwright"}


def normal(name: str) -> str:
    """A package name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lower_bounds() -> dict[str, str]:
    """Runtime dependency -> its lowest version, from pyproject.toml."""
    bounds = {}
    for entry in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        match = LOWER.match(entry.strip())
        if match is None:
            raise SystemExit(f"pyproject.toml: dependency {entry!r} must read name>=version (one lower bound)")
        bounds[normal(match["name"])] = match["version"]
    return bounds


def oldest_requirements() -> list[str]:
    """requirements.txt's lines with the runtime dependencies pinned to their lower bounds, without
    ``NOT_FOR_UNIT_TESTS``."""
    bounds = lower_bounds()
    lines, seen = [], set()
    for raw in (ROOT / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        match = PIN.match(line)
        if match and normal(match["name"]) in NOT_FOR_UNIT_TESTS:
            continue
        if match and normal(match["name"]) in bounds:
            name = normal(match["name"])
            seen.add(name)
            line = f"{name}=={bounds[name]}"
        if line:
            lines.append(line)
    missing = sorted(set(bounds) - seen)
    if missing:
        raise SystemExit(f"requirements.txt must pin every runtime dependency of pyproject.toml; missing {missing}")
    return lines


if __name__ == "__main__":
    sys.stdout.write("\n".join(oldest_requirements()) + "\n")
