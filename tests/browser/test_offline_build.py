"""The site builds with the network cut: Sphinx, the theme and the kernels need nothing from outside.

``make html`` downloads nothing at build time: the npm packages come from ``npm ci`` (pinned, installed before
the build proper), everything else from the virtual environment. These tests run the build's two stages again
inside a new network namespace with no interface up (``unshare --net``; ``--map-root-user`` lets a normal user do
it): rendering the prepared sources of the last ``make html`` with Sphinx, and executing notebooks in kernels
started as the build starts them (their Unix sockets need no network either). A stage that tried to fetch a
theme, a font or a script would fail or warn here.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "build" / "sphinx"
UNSHARE = shutil.which("unshare")
sys.path.insert(0, str(ROOT / "tools"))

import build_site  # noqa: E402


def offline(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    if UNSHARE is None:
        pytest.fail("unshare (util-linux) not found: it cuts the network for these tests", pytrace=False)
    probe = subprocess.run([UNSHARE, "--net", "--map-root-user", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"cannot make a network namespace here: {probe.stderr.strip()}", pytrace=False)
    return subprocess.run([UNSHARE, "--net", "--map-root-user", *command], capture_output=True, text=True, **kwargs)


def test_the_network_is_really_cut():
    check = "import socket; s = socket.socket(); s.settimeout(3); print(s.connect_ex(('192.0.2.1', 443)))"
    result = offline([sys.executable, "-c", check])
    assert result.returncode == 0 and result.stdout.strip() not in ("", "0"), result


def test_sphinx_renders_the_site_offline(tmp_path):
    if not (SOURCES / "index.md").is_file():
        pytest.fail(f"{SOURCES} has no sources: run `make html` first", pytrace=False)
    command = build_site.sphinx_command(SOURCES, tmp_path / "site", tmp_path / "doctrees")  # the build's own
    env = {**os.environ, "ATTN_COURSE_STATIC": str(SOURCES / "_static")}
    result = offline(command, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not result.stderr.strip(), f"Sphinx warned with the network cut:\n{result.stderr[-3000:]}"
    built = sorted(p.name for p in (tmp_path / "site").glob("*.html"))
    expected = sorted(p.name for p in (ROOT / "build" / "site").glob("*.html"))
    assert built == expected


def test_kernels_start_and_run_offline():
    """Kernels started through the build's and nbval's code paths, one each, at the same moment, with no network at
    all (the stress test's first pair; ``make test`` and the site build start many more, with the network up)."""
    result = offline([sys.executable, str(ROOT / "tools" / "stress_kernels.py"), "--starts", "2"], timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert '"failures": 0' in result.stdout
