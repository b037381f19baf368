"""The pinned environment: requirements.txt, environment.yml, pyproject.toml and `make setup` agree."""

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pytorch": "torch"}  # conda-forge names that differ from PyPI
CONDA_ONLY = {"python", "pip"}
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9][A-Za-z0-9.+!_-]*)$")


def _requirement_lines():
    lines = []
    for raw in (ROOT / "requirements.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


def _pip_pins():
    pins = {}
    for line in _requirement_lines():
        match = PIN.match(line)
        assert match, f"requirements.txt: {line!r} is not pinned as name==version"
        pins[canonicalize_name(match["name"])] = match["version"]
    return pins


def _environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _conda_pins():
    pins = {}
    for entry in _environment()["dependencies"]:
        if isinstance(entry, dict):
            continue  # the pip sub-list
        name, _, rest = str(entry).partition("=")
        version = rest.split("=", 1)[0]  # "2.13.0=cpu_*" -> "2.13.0" (drop the build string)
        if name in CONDA_ONLY:
            continue
        pins[canonicalize_name(CONDA_TO_PIP.get(name, name))] = version
    return pins


def _pip_section():
    sections = [entry["pip"] for entry in _environment()["dependencies"] if isinstance(entry, dict) and "pip" in entry]
    assert len(sections) == 1, "environment.yml needs exactly one pip: sub-list"
    return sections[0]


def test_requirements_are_all_pinned_exactly():
    lines = _requirement_lines()
    assert lines, "requirements.txt lists no packages"
    for line in lines:
        assert PIN.match(line), f"{line!r} must be pinned with == (no ranges, extras or markers)"
    names = [canonicalize_name(PIN.match(line)["name"]) for line in lines]
    assert len(names) == len(set(names)), "a package is listed twice"


def test_conda_entries_are_pinned():
    for entry in _environment()["dependencies"]:
        if isinstance(entry, str) and entry not in CONDA_ONLY:
            assert re.match(r"^[A-Za-z0-9._-]+=[0-9][^=\s]*(=\S+)?$", entry), f"{entry!r} is not pinned"


def test_environment_yml_and_requirements_list_the_same_packages():
    pip, conda = _pip_pins(), _conda_pins()
    only_conda, only_pip = sorted(set(conda) - set(pip)), sorted(set(pip) - set(conda))
    assert set(conda) == set(pip), f"only in environment.yml: {only_conda}; only in requirements.txt: {only_pip}"


@pytest.mark.parametrize("name", sorted(_pip_pins()))
def test_environment_yml_and_requirements_pin_the_same_version(name):
    assert _conda_pins().get(name) == _pip_pins()[name]


def test_environment_yml_installs_the_checkout():
    assert "-e ." in _pip_section()
    assert "pip" in _environment()["dependencies"], "conda needs pip itself to run the pip: sub-list"


def test_pyproject_dependencies_are_satisfied_by_the_pins():
    pins = _pip_pins()
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for spec in dependencies:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (a dependency in pyproject.toml) is not pinned in requirements.txt"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} violates {spec!r}"


# ----------------------------------------------------------------------------------------------
# Makefile: `make setup` installs requirements.txt
# ----------------------------------------------------------------------------------------------


def _makefile_rules():
    """{target: (prerequisites, recipe lines)} with $(VAR) expanded; simple enough for this Makefile."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    variables = {}
    rules = {}
    current = None

    def expand(s):
        for _ in range(5):
            s = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m[1], m[0]), s)
        return s

    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            rules[current][1].append(expand(line.strip()))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        assignment = re.match(r"^(\w+)\s*(?::=|\?=|=)\s*(.*)$", line)
        if assignment:
            variables[assignment[1]] = assignment[2].strip()
            current = None
            continue
        rule = re.match(r"^([^:=\t][^:=]*):(?!=)(.*)$", line)
        if rule:
            targets = expand(rule[1]).split()
            current = targets[0]
            rules.setdefault(current, ([], []))[0].extend(expand(rule[2]).split())
    return rules


def _recipe_of(rules, target, seen=None):
    """The recipe lines of target and of every prerequisite it builds, recursively."""
    seen = set() if seen is None else seen
    if target in seen or target not in rules:
        return []
    seen.add(target)
    prereqs, recipe = rules[target]
    lines = list(recipe)
    for prereq in prereqs:
        lines += _recipe_of(rules, prereq, seen)
    return lines


def test_make_setup_installs_requirements_txt():
    rules = _makefile_rules()
    assert "setup" in rules
    recipe = _recipe_of(rules, "setup")
    assert any(re.search(r"\bpip install\b.*(-r|--requirement)\s+requirements\.txt\b", line) for line in recipe), recipe
    assert any(re.search(r"\bpip install\b.*-e \.", line) for line in recipe), "make setup must install attn_course"


def test_make_setup_reruns_when_requirements_change():
    rules = _makefile_rules()
    stamp_targets = [t for t in rules["setup"][0] if t in rules]
    assert any("requirements.txt" in rules[t][0] for t in stamp_targets)


def _oldest_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("oldest_requirements", ROOT / "tools" / "oldest_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _top_level_imports(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_oldest_environment_leaves_out_only_what_the_unit_tests_never_import():
    """`make test-oldest` installs requirements.txt without the site's, the browser tests' and the linter's tools: each
    left-out name is pinned in requirements.txt, is no runtime dependency, and no unit test or attn_course module
    imports it (found by the distribution that provides each imported module: yaml is pyyaml's)."""
    from importlib.metadata import packages_distributions

    tool = _oldest_tool()
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins, runtime = _pip_pins(), {canonicalize_name(Requirement(d).name) for d in dependencies}
    left_out = {canonicalize_name(name) for name in tool.NOT_FOR_UNIT_TESTS}
    assert left_out <= set(pins), f"not in requirements.txt: {sorted(left_out - set(pins))}"
    assert not left_out & runtime, f"runtime dependencies must be in the oldest test: {sorted(left_out & runtime)}"
    lines = tool.oldest_requirements()
    kept = {canonicalize_name(PIN.match(line)["name"]) for line in lines}
    assert kept == set(pins) - left_out
    sources = [*(ROOT / "tests").glob("*.py"), *(ROOT / "attn_course").rglob("*.py")]
    imported = set().union(*(_top_level_imports(path) for path in sources))
    provider = packages_distributions()
    used = {canonicalize_name(dist) for module in imported for dist in provider.get(module, [])}
    assert "pyyaml" in used and "torch" in used, "the imports were not mapped to their distributions"
    assert not left_out & used, f"the unit tests or attn_course import {sorted(left_out & used)}"


def test_jsonschema_checks_iris_with_rfc3987_and_never_builds_rfc3987_syntax_parsers():
    """nbformat imports jsonschema in every process that reads a notebook (each pytest process, through nbval's
    plugin; papermill, JupyterLab, Sphinx). With rfc3987 installed (requirements.txt) jsonschema checks the "iri"
    format with it and never imports rfc3987-syntax, whose 38 parsers took 2 s to build at every import. The format
    is still checked: a text without a scheme is no IRI, an absolute one with non-ASCII characters is."""
    import sys

    import jsonschema

    assert "rfc3987" in sys.modules and "rfc3987_syntax" not in sys.modules
    checker = jsonschema.FormatChecker()
    assert checker.conforms("https://例え.jp/ü?q=1", "iri")
    assert not checker.conforms("no scheme here", "iri")


def _runtime_modules() -> set[str]:
    """attn_course and the top-level modules of its runtime dependencies in pyproject.toml (PIL for pillow...)."""
    from importlib.metadata import packages_distributions

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    runtime = {canonicalize_name(Requirement(d).name) for d in dependencies}
    provided = packages_distributions()
    return {"attn_course"} | {m for m, dists in provided.items() if {canonicalize_name(d) for d in dists} & runtime}


def test_the_tools_mark_is_on_exactly_the_test_files_that_import_no_runtime_dependency():
    """`make test-oldest` leaves out the files marked ``tools``. A mark on a file that imports attn_course, a runtime
    dependency or a test helper (which may import them) would hide it from the test at the lower bounds; a file that
    imports none of them and is not marked would run twice for nothing (and `make student` runs .venv's nbconvert,
    which CI's first step may still be installing while the oldest test runs)."""
    runtime = _runtime_modules()
    assert {"torch", "numpy", "matplotlib", "PIL", "IPython"} <= runtime
    local = {path.stem for path in (ROOT / "tests").glob("*.py")}
    wrong = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        needs = sorted(_top_level_imports(path) & (runtime | local))
        marked = "\npytestmark = pytest.mark.tools" in path.read_text(encoding="utf-8")
        if marked and needs:
            wrong.append(f"{path.name} is marked tools but imports {needs}")
        if not marked and not needs:
            wrong.append(f"{path.name} imports no runtime dependency and is not marked tools")
    assert not wrong, "\n".join(wrong)
