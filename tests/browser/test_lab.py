"""Every notebook in a real JupyterLab, driven by Debian's chromium: it runs without an error, and every slider works.

nbval runs the notebooks without a front end, so it cannot see whether a slider redraws its figure. Here a
JupyterLab from this environment serves a temporary copy of ``notebooks/`` on 127.0.0.1, with test-only settings in
temporary folders (the user's Jupyter config, settings and workspaces are not read or written; ``make lab`` keeps
its own secure defaults), in one browser tab that each notebook opens in and closes in turn. nbval and the site build
run every cell of every notebook; what JupyterLab adds is the widgets. So each notebook is served with the code cells
its slider panels need (``panel_cells``: the cells that make a panel, and those that bind or change what they read,
found by reading the code), and the test runs them all in the ``attn-course`` kernel and asserts that none shows an
error. Notebooks that train a model run here with fewer epochs or steps, on fewer examples (``QUICK``, injected by
papermill as a student's own values would be): the same code paths and widgets in a fraction of the time. Then, in
every slider panel, it moves each control once (a key press on a slider, another option in a dropdown, a click on a
checkbox...) and asserts that the panel's figure is redrawn with different image data and that no error appears. A
screenshot of each notebook goes to ``build/screenshots/lab/``, the server's log to ``build/lab-server-<worker>.log``.

Run it alone with ``.venv/bin/pytest -p no:xdist tests/browser/test_lab.py``.
"""

import ast
import base64
import builtins
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import papermill
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from ipc_kernels import kernel_env, xdist_workers  # noqa: E402

NOTEBOOKS = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"))
BUILD = ROOT / "build"
# One server per pytest-xdist worker that runs these tests (make test-browser spreads them over BROWSER_WORKERS,
# three by default), one log each.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... or "" without pytest-xdist
SERVER_LOG = BUILD / f"lab-server{'-' + WORKER if WORKER else ''}.log"
SCREENSHOTS = BUILD / "screenshots" / "lab"
KERNEL = "attn-course"

# Parameters that make a notebook's training short: the notebook's own parameter names (a test checks them).
QUICK = {
    "07_attention_in_seq2seq.ipynb": {"EPOCHS": 2, "NUM_TRAIN": 600},
    "08_tiny_transformer.ipynb": {"EPOCHS": 2, "NUM_TRAIN": 600},
    "09_decoder_only_model.ipynb": {"STEPS": 40},
}

SERVER_START_S = 90  # JupyterLab's first start on a busy 2-core machine
KERNEL_READY_S = 90
RUN_ALL_S = 240  # every notebook runs in well under 30 s; this is the limit of a stuck run, not a target
REDRAW_S = 20  # one figure redrawn after one control moved
QUIET_S = 0.3  # no kernel message for this long after a redraw: it is complete
SETTLE_S = 1.0  # the same after running the cells, before the first control moves
MIN_INK = 0.002  # share of a figure's pixels that differ from the background: even bare axes have more

# Test-only user settings of JupyterLab (written into a temporary JUPYTERLAB_SETTINGS_DIR). Never fetch news
# nor check for updates, and do not ask about it in a toast that would cover the notebook in screenshots.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

# Runs once in each page: small functions over JupyterLab's notebook model and the widgets' DOM.
# Panels and controls are tagged with data-attn-panel / data-attn-control so Playwright can find them.
PAGE_HELPERS = r"""
() => {
  const app = window.jupyterapp;
  const notebook = () => app.shell.currentWidget;
  const squash = (s) => (s || '').replace(/[\u200b\s]+/g, ' ').trim();
  const STDERR = '[data-mime-type="application/vnd.jupyter.stderr"]';
  const WIDGET = 'application/vnd.jupyter.widget-view+json';
  const hash = (s) => {  // FNV-1a, to name an image in a message without sending it
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
    return h.toString(16).padStart(8, '0');
  };
  const kindOf = (el) => {
    const c = el.classList;
    if (c.contains('widget-slider')) return 'slider';  // Int/Float/FloatLog/Selection(Range)Slider, h or v
    if (c.contains('widget-dropdown')) return 'dropdown';
    if (c.contains('widget-checkbox')) return 'checkbox';
    if (c.contains('widget-toggle-buttons')) return 'toggle-buttons';
    if (c.contains('widget-toggle-button')) return 'toggle-button';
    if (c.contains('widget-radio')) return 'radio';
    if (c.contains('widget-html') || c.contains('widget-htmlmath') || c.contains('widget-label')) return 'display';
    return 'unknown';
  };
  const labelOf = (el) => {
    const own = el.querySelector(':scope > .widget-label');
    const basic = el.querySelector('.widget-label-basic');
    return squash(own && own.textContent) || squash(basic && basic.textContent) || squash(el.title)
      || squash(el.textContent).slice(0, 40);
  };
  const outputOf = (panel) => [...panel.children].find((c) => c.classList.contains('widget-output'));
  const panelEl = (k) => document.querySelector(`[data-attn-panel="${k}"]`);
  let lastMessage = performance.now();  // any message to or from the kernel (execute, comm, status...)
  notebook().sessionContext.session.kernel.anyMessage.connect(() => { lastMessage = performance.now(); });
  window.__attnTest = {
    kernel() {
      const s = notebook().sessionContext;
      const k = s.session && s.session.kernel;
      return k ? { name: k.name, status: k.status, id: k.id } : null;
    },
    quietMs() {
      return performance.now() - lastMessage;
    },
    busyPrompts() {
      return [...notebook().node.querySelectorAll('.jp-InputPrompt')].filter((p) => p.textContent.includes('*')).length;
    },
    runThrough(last, timeoutMs) {  // cells 1..last (1-based), as "Run All Above" from the cell after them
      const content = notebook().content;
      const run = last >= content.widgets.length
        ? app.commands.execute('notebook:run-all-cells')
        : (content.activeCellIndex = last, app.commands.execute('notebook:run-all-above'));
      const late = new Promise((resolve) => setTimeout(() => resolve('timeout'), timeoutMs));
      return Promise.race([run, late]);
    },
    cells() {
      return notebook().content.widgets.map((cell, i) => {
        const m = cell.model;
        const info = { index: i + 1, type: m.type, source: m.sharedModel.getSource() };
        if (m.type !== 'code') return info;
        info.count = m.executionCount;
        info.outputs = [];
        for (let j = 0; j < m.outputs.length; j++) {
          const o = m.outputs.get(j).toJSON();
          info.outputs.push({
            type: o.output_type, name: o.name || null, ename: o.ename || null, evalue: o.evalue || null,
            text: Array.isArray(o.text) ? o.text.join('') : (o.text || null),
            widget: !!(o.data && o.data[WIDGET]),
          });
        }
        // a widget view renders as a .jupyter-widgets element right inside the cell's output (no mime attribute)
        const shown = '.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output';
        info.renderedWidgets = [...cell.node.querySelectorAll(shown)]
          .filter((el) => el.firstElementChild && el.firstElementChild.classList.contains('jupyter-widgets')
            && !el.textContent.includes('Error displaying widget'))
          .length;
        info.domErrors = [...cell.node.querySelectorAll(`.jp-Cell-outputArea ${STDERR}`)]
          .filter((el) => !el.closest('.widget-output')).map((el) => el.textContent.slice(-4000));
        return info;
      });
    },
    panels() {
      const panels = [];
      notebook().content.widgets.forEach((cell, i) => {
        for (const output of cell.node.querySelectorAll('.widget-output')) {
          const panel = output.parentElement;
          if (output.parentElement.closest('.widget-output') || !panel.classList.contains('widget-box')) continue;
          const k = panels.length + 1;
          panel.dataset.attnPanel = String(k);
          const controls = [];
          const walk = (node) => {
            for (const child of node.children) {
              if (child === output) continue;
              // a box's children are Lumino widgets; not all carry .jupyter-widgets (SelectionSlider does not)
              const widget = child.classList.contains('jupyter-widgets') || child.classList.contains('lm-Widget');
              if (child.classList.contains('widget-box') || !widget) {
                walk(child);
                continue;
              }
              const kind = kindOf(child);
              if (kind === 'display') continue;
              const id = `${k}-${controls.length + 1}`;
              child.dataset.attnControl = id;
              controls.push({ id, kind, label: labelOf(child), classes: child.className });
            }
          };
          walk(panel);
          panels.push({ panel: k, cell: i + 1, controls });
        }
      });
      return panels;
    },
    figure(k) {  // what the panel's output shows now
      const output = outputOf(panelEl(k));
      const imgs = [...output.querySelectorAll('img')];
      const last = imgs[imgs.length - 1];
      return {
        images: imgs.length,
        each: imgs.map((img) => `${'attnSeen' in img.dataset ? 'old' : 'new'} image `
          + `${img.naturalWidth}x${img.naturalHeight} px ${Math.round(img.src.length / 1024)} kB`),
        fresh: !!last && !('attnSeen' in last.dataset),
        same: !!last && last.src === window.__attnTest.seen[k],
        hash: last ? hash(last.src) : null,
        bytes: last ? last.src.length : 0,
        png: !!last && last.src.startsWith('data:image/png;base64,'),
        errors: [...output.querySelectorAll(STDERR)].map((el) => el.textContent.slice(-4000)),
      };
    },
    seen: {},
    markSeen(k) {  // remember the current image; a redraw replaces the <img> with a new, unmarked one
      const imgs = [...outputOf(panelEl(k)).querySelectorAll('img')];
      imgs.forEach((img) => { img.dataset.attnSeen = '1'; });
      window.__attnTest.seen[k] = imgs.length ? imgs[imgs.length - 1].src : null;
    },
    async ink(k) {  // decode the panel's last image; the share of its pixels that differ from its corner's colour
      const imgs = [...outputOf(panelEl(k)).querySelectorAll('img')];
      const img = imgs[imgs.length - 1];
      if (!img) return { decoded: false, width: 0, height: 0, inked: 0 };
      try { await img.decode(); } catch (error) { return { decoded: false, width: 0, height: 0, inked: 0 }; }
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const context = canvas.getContext('2d');
      context.drawImage(img, 0, 0);
      const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
      let inked = 0;
      for (let i = 0; i < data.length; i += 4) {
        const far = Math.abs(data[i] - data[0]) + Math.abs(data[i + 1] - data[1]) + Math.abs(data[i + 2] - data[2]);
        if (far > 24) inked++;
      }
      return { decoded: true, width: canvas.width, height: canvas.height, inked: inked / (data.length / 4) };
    },
    src(k) {
      const imgs = [...outputOf(panelEl(k)).querySelectorAll('img')];
      return imgs.length ? imgs[imgs.length - 1].src : null;
    },
    redrawnOrFailed(k) {
      const f = window.__attnTest.figure(k);
      return f.fresh || f.errors.length > 0;
    },
    value(id) {  // the control's state (raw) and what it shows (the readout of a slider)
      const el = document.querySelector(`[data-attn-control="${id}"]`);
      const kind = kindOf(el);
      let shown = squash(el.textContent);
      let raw = shown;
      if (kind === 'slider') {  // aria-valuetext is exact (aria-valuenow is rounded to 0.1: useless on a log slider)
        raw = [...el.querySelectorAll('.noUi-handle')].map((h) => h.getAttribute('aria-valuetext')).join(', ');
        const readout = el.querySelector('.widget-readout');
        shown = squash(readout && readout.textContent) || raw;
      } else if (kind === 'dropdown') {
        const s = el.querySelector('select');
        raw = shown = s.selectedIndex < 0 ? '' : s.options[s.selectedIndex].text;
      } else if (kind === 'checkbox') {
        raw = shown = String(el.querySelector('input[type="checkbox"]').checked);
      } else if (kind === 'toggle-buttons') {
        raw = shown = squash([...el.querySelectorAll('button.mod-active')].map((b) => b.textContent).join(', '));
      } else if (kind === 'toggle-button') {
        raw = shown = String(el.classList.contains('mod-active'));
      } else if (kind === 'radio') {
        const r = el.querySelector('input[type="radio"]:checked');
        raw = shown = r ? r.value : '';
      }
      return { raw, shown };
    },
  };
  return true;
}
"""


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    runtime: Path  # the server's runtime folder: its own jpserver file, the kernels' connection files and sockets

    def kernel_transport(self, kernel_id: str) -> tuple[str, list[str]]:
        """The transport in a kernel's connection file, and its socket files (none over TCP)."""
        info = json.loads((self.runtime / f"kernel-{kernel_id}.json").read_text())
        return info["transport"], sorted(p.name for p in self.runtime.glob(f"kernel-{kernel_id}-ipc-*"))

    def api(self, path: str, method: str = "GET", timeout: float = 10):
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels_of(self, notebook: str) -> None:
        for session in self.api("/api/sessions"):
            if session.get("path") == notebook:
                self.api(f"/api/sessions/{session['id']}", method="DELETE", timeout=30)


def _log_tail(lines: int = 30) -> str:
    try:
        return "\n".join(SERVER_LOG.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _stop(process: subprocess.Popen, lab: Lab) -> None:
    """Shut the server down through its API (it shuts its kernels down), then signals as a fallback."""
    if process.poll() is None:
        try:
            lab.api("/api/shutdown", method="POST", timeout=10)
        except (OSError, urllib.error.URLError):
            pass
        try:
            process.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            pass
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)  # the server's own process group (start_new_session below)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


# Test-only Jupyter server config (in a temporary JUPYTER_CONFIG_DIR): kernels talk over Unix sockets named after
# their connection files in the private runtime folder, so two kernels can never pick the same TCP port
# (tools/ipc_kernels.py explains the race). `make lab` keeps Jupyter's defaults.
SERVER_CONFIG = {"KernelManager": {"transport": "ipc"}}
MAX_SOCKET_PATH = 100  # a Unix socket path has at most 107 bytes; a kernel's is runtime/kernel-<uuid>-ipc-<n>


@pytest.fixture(scope="session")
def lab():
    """A JupyterLab from this environment on 127.0.0.1, serving a temporary copy of the numbered notebooks."""
    BUILD.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attn-lab-", dir="/tmp") as tmp:
        tmp = Path(tmp)
        root = tmp / "notebooks"
        root.mkdir()
        for notebook in NOTEBOOKS:
            if notebook.name in QUICK:
                papermill.execute_notebook(
                    notebook,
                    root / notebook.name,
                    parameters=QUICK[notebook.name],
                    prepare_only=True,
                    kernel_name=KERNEL,
                    progress_bar=False,
                )
            else:
                shutil.copy2(notebook, root / notebook.name)
            served = json.loads((root / notebook.name).read_text(encoding="utf-8"))
            served["cells"] = [served["cells"][i] for i in panel_cells(served["cells"])]
            if notebook.name in QUICK:  # trained too briefly for the claims, which nbval and the site build check
                for cell in served["cells"]:
                    if cell["cell_type"] == "code":
                        cell["source"] = without_claims("".join(cell["source"]))
            (root / notebook.name).write_text(json.dumps(served, indent=1), encoding="utf-8")
        dirs = {name: tmp / name for name in ("config", "data", "runtime", "settings", "workspaces")}
        for path in dirs.values():
            path.mkdir()
        assert len(str(dirs["runtime"] / f"kernel-{'0' * 36}-ipc-4")) <= MAX_SOCKET_PATH, dirs["runtime"]
        (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(SERVER_CONFIG))
        for relative, settings in LAB_SETTINGS.items():
            target = dirs["settings"] / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(settings))
        env = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "MPLBACKEND"))}
        env = kernel_env(xdist_workers(), env)  # each worker's kernel shares the cores with the other's
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),  # no user-level kernels: attn-course comes from this environment
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
        )
        token = os.urandom(24).hex()
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=0",  # the system picks a free port while the server binds it: no port to race for
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run all cells, read the cell outputs
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",  # no extension listings fetched from a package index
        ]
        if os.geteuid() == 0:
            command.append("--allow-root")
        with open(SERVER_LOG, "wb") as log:
            process = subprocess.Popen(
                command, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            lab = Lab(url="", token=token, root=root, runtime=dirs["runtime"])
            try:
                deadline = time.monotonic() + SERVER_START_S
                while True:
                    if process.poll() is not None:
                        pytest.fail(
                            f"jupyter lab exited with code {process.returncode} before serving; "
                            f"{SERVER_LOG} ends with:\n{_log_tail()}",
                            pytrace=False,
                        )
                    try:
                        lab.url = lab.url or _served_url(dirs["runtime"], process.pid)
                        if lab.url:
                            lab.api("/api/status", timeout=2)
                            break
                    except (OSError, urllib.error.URLError):
                        pass
                    if time.monotonic() > deadline:
                        pytest.fail(
                            f"jupyter lab did not answer within {SERVER_START_S} s; {SERVER_LOG} ends with:\n"
                            f"{_log_tail()}",
                            pytrace=False,
                        )
                    time.sleep(0.25)
                specs = lab.api("/api/kernelspecs")["kernelspecs"]
                if KERNEL not in specs:
                    pytest.fail(
                        f"JupyterLab has no kernel named {KERNEL!r} (it has {sorted(specs)}): run `make setup`",
                        pytrace=False,
                    )
                yield lab
            finally:
                _stop(process, lab)


class LabTab:
    """One browser tab with JupyterLab open, shared by the notebooks in turn.

    JupyterLab's start in a browser (its scripts, settings and extensions) takes seconds; it is paid once, and each
    notebook opens in the running application and is closed, its kernel shut down, when its test ends. A test that
    fails closes the tab, so the next notebook starts in a fresh one."""

    def __init__(self, lab: Lab, browser, new_watched_page):
        self.lab, self.browser, self.new_watched_page = lab, browser, new_watched_page
        self.context, self.watched = None, None

    def open(self, name: str):
        """The watched page with notebook ``name`` opening in it (a fresh record of browser problems)."""
        if self.watched is None:
            self.context, self.watched = self.new_watched_page(self.browser)
            # A workspace of its own (new, empty), so that nothing is restored and started alongside.
            self.watched.page.goto(
                f"{self.lab.url}/lab/workspaces/test-{os.getpid()}/tree/{quote(name)}?token={self.lab.token}"
            )
        else:
            self.watched.forget()
            self.watched.page.evaluate(
                "name => window.jupyterapp.commands.execute('docmanager:open', {path: name, factory: 'Notebook'})",
                name,
            )
        return self.watched

    def close_notebook(self, name: str, failed: bool) -> None:
        """Close the notebook without saving (the copy is a temporary one) and shut its kernel down; after a failure,
        close the tab too."""
        if self.watched is not None and not failed:
            try:
                self.watched.page.evaluate(CLOSE_NOTEBOOK_JS)
            except Exception as error:  # a tab that cannot close its notebook is not reused
                print(f"{name}: could not close the notebook in JupyterLab, opening a new tab: {error}")
                failed = True
        if failed:
            self.close()
        try:
            self.lab.shutdown_kernels_of(name)
        except (OSError, urllib.error.URLError) as error:
            print(f"{name}: could not shut its kernel down: {error}")

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
        self.context, self.watched = None, None


# Every open document closed with its changes dropped (no "save your work?" dialog), and its kernel shut down.
CLOSE_NOTEBOOK_JS = """
async () => {
  const app = window.jupyterapp;
  for (const widget of [...app.shell.widgets('main')]) {
    if (widget.context) {
      widget.context.model.dirty = false;
      if (widget.sessionContext) await widget.sessionContext.shutdown();
    }
    widget.dispose();
  }
  return true;
}
"""


@pytest.fixture(scope="module")
def lab_tab(lab, browser, new_watched_page):
    tab = LabTab(lab, browser, new_watched_page)
    yield tab
    tab.close()


def _served_url(runtime: Path, pid: int) -> str:
    """The server's URL from the file it writes once it listens (``jpserver-<pid>.json``), or "" before that."""
    info = runtime / f"jpserver-{pid}.json"
    if not info.exists():
        return ""
    served = json.loads(info.read_text())
    return f"http://127.0.0.1:{served['port']}"


def _last_line(text: str) -> str:
    """The line of a traceback or warning that says what went wrong (``ZeroDivisionError: division by zero``)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    said = [line for line in lines if re.match(r"^[\w.]*(Error|Exception|Warning|Interrupt)\b", line)]
    return (said or lines or ["(empty)"])[-1][:300]


def _fail_if(problems: list[str], title: str) -> None:
    if problems:
        pytest.fail("\n  ".join([title, *problems]), pytrace=False)


def _describe_cell(cell: dict) -> str:
    first = next((line for line in cell["source"].splitlines() if line.strip()), "")
    count = cell.get("count")
    prompt = f"In [{count}]" if count is not None else "not run"
    return f"cell {cell['index']} ({prompt}: {first.strip()[:60]!r})"


PANEL_CALL = re.compile(r"^[^#\n]*\bslider_panel\(", re.M)  # a code line that calls slider_panel (not a comment)


def last_panel_cell(notebook: Path) -> int:
    """The 1-based index of the notebook's last cell that calls slider_panel; every cell when none does."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    calls = [i + 1 for i, c in enumerate(cells) if c["cell_type"] == "code" and PANEL_CALL.search("".join(c["source"]))]
    return calls[-1] if calls else len(cells)


def _cell_names(source: str) -> dict[str, set[str]] | None:
    """What a code cell does to global names; None if the cell is not plain Python (a cell magic, or code that does not
    parse). IPython's ``%`` and ``!`` lines are left out.

    - ``sure``: bound by a statement at the cell's top level (assigned, imported, a function or class defined);
    - ``nested``: bound inside a loop, branch or ``with``, which may not run;
    - ``changed``: changed in part (``x.a = ...``, ``x[i] = ...``, ``x += ...``), or an object whose method is
      called as a statement (``rows.append(...)``, ``model.eval()``), which may change it in place;
    - ``read``: loaded before the cell binds it, function bodies included (they run when called), not counting a
      function's, lambda's or comprehension's own names;
    - ``imported``: names of modules and objects the cell imports.
    """
    if source.lstrip().startswith("%%"):  # a cell magic: the cell is the magic's input, not Python
        return None
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    sure, nested, changed, imported = set(), set(), set(), set()
    reads, bound_at = [], {}  # (name, where) of each load; name -> where the cell first binds it

    def base(node) -> str | None:  # x in x, x.a, x[i], x.a[i].b
        while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def at(node, end: bool = False) -> tuple[int, int]:
        return (node.end_lineno, node.end_col_offset) if end else (node.lineno, node.col_offset)

    def bind(target, top: bool, where: tuple[int, int]) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                bind(element, top, where)
        elif isinstance(target, ast.Name):
            (sure if top else nested).add(target.id)
            bound_at[target.id] = min(bound_at.get(target.id, where), where)
        elif (name := base(target)) is not None:
            changed.add(name)

    def stored(node) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def visit(node, top: bool, local: frozenset) -> None:
        """``top``: a statement the cell surely runs once it starts (not in a loop, branch, ``with`` or function);
        ``local``: names of an enclosing function, lambda or comprehension, not the cell's."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
            reads.append((node.id, at(node)))
        if not local:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, top, at(node, end=True))
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
                bind(node.target, top and isinstance(node, ast.AnnAssign), at(node, end=True))
            elif isinstance(node, ast.AugAssign):
                changed.add(base(node.target))
                reads.append((base(node.target), at(node)))
            elif isinstance(node, ast.For | ast.AsyncFor):
                bind(node.target, False, at(node.target, end=True))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bind(node.optional_vars, False, at(node.optional_vars, end=True))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    (sure if top else nested).add(name)
                    bound_at.setdefault(name, at(node))
                    imported.add(name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                (sure if top else nested).add(node.name)
                bound_at.setdefault(node.name, at(node))
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                if isinstance(node.value.func, ast.Attribute) and (name := base(node.value.func.value)) is not None:
                    changed.add(name)
        inner = local
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = local | {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            inner |= (
                set().union(*(stored(statement) for statement in node.body)) if isinstance(node.body, list) else set()
            )
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            inner = local | set().union(*(stored(g.target) for g in node.generators))
        for child in ast.iter_child_nodes(node):
            in_scope = inner if child not in getattr(node, "decorator_list", ()) else local
            visit(child, top and isinstance(node, ast.Module), frozenset(in_scope))

    visit(tree, True, frozenset())
    changed.discard(None)
    read = {name for name, where in reads if name is not None and (name not in bound_at or where < bound_at[name])}
    return {"sure": sure, "nested": nested, "changed": changed, "read": read, "imported": imported}


def without_claims(source: str) -> str:
    """``source`` with each ``checks.claim(...)`` statement (the whole of its lines) replaced by ``pass`` at its
    indentation, so every block stays valid. A QUICK run trains too briefly for a notebook's claims about training."""
    lines = source.splitlines(keepends=True)
    for node in sorted(ast.walk(ast.parse(source)), key=lambda n: -getattr(n, "lineno", 0)):
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and ast.unparse(call.func) in ("checks.claim", "claim"):
            indent = lines[node.lineno - 1][: node.col_offset]
            lines[node.lineno - 1 : node.end_lineno] = [f"{indent}pass\n"]
    return "".join(lines)


def panel_cells(cells: list[dict]) -> list[int]:
    """The 0-based indices of the code cells the notebook's slider panels need, in order; every code cell when no cell
    calls slider_panel.

    Kept: every cell that calls slider_panel, the parameters cells, any cell that is not plain Python with every cell
    before it (what it reads is unknown), and, going back from the last panel, every cell that may change a name a
    later kept cell reads, or binds it (surely; or inside a loop or branch when no earlier cell surely binds it), until
    a cell that surely binds it (``_cell_names``). So no name a kept cell reads is left unbound. What a dropped cell
    changes without naming it (a random generator's state, a setting) may make a panel's picture differ from the whole
    notebook's.
    """
    code = [i for i, cell in enumerate(cells) if cell["cell_type"] == "code"]
    sources = {i: "".join(cells[i]["source"]) for i in code}
    panels = [i for i in code if PANEL_CALL.search(sources[i])]
    if not panels:
        return code
    names = {i: _cell_names(sources[i]) for i in code if i <= panels[-1]}
    modules = set().union(*(found["imported"] for found in names.values() if found is not None))  # never changed
    kept, needed = [], set()
    for i in sorted(names, reverse=True):
        found = names[i]
        if found is None:  # what it reads is unknown: it and every cell before it are kept
            return sorted(kept + [j for j in code if j <= i])
        tags = set(cells[i].get("metadata", {}).get("tags", []))
        earlier = set().union(*(names[j]["sure"] for j in names if j < i and names[j] is not None))
        touches = found["sure"] | found["changed"] - modules | found["nested"] - earlier
        if i in panels or {"parameters", "injected-parameters"} & tags or touches & needed:
            kept.append(i)
            needed = needed - found["sure"] | found["read"]
    return sorted(kept)


def _cell_problems(cells: list[dict], last: int) -> list[str]:
    """Every code cell up to cell ``last`` ran, shows no error and no stderr, and every widget it made is rendered as
    a widget."""
    problems, not_run = [], []
    for cell in cells[:last]:
        if cell["type"] != "code" or not cell["source"].strip():
            continue
        where = _describe_cell(cell)
        if cell["count"] is None:
            not_run.append(where)
            continue
        for output in cell["outputs"]:
            if output["type"] == "error":
                problems.append(f"{where} shows an error: {output['ename']}: {output['evalue']}")
            elif output["type"] == "stream" and output["name"] == "stderr":
                problems.append(f"{where} writes to stderr: {_last_line(output['text'] or '')}")
        widgets = sum(output["widget"] for output in cell["outputs"])
        if cell["renderedWidgets"] != widgets:
            problems.append(
                f"{where} made {widgets} widget(s) but JupyterLab renders {cell['renderedWidgets']} "
                "(widget extension missing, or 'Error displaying widget')"
            )
        if not any(output["type"] in ("error", "stream") for output in cell["outputs"]):
            problems += [f"{where} shows an error: {_last_line(text)}" for text in cell["domErrors"]]
    if not_run:
        more = f" and {len(not_run) - 1} later code cell(s)" if len(not_run) > 1 else ""
        problems.append(f"{not_run[0]}{more} did not run")
    return problems


def _move(page, control: dict) -> None:
    """Change one control the way a person would: a key press, another option, a click."""
    element = page.locator(f'[data-attn-control="{control["id"]}"]')
    element.scroll_into_view_if_needed()
    kind = control["kind"]
    if kind == "slider":
        handle = element.locator(".noUi-handle").first
        # aria-valuetext is the exact position; aria-valuenow and aria-valuemax are rounded to 0.1
        before = handle.get_attribute("aria-valuetext")
        at_top = float(before) >= float(handle.get_attribute("aria-valuemax"))
        keys = ("ArrowLeft", "ArrowRight") if at_top else ("ArrowRight", "ArrowLeft")
        handle.focus()
        handle.press(keys[0])
        if handle.get_attribute("aria-valuetext") == before:  # at the end after all, or keys that run the other way
            handle.press(keys[1])
    elif kind == "dropdown":
        select = element.locator("select")
        count = select.locator("option").count()
        if count < 2:
            raise AssertionError(f"the dropdown has {count} option(s): nothing to choose")
        index = select.evaluate("s => s.selectedIndex")
        select.select_option(index=(index + 1) % count)
    elif kind == "checkbox":
        element.locator('input[type="checkbox"]').click()
    elif kind == "toggle-buttons":
        element.locator("button:not(.mod-active)").first.click()
    elif kind == "toggle-button":
        element.click()
    elif kind == "radio":
        element.locator('input[type="radio"]:not(:checked)').first.click()
    else:
        raise AssertionError(
            f"unsupported control type (classes {control['classes']!r}): teach tests/browser/test_lab.py to move it"
        )


def _wait_idle(page, timeout_s: float, quiet_s: float) -> None:
    """Until the kernel is idle, no cell waits to run, and no kernel message came for ``quiet_s``.

    The quiet spell lets the messages that the front end sends by itself (a slider snapping its value to its
    step when it is first shown, for instance) be handled, as they would be before a person's next move.
    """
    page.wait_for_function(
        "q => { const t = window.__attnTest; const k = t.kernel(); return k && k.status === 'idle' && "
        "t.busyPrompts() === 0 && t.quietMs() >= q; }",
        arg=quiet_s * 1000,
        timeout=timeout_s * 1000,
        polling=100,
    )


def _blank(page, k: int, keep: Path) -> str:
    """Why the panel's figure cannot be seen (not a decodable image, or one colour all over), or "".

    The image in question is written to ``keep`` for a look.
    """
    ink = page.evaluate("k => window.__attnTest.ink(k)", k)
    if ink["decoded"] and ink["inked"] >= MIN_INK:
        return ""
    src = page.evaluate("k => window.__attnTest.src(k)", k) or ""
    if src.startswith("data:image/png;base64,"):
        keep.write_bytes(base64.b64decode(src.split(",", 1)[1]))
    if not ink["decoded"]:
        return f"its image cannot be decoded (kept in {keep.relative_to(ROOT)})"
    return (
        f"its {ink['width']}x{ink['height']} px image is blank ({ink['inked']:.3%} of the pixels drawn; "
        f"kept in {keep.relative_to(ROOT)})"
    )


def _exercise_panel(page, watched, notebook: Path, panel: dict) -> int:
    """Move every control of one panel once; return how many were moved."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    name, k = notebook.name, panel["panel"]
    keep = SCREENSHOTS / f"{notebook.stem}-panel{k}-figure.png"
    start = page.evaluate("k => window.__attnTest.figure(k)", k)
    if start["images"] == 0 or start["errors"]:
        pytest.fail(
            f"{name}: panel {k} (cell {panel['cell']}) shows no figure before any control moved"
            + (f": {_last_line(start['errors'][0])}" if start["errors"] else ""),
            pytrace=False,
        )
    if blank := _blank(page, k, keep):
        pytest.fail(f"{name}: panel {k} (cell {panel['cell']}) before any control moved: {blank}", pytrace=False)
    if not panel["controls"]:
        pytest.fail(f"{name}: panel {k} (cell {panel['cell']}) has no control", pytrace=False)
    for control in panel["controls"]:
        where = f"{name}: control {control['label']!r} in panel {k} (cell {panel['cell']})"
        page.evaluate("k => window.__attnTest.markSeen(k)", k)
        before_value = page.evaluate("id => window.__attnTest.value(id)", control["id"])
        before = page.evaluate("k => window.__attnTest.figure(k)", k)
        known = len(watched.problems())
        try:
            _move(page, control)
        except AssertionError as error:
            pytest.fail(f"{where}: {error}", pytrace=False)
        after_value = page.evaluate("id => window.__attnTest.value(id)", control["id"])
        if after_value["raw"] == before_value["raw"]:
            pytest.fail(
                f"{where} ({control['kind']}) did not move: it still shows {before_value['shown']!r}", pytrace=False
            )
        moved = f"{before_value['shown']!r} -> {after_value['shown']!r}"
        try:
            page.wait_for_function(
                "k => window.__attnTest.redrawnOrFailed(k)", arg=k, timeout=REDRAW_S * 1000, polling=100
            )
        except PlaywrightTimeout:
            pytest.fail(f"{where}: figure did not change within {REDRAW_S} s ({moved})", pytrace=False)
        try:
            _wait_idle(page, REDRAW_S, QUIET_S)
        except PlaywrightTimeout:
            pytest.fail(f"{where}: the kernel was still busy {REDRAW_S} s after the redraw ({moved})", pytrace=False)
        after_value = page.evaluate("id => window.__attnTest.value(id)", control["id"])  # readouts follow the model
        moved = f"{before_value['shown']!r} -> {after_value['shown']!r}"
        after = page.evaluate("k => window.__attnTest.figure(k)", k)
        if after["errors"]:
            pytest.fail(
                f"{where}: the panel shows an error after {moved}: {_last_line(after['errors'][0])}", pytrace=False
            )
        if after["images"] != 1 or not after["png"]:
            pytest.fail(
                f"{where}: expected one PNG figure after {moved}, the panel shows {after['images']} image(s)"
                + (f": {', '.join(after['each'])}" if after["each"] else ""),
                pytrace=False,
            )
        if after["same"]:
            pytest.fail(
                f"{where}: figure redrawn but its image data is unchanged after {moved} "
                f"(image {before['hash']}, {before['bytes']} bytes)",
                pytrace=False,
            )
        if blank := _blank(page, k, keep):
            pytest.fail(f"{where}: the figure after {moved}: {blank}", pytrace=False)
        new = watched.problems()[known:]
        if new:
            pytest.fail(f"{where}: the browser reported after {moved}:\n" + "\n".join(new), pytrace=False)
    return len(panel["controls"])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs_and_its_sliders_redraw_in_jupyterlab(lab, lab_tab, notebook):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    name = notebook.name
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{notebook.stem}.png"
    for old in SCREENSHOTS.glob(f"{notebook.stem}*.png"):
        old.unlink()
    opening = time.monotonic()
    watched_page = lab_tab.open(name)
    page = watched_page.page
    failed = True
    try:
        try:
            page.wait_for_function(
                "name => { const app = window.jupyterapp; const w = app && app.shell && app.shell.currentWidget;"
                " return !!(w && w.context && w.context.path === name && w.context.isReady && w.sessionContext"
                " && w.sessionContext.isReady && w.sessionContext.session && w.sessionContext.session.kernel"
                " && w.sessionContext.session.kernel.status === 'idle'); }",
                arg=name,
                timeout=KERNEL_READY_S * 1000,
                polling=200,
            )
        except PlaywrightTimeout:
            pytest.fail(
                f"{name}: notebook and kernel not ready within {KERNEL_READY_S} s "
                f"(browser: {watched_page.problems()}; server log ends with:\n{_log_tail(10)})",
                pytrace=False,
            )
        page.evaluate(PAGE_HELPERS)
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # the notebook, wide, in screenshots
        kernel = page.evaluate("() => window.__attnTest.kernel()")
        if kernel["name"] != KERNEL:
            pytest.fail(f"{name}: runs in kernel {kernel['name']!r}, not {KERNEL!r}", pytrace=False)
        transport, sockets = lab.kernel_transport(kernel["id"])
        if transport != "ipc" or len(sockets) != 5:
            pytest.fail(f"{name}: kernel on {transport} with sockets {sockets}, not on 5 Unix sockets", pytrace=False)

        started = time.monotonic()
        open_s = started - opening
        last = last_panel_cell(lab.root / name)  # the copy served: the cells the panels need, QUICK's injected one
        ran = f"running cells 1-{last} (the cells its slider panels need)"
        outcome = page.evaluate("([last, ms]) => window.__attnTest.runThrough(last, ms)", [last, RUN_ALL_S * 1000])
        if outcome == "timeout":
            pytest.fail(f"{name}: {ran} did not finish within {RUN_ALL_S} s", pytrace=False)
        try:
            _wait_idle(page, 30, SETTLE_S)
        except PlaywrightTimeout:
            pytest.fail(f"{name}: the kernel did not settle within 30 s of {ran}", pytrace=False)
        run_s = time.monotonic() - started
        cells = page.evaluate("() => window.__attnTest.cells()")
        _fail_if(_cell_problems(cells, last), f"{name}: after {ran}:")
        _fail_if([] if outcome is True else [repr(outcome)], f"{name}: JupyterLab says {ran} failed:")
        _fail_if(watched_page.problems(), f"{name}: after {ran}, the browser reported:")

        started = time.monotonic()
        panels = page.evaluate("() => window.__attnTest.panels()")
        shown = {panel["cell"] for panel in panels}
        _fail_if(
            [
                f"{_describe_cell(cell)} calls slider_panel but shows no slider panel"
                for cell in cells
                if cell["type"] == "code" and PANEL_CALL.search(cell["source"]) and cell["index"] not in shown
            ],
            f"{name}:",
        )
        moved = 0
        for panel in panels:
            moved += _exercise_panel(page, watched_page, notebook, panel)
            page.locator(f'[data-attn-panel="{panel["panel"]}"]').screenshot(
                path=SCREENSHOTS / f"{notebook.stem}-panel{panel['panel']}.png"
            )
        print(
            f"{name}: opened in {open_s:.1f} s, ran the {last} cells its panels need in {run_s:.1f} s; "
            f"{len(panels)} slider panel(s), "
            f"{moved} control(s) moved in {time.monotonic() - started:.1f} s"
        )
        problems = _cell_problems(page.evaluate("() => window.__attnTest.cells()"), last)
        _fail_if(problems, f"{name}: after moving the controls:")
        _fail_if(watched_page.problems(), f"{name}: the browser reported:")
        failed = False
    finally:
        try:
            last = page.locator("[data-attn-panel]").last
            if last.count():
                last.evaluate("el => el.scrollIntoView({block: 'center'})")
            page.screenshot(path=shot)
        except Exception as error:  # a screenshot must not hide the test's own failure
            print(f"{name}: no screenshot: {error}")
        lab_tab.close_notebook(name, failed)


def test_quick_parameters_are_the_notebooks_own_and_shorten_them():
    """QUICK names parameters each notebook has (papermill would inject a misspelt one without a word) and lowers
    them: a value at or above the published one saves nothing."""
    import ast

    import nbformat

    for name, quick in QUICK.items():
        notebook = ROOT / "notebooks" / name
        assert notebook.exists(), f"QUICK names {name}, which is not a course notebook"
        cell = next(
            c for c in nbformat.read(notebook, as_version=4).cells if "parameters" in c.metadata.get("tags", [])
        )
        published = {
            target.id: ast.literal_eval(node.value)
            for node in ast.parse(cell.source).body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for parameter, value in quick.items():
            assert parameter in published, f"{name} has no parameter {parameter} (it has {sorted(published)})"
            was = published[parameter]
            assert value < was, f"{name}: QUICK {parameter} = {value}, not below the published {was}"


def test_without_claims_drops_each_claim_and_keeps_the_rest_runnable():
    source = (
        "loss = train()\n"
        'checks.claim("the loss falls", loss < 0.1,\n             loss)\n'
        "for seed in seeds:\n"
        '    checks.claim("it holds", True, seed)\n'
        'print("claim(" , loss)\n'
    )
    assert without_claims(source) == 'loss = train()\npass\nfor seed in seeds:\n    pass\nprint("claim(" , loss)\n'
    assert without_claims("x = 1") == "x = 1"
    for path in NOTEBOOKS:  # every claim in the course goes, and every cell still parses
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code" and "claim(" in "".join(cell["source"]):
                stripped = without_claims("".join(cell["source"]))
                ast.parse(stripped)
                assert "checks.claim(" not in stripped, (path.name, stripped)


def _notebook(*sources: str, tags: dict[int, list[str]] | None = None) -> list[dict]:
    return [
        {"cell_type": "code", "source": source, "metadata": {"tags": (tags or {}).get(i, [])}}
        for i, source in enumerate(sources)
    ]


def test_panel_cells_keep_what_the_panels_read_and_drop_the_rest():
    """The cells a panel needs: what binds or changes the names it reads, back to their definite binding."""
    cells = _notebook(
        "%matplotlib inline\nimport torch\nimport attn_course as ac",  # 0: imports
        "SEED = 0\nSTEPS = 100",  # 1: parameters
        "model = ac.Model()\nstale = 1",  # 2: bound again surely in 4: not needed
        "big = ac.train_something_else(STEPS)",  # 3: nothing a panel reads
        "model = ac.Model(seed=SEED)\nhistory = []",  # 4
        "model.train(STEPS)\nhistory.append(1)",  # 5: changes model and history in place
        "for name in ['a', 'b']:\n    print(name)",  # 6: binds name in a loop only
        "fig = ac.plot(model)\nac.show(fig)",  # 7: ac.show changes no module
        "ac.slider_panel(lambda h, x=1: ac.plot(model, h), {'h': None}, fixed={'rows': [n for n in history]})",  # 8
        "ac.slider_panel(ac.plot, {'h': None})",  # 9
        "after = ac.train_something_else(STEPS)",  # 10: after the last panel
        tags={1: ["parameters"]},
    )
    assert panel_cells(cells) == [0, 1, 4, 5, 8, 9]
    markdown = [{"cell_type": "markdown", "source": "# title", "metadata": {}}, *cells]
    assert panel_cells(markdown) == [1, 2, 5, 6, 9, 10]


def test_panel_cells_keep_a_binding_in_a_loop_when_nothing_binds_the_name_surely():
    cells = _notebook(
        "import attn_course as ac", "for x in range(3):\n    y = x", "ac.slider_panel(ac.plot, {}, fixed={'y': y})"
    )
    assert panel_cells(cells) == [0, 1, 2]
    cells = _notebook("import attn_course as ac", "x = 1", "%%time\nz = x", "w = 2", "ac.slider_panel(ac.plot, {})")
    assert panel_cells(cells) == [0, 1, 2, 4], "a cell magic is kept with every cell before it: it may read any"
    no_panel = _notebook("x = 1", "y = 2")
    assert panel_cells(no_panel) == [0, 1]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_panel_cells_of_a_course_notebook_leave_no_name_unbound(notebook):
    """Every name a kept cell reads is a builtin or bound by a kept cell before it, and every panel is kept."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    kept = panel_cells(cells)
    calls = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and PANEL_CALL.search("".join(c["source"]))]
    assert set(calls) <= set(kept), f"{notebook.name}: a cell that makes a panel was dropped"
    bound = set(dir(builtins)) | {"get_ipython", "display"}
    for i in kept:
        found = _cell_names("".join(cells[i]["source"]))
        unbound = sorted(found["read"] - bound)
        assert not unbound, f"{notebook.name}: cell {i + 1} reads {unbound}, which no kept cell before it binds"
        bound |= found["sure"] | found["nested"]
