#!/usr/bin/env python3
"""Grade a class's hand-ins with the course's own checks: ``make grade SUBMISSIONS=folder``.

    .venv/bin/python tools/grade.py SUBMISSIONS [--out build/grades] [--jobs 2] [--cell-timeout 60] ...

Input: ``SUBMISSIONS/<student>/<notebook>.ipynb``, the student edition (``make student``) as each student handed it
back, under the names of ``notebooks/``. Files and folders whose names start with a dot (``.ipynb_checkpoints``,
``.DS_Store``) are passed over. Everything is checked before anything runs: a missing or empty folder, a file that
is not a notebook and a name the course does not have each stop the run with a message and write nothing.

What is graded: the exercises are read from the COURSE's notebooks, never from a hand-in. An exercise is a markdown
cell that starts a line with its bold number (``**3.**``) and is no solution, followed (before the next markdown
cell that is no solution) by a code cell that is no solution and calls ``checks.check_...(...)``; each such call is
one row. For every student and every notebook that anyone handed in:

1. a fresh kernel (``attn-course``) starts in a sandbox of its own (below) and runs the hand-in top to bottom with
   ``allow_errors``: a cell that raises does not stop it; a cell that runs past ``--cell-timeout``, a notebook past
   ``--notebook-timeout`` or a kernel that dies ends it, and every row of that notebook is ``false`` with the reason;
2. in the same kernel the grader then imports the course's ``attn_course.checks`` afresh from the course (the
   student's modules are set aside meanwhile and put back after) and evaluates each exercise's check call, as the
   course writes it, with the course's check in place of ``checks.check_...``: a student who redefines a check,
   or deletes or moves the check cells, does not change the verdict. Each check has ``--check-timeout`` seconds.
   The answer's names are looked up when the whole notebook has run: ``reassigned_answers`` proves for the course's
   notebooks that no later cell of the student edition assigns them, so this equals checking in place.
3. ``build/grades/grades.csv`` (``student,notebook,exercise,passed,hint``), ``summary.csv`` (one row per student,
   the exercises passed per notebook) and ``report.html`` are written to a new folder that replaces
   ``build/grades`` only once all are complete.

The sandbox (Linux with unprivileged user namespaces; ``unshare`` from util-linux): each kernel runs in new user,
network, mount and PID namespaces. The network has no interface up; every mount is read-only except a private
``tmpfs`` (``--disk``) over the temporary folder that holds the kernel's working folder (a copy of the hand-in and
nothing else) and its sockets; the temporary folders, ``/dev/shm``, Jupyter's runtime folder, the submissions, the
course's notebooks and ``build/`` are hidden under empty ``tmpfs``; the kernel has no capabilities and cannot gain
any (no_new_privs, securebits); its address space is limited to ``--memory``; the namespace's first process
watches it, and when the kernel ends, or outlives every limit (even with the grader gone), every process of the
namespace ends with it. Where no such namespace can be
made (another system, or user namespaces switched off), the kernel runs in a scratch folder with the same limits
on memory and time only, and the grader says so at the start: the network is up and the course's files are
writable there. Not defended against: code that cheats inside the kernel's own Python process (it runs before the
checks, in the same interpreter, and can patch torch, builtins or the import system); a fork bomb inside the time
limits; reading files that the grading user may read (nothing read can leave the sandbox but the check verdicts
and the names of the errors the hand-in raised).
"""

from __future__ import annotations

import argparse
import ast
import atexit
import csv
import html
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "attn-course"
EXERCISE = re.compile(r"^\*\*\d+\.\*\*", re.M)  # "**3.**" at the start of a line
PRIVATE = "__attn_grade_check__"  # the name the course's check is bound to when its call is evaluated
MIME = "application/x-attn-grade+json"
MAX_NOTEBOOK_BYTES = 50 * 2**20
COLUMNS = ["student", "notebook", "exercise", "passed", "hint"]


class InputError(Exception):
    """The submissions folder is not what the grader takes; nothing has run and nothing is written."""


# ----------------------------------------------------------------------------------------------------------------
# The course's exercises
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One checked exercise of a course notebook: the call its cell makes, with the check replaced by ``PRIVATE``."""

    label: str  # "3 (check_online_step)": the exercise's number and its check
    number: str
    check: str
    call: str  # e.g. "__attn_grade_check__(my_online_step)"
    names: tuple[str, ...]  # the names the call reads (the answer's variables)
    cell: int  # index of the exercise's work cell in the course notebook


def is_solution(cell: dict) -> bool:
    return "solution" in cell.get("metadata", {}).get("tags", [])


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _python(source: str) -> ast.Module:
    """Parse a code cell; IPython's line magics and shell escapes become blank lines."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    return ast.parse("\n".join(lines))


def _check_calls(source: str) -> list[ast.Call]:
    """The calls ``checks.check_...(...)`` of a code cell, in the order they are written."""
    calls = []
    for node in ast.walk(_python(source)):
        func = node.func if isinstance(node, ast.Call) else None
        if (
            isinstance(func, ast.Attribute)
            and func.attr.startswith("check_")
            and isinstance(func.value, ast.Name)
            and func.value.id == "checks"
        ):
            calls.append(node)
    return sorted(calls, key=lambda call: (call.lineno, call.col_offset))


def exercises(cells: list[dict]) -> list[Check]:
    """The checked exercises of a course notebook, in order (the same rule as tests/test_student_answers.py)."""
    found = []
    for i, cell in enumerate(cells):
        source = _source(cell)
        if cell["cell_type"] != "markdown" or is_solution(cell) or not EXERCISE.search(source):
            continue
        number = EXERCISE.findall(source)[-1].strip("*.")
        work = None
        for j in range(i + 1, len(cells)):
            later = cells[j]
            if later["cell_type"] == "markdown" and not is_solution(later):
                break
            if later["cell_type"] == "code" and not is_solution(later):
                work = j
                break
        if work is None:
            continue
        for call in _check_calls(_source(cells[work])):
            name = call.func.attr
            names = sorted({n.id for arg in [*call.args, *call.keywords] for n in ast.walk(arg) if _loads(n)})
            replaced = ast.Call(func=ast.Name(PRIVATE, ast.Load()), args=call.args, keywords=call.keywords)
            found.append(Check(f"{number} ({name})", number, name, ast.unparse(replaced), tuple(names), work))
    labels = [c.label for c in found]
    if len(set(labels)) != len(labels):
        raise ValueError(f"two exercises share a label: {labels}")
    return found


def _loads(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)


def _assigned(source: str) -> set[str]:
    """The names a code cell binds (assignments, definitions, imports, loop and with targets, del)."""
    names = set()
    for node in ast.walk(_python(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def reassigned_answers(cells: list[dict]) -> list[str]:
    """Exercises whose answer a later cell of the student edition assigns again: checking after the whole notebook
    would then see another value than the check in place does. Empty for a notebook the grader can grade."""
    found = []
    for check in exercises(cells):
        for j in range(check.cell + 1, len(cells)):
            cell = cells[j]
            if cell["cell_type"] != "code" or is_solution(cell):
                continue
            again = sorted(set(check.names) & _assigned(_source(cell)))
            if again:
                found.append(f"exercise {check.label}: cell {j} assigns {', '.join(again)} again")
    return found


def course_notebooks(root: Path = ROOT) -> dict[str, Path]:
    return {path.name: path for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))}


def course_checks(path: Path) -> list[Check]:
    return exercises(json.loads(path.read_text(encoding="utf-8"))["cells"])


# ----------------------------------------------------------------------------------------------------------------
# The submissions: checked whole before anything runs
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Plan:
    students: list[str]
    notebooks: list[str]  # every notebook that at least one student handed in
    handins: dict[tuple[str, str], Path]  # (student, notebook) -> file
    checks: dict[str, list[Check]] = field(default_factory=dict)


def _hidden(path: Path) -> bool:
    return path.name.startswith(".")


def _read_notebook(path: Path) -> str | None:
    """Why ``path`` is not a notebook the grader can run, or None."""
    import nbformat

    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return f"larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB"
    try:
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except Exception as error:  # not UTF-8, not JSON, not a notebook
        return f"not a Jupyter notebook ({type(error).__name__}: {str(error).splitlines()[0][:120]})"
    if not isinstance(notebook.get("cells"), list) or not all(isinstance(c, dict) for c in notebook.cells):
        return "not a Jupyter notebook (no list of cells)"
    return None


def plan_class(submissions: Path, course: dict[str, Path]) -> Plan:
    """Every fault of the submissions folder at once, as an InputError; else what to grade."""
    if not submissions.exists():
        raise InputError(f"{submissions}: no such folder")
    if not submissions.is_dir():
        raise InputError(f"{submissions}: not a folder (give the folder that holds one folder per student)")
    faults, students, handins = [], [], {}
    layout = "SUBMISSIONS/<student>/<notebook>.ipynb"
    for entry in sorted(submissions.iterdir()):
        if _hidden(entry):
            continue
        if not entry.is_dir():
            faults.append(f"{entry}: a file where a student's folder belongs ({layout})")
            continue
        students.append(entry.name)
        for file in sorted(entry.iterdir()):
            if _hidden(file):
                continue
            if file.is_dir():
                faults.append(f"{file}: a folder inside a student's folder ({layout})")
            elif file.name not in course:
                faults.append(f"{file}: the course has no notebook {file.name!r} (its notebooks: {', '.join(course)})")
            elif (why := _read_notebook(file)) is not None:
                faults.append(f"{file}: {why}")
            else:
                handins[entry.name, file.name] = file
    if not students and not faults:
        faults.append(f"{submissions}: empty, no student folders ({layout})")
    elif not handins and not faults:
        faults.append(f"{submissions}: the student folders hold no notebook ({layout})")
    if faults:
        raise InputError("\n".join(faults))
    notebooks = sorted({name for _, name in handins})
    plan = Plan(students, notebooks, handins)
    for name in notebooks:
        plan.checks[name] = course_checks(course[name])
        if not plan.checks[name]:
            raise InputError(f"{name}: the course notebook has no checked exercise to grade")
    return plan


# ----------------------------------------------------------------------------------------------------------------
# The sandbox: run inside the new namespaces, before the kernel (``grade.py _sandbox CONFIG -- KERNEL ARGV``)
# ----------------------------------------------------------------------------------------------------------------

UNSHARE = ["--user", "--map-root-user", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
_MS = {"ro": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
MS_REMOUNT, MS_BIND = 32, 4096
PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 24, 28, 38


def _libc():
    import ctypes

    return ctypes, ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    ctypes, libc = _libc()
    encode = lambda s: None if s is None else s.encode()  # noqa: E731
    if libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _mount_points() -> list[tuple[str, list[str]]]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
        points.append((point, fields[5].split(",")))
    return points


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def sandbox(config: dict, argv: list[str]) -> None:
    """Set up the kernel's world and exec it: hide, remount read-only, limit, drop every capability."""
    import resource

    work, sockets = config["work"], config["sockets"]
    handin = Path(config["handin"]).read_bytes() if config.get("handin") else None
    caches = {p: Path(p).read_bytes() for p in config.get("mpl_cache", []) if Path(p).is_file()}
    if config["isolate"]:
        kept = os.open(sockets, os.O_PATH | os.O_DIRECTORY)
        scratch = config["scratch"]  # a private tmpfs over the grader's temporary folder: work and sockets in it
        for folder in sorted(config["hide"], key=len):  # empty, read-only below once the scratch path is made
            if os.path.isdir(folder):  # else gone under an earlier tmpfs, or never there
                _mount("tmpfs", folder, "tmpfs", _MS["nosuid"] | _MS["nodev"], "size=1m,mode=0755")
        os.makedirs(scratch, exist_ok=True)
        _mount("tmpfs", scratch, "tmpfs", _MS["nosuid"] | _MS["nodev"], f"size={config['disk']},mode=0700")
        os.makedirs(sockets, exist_ok=True)
        _mount(f"/proc/self/fd/{kept}", sockets, None, MS_BIND)
        os.close(kept)
        for point, options in _mount_points():
            if "ro" in options or _under(point, scratch) or _under(point, "/proc") or not os.path.exists(point):
                continue  # already read-only, the kernel's own, or hidden under a tmpfs above
            flags = MS_REMOUNT | MS_BIND | _MS["ro"] | sum(_MS.get(o, 0) for o in options)
            _mount(None, point, None, flags)
    os.makedirs(work, exist_ok=True)
    os.makedirs(os.path.join(work, ".matplotlib"), exist_ok=True)
    for path, data in caches.items():
        Path(work, ".matplotlib", os.path.basename(path)).write_bytes(data)
    if handin is not None:
        Path(work, config["name"]).write_bytes(handin)
    for limit, value in ((resource.RLIMIT_AS, config["memory"]), (resource.RLIMIT_FSIZE, config["disk"])):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):  # macOS refuses RLIMIT_AS: said in the README
            if config["isolate"]:
                raise
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(work)
    if config["isolate"]:
        _drop_capabilities()
        _outlive_nothing(config.get("lifetime"))
        os.environ["JPY_PARENT_PID"] = "1"  # its parent is the watcher, PID 1 (ipykernel then polls no parent)
    os.execve(argv[0], argv, os.environ)


def _outlive_nothing(lifetime: float | None) -> None:
    """As the PID namespace's first process: run the kernel as a child and end (and with it every process of the
    namespace) when the kernel ends or ``lifetime`` seconds have passed, whichever is first; the grader's own limits
    end it sooner, and this one still holds if the grader is gone. Returns in the child only."""
    import signal

    child = os.fork()
    if child == 0:
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is for the kernel
    if lifetime:
        signal.signal(signal.SIGALRM, lambda *_: os._exit(124))
        signal.alarm(int(lifetime))
    _, status = os.waitpid(child, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _drop_capabilities() -> None:
    """No capability now or after exec: none in the bounding set, root gains none (securebits), no_new_privs."""
    ctypes, libc = _libc()
    for number in range(64):
        if libc.prctl(PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last capability this kernel knows
                break
            raise OSError(ctypes.get_errno(), f"cannot drop capability {number}")
    for option, value in ((PR_SET_SECUREBITS, 0b11), (PR_SET_NO_NEW_PRIVS, 1)):  # SECBIT_NOROOT and its lock
        if libc.prctl(option, value, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl {option} failed")


def isolation() -> tuple[bool, str]:
    """Whether kernels can run in their own namespaces here, and if not why."""
    unshare = shutil.which("unshare")
    if not sys.platform.startswith("linux") or unshare is None:
        return False, "no unshare (util-linux) on this system"
    probe = subprocess.run([unshare, *UNSHARE, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return False, f"unshare cannot make the namespaces ({probe.stderr.strip() or probe.returncode})"
    return True, "network cut, course files read-only, a private tmpfs, no capabilities"


# ----------------------------------------------------------------------------------------------------------------
# Grading one hand-in
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Settings:
    cell_timeout: float = 60
    notebook_timeout: float = 300
    check_timeout: float = 30
    memory: int = 4 * 2**30
    disk: int = 512 * 2**20
    jobs: int = 1
    isolate: bool = True
    scratch: str = ""  # the grader's private temporary folder (the sandbox mounts its tmpfs here)
    hide: tuple[str, ...] = ()
    mpl_cache: tuple[str, ...] = ()


# What runs in the kernel after the hand-in, in a namespace of its own (a student's global named json or eval
# changes nothing). The student's attn_course modules are set aside, the course's imported afresh from the course
# folder, and put back at the end.
GRADER_CODE = r"""
import builtins, importlib, json, os, signal, sys, threading
from IPython import get_ipython
from IPython.display import display

def grade(spec):
    user_ns = get_ipython().user_ns
    mine = {n: m for n, m in list(sys.modules.items()) if n == "attn_course" or n.startswith("attn_course.")}
    path = list(sys.path)
    for n in mine:
        del sys.modules[n]
    work = os.path.realpath(spec["work"]) + os.sep  # where the hand-in ran: an attn_course written there is not ours
    sys.path[:] = [spec["course"]] + [
        p for p in path if os.path.isabs(p) and not (os.path.realpath(p) + os.sep).startswith(work)
    ]
    importlib.invalidate_caches()

    def send(index, passed, message):
        display({spec["mime"]: {"nonce": spec["nonce"], "index": index, "passed": passed, "message": message}},
                raw=True)

    class Late(BaseException):
        pass

    def late(signum, frame):
        raise Late()

    alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    try:
        try:
            checks = importlib.import_module("attn_course.checks")
            Feedback = checks.Feedback
        except BaseException as error:
            for index, _ in enumerate(spec["checks"]):
                send(index, False, f"the course's checks did not import ({type(error).__name__}: {error})")
            return
        for index, item in enumerate(spec["checks"]):
            namespace = dict(user_ns)
            namespace[spec["private"]] = getattr(checks, item["check"])
            if alarm:
                previous = signal.signal(signal.SIGALRM, late)
                signal.setitimer(signal.ITIMER_REAL, spec["timeout"])
            try:
                verdict = eval(item["call"], namespace)
            except Late:
                send(index, False, f"the check ran longer than {spec['timeout']:g} s")
                continue
            except BaseException as error:
                send(index, False, f"the check could not run ({type(error).__name__}: {str(error)[:300]})")
                continue
            finally:
                if alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, previous)
            if type(verdict) is Feedback:
                send(index, bool(verdict), str(verdict.message))
            else:
                send(index, False, f"the check gave no verdict (got {type(verdict).__name__})")
    finally:
        for n in [n for n in sys.modules if n == "attn_course" or n.startswith("attn_course.")]:
            del sys.modules[n]
        sys.modules.update(mine)
        sys.path[:] = path

grade(SPEC)
"""


@dataclass
class Outcome:
    """What running one hand-in gave: a verdict per check (passed, hint), or one reason for them all."""

    verdicts: dict[int, tuple[bool, str]]
    failure: str | None = None  # the notebook crashed or timed out
    errors: list[str] = field(default_factory=list)  # "cell 12 raised NameError: ...", the first few
    seconds: float = 0.0
    started: bool = False  # the kernel answered and the first cell was sent


def _grading_cell(checks: list[Check], nonce: str, settings: Settings, work: str):
    import nbformat

    spec = {
        "course": str(ROOT),
        "work": work,
        "nonce": nonce,
        "mime": MIME,
        "private": PRIVATE,
        "timeout": settings.check_timeout,
        "checks": [{"check": c.check, "call": c.call} for c in checks],
    }
    code = GRADER_CODE.replace("SPEC", json.dumps(spec))
    source = f'__import__("builtins").exec({code!r}, {{"__name__": "__attn_grade__"}})'
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["attn_grade"] = True
    return cell


def _kernel_env(settings: Settings, work: str) -> dict[str, str]:
    """Not the grader's environment: a short list the kernel needs, and the CPU-path settings the caller chose."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": work,
        "TMPDIR": work,
        "MPLCONFIGDIR": os.path.join(work, ".matplotlib"),
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_CBWR", "ATEN_CPU_CAPABILITY", "PYTHONHASHSEED"):
        if name in os.environ:
            env[name] = os.environ[name]
    if settings.jobs > 1 and "OMP_NUM_THREADS" not in env:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        env["OMP_NUM_THREADS"] = str(max(1, cores // settings.jobs))
    return env


def run_handin(path: Path, checks: list[Check], settings: Settings) -> Outcome:
    """Run one hand-in in a sandboxed kernel, then the course's checks in that kernel."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    class SandboxedKernelManager(AsyncKernelManager):
        """A kernel on Unix sockets in its task's folder (as tools/ipc_kernels.py's, which works in a network
        namespace), started through the sandbox. Asynchronous: with a blocking client nbclient waits for output
        without a timeout, and a cell that loops forever would hold the grader."""

        wrapper: list[str] = []

        def format_kernel_cmd(self, extra_arguments=None):
            return [*self.wrapper, *super().format_kernel_cmd(extra_arguments)]

    path = path.resolve()  # the sandbox reads it from another working folder
    notebook = nbformat.read(path, as_version=4)
    notebook.cells = [c for c in notebook.cells if c.get("cell_type") in ("code", "markdown", "raw")]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    task = tempfile.mkdtemp(prefix="task-", dir=settings.scratch)
    work, sockets = os.path.join(task, "work"), os.path.join(task, "sockets")
    nonce = secrets.token_hex(16)
    notebook.cells.append(_grading_cell(checks, nonce, settings, work))
    grading_index = len(notebook.cells) - 1
    os.makedirs(work)
    os.makedirs(sockets, mode=0o700)
    config = {
        "isolate": settings.isolate,
        "scratch": settings.scratch,
        "hide": list(settings.hide),
        "work": work,
        "sockets": sockets,
        "handin": str(path),
        "name": path.name,
        "memory": settings.memory,
        "disk": settings.disk,
        "mpl_cache": list(settings.mpl_cache),
        "lifetime": settings.notebook_timeout + settings.check_timeout * len(checks) + 120,
    }
    launcher = [sys.executable, "-I", str(Path(__file__).resolve()), "_sandbox", json.dumps(config), "--"]
    manager = SandboxedKernelManager(
        kernel_name=KERNEL,
        transport="ipc",
        ip=os.path.join(sockets, "kernel"),
        connection_file=os.path.join(sockets, "kernel.json"),
    )
    manager.wrapper = ([shutil.which("unshare"), *UNSHARE] if settings.isolate else []) + launcher

    outcome = Outcome({})
    limit = {"deadline": None, "why": ""}

    def timeout_of(cell) -> float:
        if cell.metadata.get("attn_grade"):
            limit["why"] = f"the checks ran longer than {settings.check_timeout * len(checks) + 30:g} s in all"
            return settings.check_timeout * len(checks) + 30
        now = time.monotonic()
        if limit["deadline"] is None:
            limit["deadline"] = now + settings.notebook_timeout
        left = limit["deadline"] - now
        if left <= 0:  # the cells so far took the notebook's whole time: this one does not start
            limit["why"] = f"the notebook ran longer than {settings.notebook_timeout:g} s (the limit per notebook)"
            raise CellTimeoutError(limit["why"])
        if left < settings.cell_timeout:
            limit["why"] = f"the notebook ran longer than {settings.notebook_timeout:g} s (the limit per notebook)"
            return max(1, int(left + 1))
        limit["why"] = f"a cell ran longer than {settings.cell_timeout:g} s (the limit per cell)"
        return settings.cell_timeout

    class Client(NotebookClient):
        """Keeps only what grading needs: the grading cell's verdicts and the names of the errors raised."""

        current = 0

        def output(self, outs, msg, display_id, cell_index):
            if cell_index == grading_index:
                data = msg.get("content", {}).get("data", {}).get(MIME)
                if isinstance(data, dict) and data.get("nonce") == nonce and isinstance(data.get("index"), int):
                    outcome.verdicts[data["index"]] = (data.get("passed") is True, str(data.get("message", "")))
                return None
            if msg["msg_type"] == "error" and len(outcome.errors) < 3:
                content = msg["content"]
                evalue = " ".join(str(content.get("evalue", "")).split())[:160]
                outcome.errors.append(f"cell {cell_index + 1} raised {content.get('ename', 'an error')}: {evalue}")
            return None

        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            self.current = cell_index
            outcome.started = True
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    client = Client(
        notebook,
        km=manager,
        timeout_func=timeout_of,
        allow_errors=True,
        allow_error_names=[],
        store_widget_state=False,
        record_timing=False,
        iopub_timeout=10,
        startup_timeout=120,
        resources={"metadata": {"path": work}},
    )
    start = time.monotonic()
    missing = "no verdict: the grading code did not report"
    log = open(os.path.join(task, "kernel.log"), "wb")  # the kernel's stderr: kept from the terminal, shown on failure
    try:
        client.execute(env=_kernel_env(settings, work), stderr=log)
    except CellTimeoutError:
        if client.current != grading_index:
            outcome.failure = f"timed out at cell {client.current + 1}: {limit['why']}"
        else:
            missing = f"no verdict: {limit['why']}"
    except DeadKernelError:
        where = "during the checks" if client.current == grading_index else f"at cell {client.current + 1}"
        outcome.failure = f"the kernel died {where} (out of memory, or the notebook ended its own process)"
    except Exception as error:
        if client.kc is None or not outcome.started:  # the kernel never started: the grader's fault, not the student's
            log.flush()
            said = Path(log.name).read_text(errors="replace").strip()[-2000:]
            raise RuntimeError(f"the kernel did not start for {path}: {error}\n{said}") from error
        outcome.failure = f"the grader could not run the notebook ({type(error).__name__}: {str(error)[:200]})"
    finally:
        atexit.unregister(client._cleanup_kernel)  # nbclient's, for a kernel it would own; this one is shut down here
        log.close()
        if client.kc is not None:
            client.kc.stop_channels()
        if manager.has_kernel:
            run_sync(manager.shutdown_kernel)(now=True)
        shutil.rmtree(task, ignore_errors=True)
    outcome.seconds = time.monotonic() - start
    if outcome.failure is None:
        for index in range(len(checks)):
            outcome.verdicts.setdefault(index, (False, missing))
    return outcome


def rows_for(student: str, notebook: str, checks: list[Check], outcome: Outcome | None) -> list[dict]:
    rows = []
    for index, check in enumerate(checks):
        if outcome is None:
            passed, hint = False, "not handed in"
        elif outcome.failure is not None:
            passed, hint = False, outcome.failure
        else:
            passed, hint = outcome.verdicts[index]
            if passed:
                hint = ""
            elif outcome.errors:
                hint = f"{hint} (while running the notebook, {outcome.errors[0]})"
        rows.append({"student": student, "notebook": notebook, "exercise": check.label, "passed": passed, "hint": hint})
    return rows


def grade_task(student: str, notebook: str, path: Path | None, checks: list[Check], settings: Settings):
    outcome = None if path is None else run_handin(path, checks, settings)
    return student, notebook, rows_for(student, notebook, checks, outcome), (outcome.seconds if outcome else 0.0)


# ----------------------------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------------------------


def write_results(out: Path, plan: Plan, rows: list[dict]) -> None:
    """grades.csv, summary.csv and report.html into a new folder beside ``out``, which then replaces ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        with open(fresh / "grades.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            writer.writerows({**row, "passed": "true" if row["passed"] else "false"} for row in rows)
        counts = _counts(plan, rows)
        with open(fresh / "summary.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["student", *plan.notebooks, "total"])
            for student in plan.students:
                passed = [counts[student, name] for name in plan.notebooks]
                writer.writerow([student, *passed, sum(passed)])
        (fresh / "report.html").write_text(report_html(plan, rows, counts), encoding="utf-8")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(fresh, 0o777 & ~mask)  # mkdtemp's folder is private (0700); the results are not
        old = out.with_name(f".{out.name}-old-{os.getpid()}")
        if out.exists():
            out.rename(old)
        fresh.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise


def _counts(plan: Plan, rows: list[dict]) -> dict[tuple[str, str], int]:
    counts = {(s, n): 0 for s in plan.students for n in plan.notebooks}
    for row in rows:
        counts[row["student"], row["notebook"]] += bool(row["passed"])
    return counts


def report_html(plan: Plan, rows: list[dict], counts: dict[tuple[str, str], int]) -> str:
    """One table, students by notebooks, and each student's exercises below; every text escaped, nothing fetched."""
    e = html.escape
    total = {name: len(plan.checks[name]) for name in plan.notebooks}
    head = "".join(f"<th>{e(name)}</th>" for name in plan.notebooks)
    body = []
    for student in plan.students:
        cells = "".join(
            f'<td class="{"all" if counts[student, n] == total[n] else "some" if counts[student, n] else "none"}">'
            f"{counts[student, n]}/{total[n]}</td>"
            for n in plan.notebooks
        )
        got = sum(counts[student, n] for n in plan.notebooks)
        body.append(f"<tr><th>{e(student)}</th>{cells}<td>{got}/{sum(total.values())}</td></tr>")
    details = []
    for student in plan.students:
        lines = "".join(
            f'<tr><td>{e(r["notebook"])}</td><td>{e(r["exercise"])}</td><td class="{"all" if r["passed"] else "none"}">'
            f"{'passed' if r['passed'] else 'not yet'}</td><td>{e(r['hint'])}</td></tr>"
            for r in rows
            if r["student"] == student
        )
        details.append(
            f"<details><summary>{e(student)}</summary><table><tr><th>notebook</th><th>exercise</th><th>result</th>"
            f"<th>hint</th></tr>{lines}</table></details>"
        )
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:.5em 0}"
        "td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left;vertical-align:top}"
        ".all{background:#d8f0d8}.some{background:#fff2c8}.none{background:#f6d6d6}"
        "summary{cursor:pointer;margin:.3em 0}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Grades</title>'
        f"<style>{style}</style></head><body><h1>Grades</h1>"
        f"<p>{len(plan.students)} students, {len(rows)} checked exercises in all. Exercises passed per notebook:</p>"
        f"<table><tr><th>student</th>{head}<th>total</th></tr>{''.join(body)}</table>"
        f"<h2>Each exercise</h2>{''.join(details)}</body></html>\n"
    )


# ----------------------------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------------------------


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)i?B?", text.strip(), re.I)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4G, 512M)")
    return int(float(match[1]) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match[2].upper()])


def _mpl_caches() -> tuple[str, ...]:
    """matplotlib's font list, copied into each kernel's home so that no kernel builds it again (about 1 s)."""
    probe = "import matplotlib; print(matplotlib.get_cachedir())"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    folder = Path(result.stdout.strip()) if result.returncode == 0 else None
    return tuple(str(p) for p in sorted(folder.glob("fontlist-*.json"))) if folder and folder.is_dir() else ()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_sandbox"]:  # inside the namespaces: set up, then become the kernel
        sandbox(json.loads(argv[1]), argv[3:])
        return 1
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="a folder with one folder per student, holding .ipynb files")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "grades", help="where the results go")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="kernels at once (default 2)")
    parser.add_argument("--cell-timeout", type=float, default=60, help="seconds per cell (default 60)")
    parser.add_argument("--notebook-timeout", type=float, default=300, help="seconds per notebook (default 300)")
    parser.add_argument("--check-timeout", type=float, default=30, help="seconds per check (default 30)")
    parser.add_argument("--memory", type=_size, default="4G", help="address space per kernel (default 4G)")
    parser.add_argument("--disk", type=_size, default="512M", help="scratch space per kernel (default 512M)")
    args = parser.parse_args(argv)
    try:
        plan = plan_class(args.submissions.resolve(), course_notebooks())
    except InputError as error:
        print(f"grade: nothing graded, nothing written:\n{error}", file=sys.stderr)
        return 2
    isolate, how = isolation()
    if not isolate:
        print(
            f"grade: WARNING: kernels run WITHOUT a sandbox ({how}): the network is up and a hand-in can write to "
            "the course's files; time and memory are still limited",
            file=sys.stderr,
        )
    tasks = [(s, n, plan.handins.get((s, n))) for s in plan.students for n in plan.notebooks]
    print(
        f"grade: {len(plan.students)} students x {len(plan.notebooks)} notebooks ({len(tasks)} hand-ins, "
        f"{args.jobs} at a time); sandbox: {how}",
        flush=True,
    )
    scratch = tempfile.mkdtemp(prefix="attn-grade-")
    runtime = os.environ.get("JUPYTER_RUNTIME_DIR") or str(Path.home() / ".local/share/jupyter/runtime")
    keep = (str(ROOT), sys.prefix, os.path.realpath(sys.executable))  # never hidden: the course and its Python
    hidden = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", runtime, str(args.submissions.resolve())}
    hidden |= {str(ROOT / "notebooks"), str(ROOT / "build")}  # the solutions, the other results
    hide = tuple(p for p in sorted(hidden) if os.path.isdir(p) and not any(_under(k, p) for k in keep))
    settings = Settings(
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        check_timeout=args.check_timeout,
        memory=args.memory,
        disk=args.disk,
        jobs=max(1, args.jobs),
        isolate=isolate,
        scratch=scratch,
        hide=hide,
        mpl_cache=_mpl_caches(),
    )
    try:
        results = grade_all(plan, tasks, settings)
    except Exception as error:
        print(f"grade: stopped, nothing written: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grade: interrupted, nothing written", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows = [row for s in plan.students for n in plan.notebooks for row in results[s, n]]
    write_results(args.out, plan, rows)
    passed = sum(r["passed"] for r in rows)
    print(
        f"grade: {passed}/{len(rows)} exercises passed; results in {args.out}/ (grades.csv, summary.csv, report.html)"
    )
    return 0


def grade_all(plan: Plan, tasks: list, settings: Settings) -> dict[tuple[str, str], list[dict]]:
    """Run every task, ``settings.jobs`` at a time, and print a line per student when the last of theirs ends."""
    import concurrent.futures

    results, left, times = {}, {s: len(plan.notebooks) for s in plan.students}, {s: 0.0 for s in plan.students}
    done = 0
    pool = concurrent.futures.ProcessPoolExecutor(settings.jobs)
    try:
        futures = [pool.submit(grade_task, s, n, p, plan.checks[n], settings) for s, n, p in tasks]
        for future in concurrent.futures.as_completed(futures):
            student, notebook, rows, seconds = future.result()
            results[student, notebook] = rows
            left[student] -= 1
            times[student] += seconds
            if left[student] == 0:
                done += 1
                parts = []
                for name in plan.notebooks:
                    got = results[student, name]
                    parts.append(f"{name[:2]} {sum(r['passed'] for r in got)}/{len(got)}")
                mine = [r for name in plan.notebooks for r in results[student, name]]
                print(
                    f"[{done}/{len(plan.students)}] {student}: {', '.join(parts)}; passed "
                    f"{sum(r['passed'] for r in mine)}/{len(mine)} ({times[student]:.1f} s)",
                    flush=True,
                )
    except BaseException:  # a kernel that would not start, Ctrl-C: no new task starts, the running ones end
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return results


if __name__ == "__main__":
    sys.exit(main())
