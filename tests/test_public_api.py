"""The public face of attn_course: __all__, docstrings, and a silent import."""

import dataclasses
import functools
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import attn_course

# Every public module of the package, found rather than listed, so that a new module is checked too.
# Modules inside the package's folders (plots.pooling, widgets.panel, checks.pooling) included.
SUBMODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(attn_course.__path__)
    if not any(part.startswith("_") for part in m.name.split("."))
)
ROOT = Path(__file__).resolve().parents[1]


def _public_objects():
    """(qualified name, object) for every name in the package's and the submodules' __all__."""
    seen = {}
    for name in attn_course.__all__:
        seen[f"attn_course.{name}"] = getattr(attn_course, name)
    for mod_name in SUBMODULES:
        module = importlib.import_module(f"attn_course.{mod_name}")
        for name in module.__all__:
            seen[f"attn_course.{mod_name}.{name}"] = getattr(module, name)
    return sorted(seen.items())


@pytest.mark.parametrize("name", attn_course.__all__)
def test_every_name_in_all_exists(name):
    assert hasattr(attn_course, name)
    assert getattr(attn_course, name) is not None


def test_all_has_no_duplicates_and_star_import_gives_exactly_all():
    assert len(attn_course.__all__) == len(set(attn_course.__all__))
    namespace = {}
    exec("from attn_course import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(attn_course.__all__)


@pytest.mark.parametrize("mod_name", SUBMODULES)
def test_submodule_all_names_exist(mod_name):
    module = importlib.import_module(f"attn_course.{mod_name}")
    assert module.__doc__ and module.__doc__.strip()
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing


@pytest.mark.parametrize(
    "qualname, obj",
    [p for p in _public_objects() if callable(p[1]) or inspect.ismodule(p[1])],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_public_function_class_and_module_has_a_docstring(qualname, obj):
    doc = inspect.getdoc(obj) if not inspect.isclass(obj) else obj.__doc__
    assert doc and doc.strip(), f"{qualname} has no docstring"
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        generated = obj.__name__ + str(inspect.signature(obj)).replace(" -> None", "")
        assert doc != generated, f"{qualname} only has the docstring dataclasses generates: {doc!r}"


@functools.cache
def _module_tests() -> tuple[str, ...]:
    """The text of every other test file, read once for all the names below."""
    return tuple(p.read_text() for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name)


@pytest.mark.parametrize("name", attn_course.__all__)
def test_every_public_name_is_exercised_by_a_module_test(name):
    """Each name of __all__ appears in at least one of the per-module test files."""
    assert any(re.search(rf"\b{re.escape(name)}\b", text) for text in _module_tests()), f"no test uses {name}"


def test_version_matches_pyproject():
    import tomllib

    assert attn_course.__version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_import_is_silent_and_has_no_side_effects(tmp_path):
    """A fresh interpreter: importing prints nothing, opens no figure, leaves RNG and rcParams alone."""
    code = textwrap.dedent(
        """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import torch
        torch.manual_seed(0)
        rng = torch.get_rng_state()
        rc = dict(matplotlib.rcParams)
        import attn_course  # the import under test
        problems = []
        if plt.get_fignums():
            problems.append("figures opened")
        if not torch.equal(torch.get_rng_state(), rng):
            problems.append("global torch RNG used")
        if dict(matplotlib.rcParams) != rc:
            problems.append("rcParams changed")
        open(r"{out}", "w").write("\\n".join(problems))
        """
    ).format(out=tmp_path / "problems.txt")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == ""
    assert (tmp_path / "problems.txt").read_text() == ""


# Public names that no notebook calls but that students meet as API: classes the models are built from or return
# (their attributes are read in notebooks), kernels reached through KERNELS, and the pure function that the
# multi-head layer wraps. Every other public name must appear in a notebook's code, or it has no reason to exist.
STUDENT_API = {
    "SelfAttentionSteps",  # what self_attention_steps returns
    "constant",  # kernels, also reached through KERNELS
    "epanechnikov",
    "attention_pooling",  # the pooling step that the layers share: softmax of the scores, then weights @ values
    "multi_head_attention",  # the formula MultiHeadAttention wraps
    "AttentionDecoder",  # the decoders RNNSeq2Seq is built from
    "RNNDecoder",
    "History",  # what train_seq2seq returns
    "AddNorm",  # a block of the Transformer
}


@functools.cache
def _notebook_code() -> str:
    """The code cells of every notebook, read once for all the names below."""
    import json

    cells = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text())
        cells += ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    return "\n".join(cells)


@pytest.mark.parametrize("name", sorted(set(attn_course.__all__) - STUDENT_API))
def test_every_public_name_is_used_by_a_notebook(name):
    assert re.search(rf"\b{re.escape(name)}\b", _notebook_code()), f"no notebook uses {name}: make it private"


def test_the_student_api_list_names_only_public_names():
    assert STUDENT_API <= set(attn_course.__all__)


# A private name of a dependency (matplotlib's, torch's, ipywidgets') can change in any release: the package reads and
# calls none. Found in the source, not listed: an attribute that starts with "_" (but for dunders) may only be read
# on self or cls, or on a module of attn_course itself; keyword arguments and imported names follow the same rule.
OWN_MODULES = {"_validate"}


def _private_uses(path: Path) -> list[str]:
    import ast

    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and private(node.attr):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner not in ("self", "cls") and owner not in OWN_MODULES:
                found.append(f"{where} .{node.attr}")
        elif isinstance(node, ast.keyword) and node.arg and private(node.arg):
            found.append(f"{where} {node.arg}=")
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [f"{where} import {a.name}" for a in node.names if private(a.name)]
            if any(private(part) for part in (node.module or "").split(".")):
                found.append(f"{where} from {node.module}")
    return found


def test_the_package_uses_no_private_name_of_a_dependency():
    found = [use for path in sorted((ROOT / "attn_course").rglob("*.py")) for use in _private_uses(path)]
    assert found == []
