# The attention course. `make test` and `make html` work on a fresh clone: both set up first.
#   make setup   create .venv, install the pinned requirements and attn_course, register the kernel
#   make test    lint, unit tests, then every notebook re-run and compared with its stored outputs (nbval)
#   make lab     open the course in JupyterLab (localhost only, token authentication on)
#   make html    execute the notebooks and render the student site (build/site/index.html)
#   make test-browser  the site and the sliders in a real browser (Debian's chromium, headless)
#   make test-oldest   the unit tests again, with every runtime dependency at the lowest version pyproject.toml allows
#   make bench   how fast the course feels: notebooks, slider redraws, attention kernels against PyTorch
#   make student the notebooks without their solution cells, for teachers who grade (build/student/)
#   make grade SUBMISSIONS=folder  run each student's hand-ins in sandboxed kernels and grade them with the course's
#                checks (folder/<student>/NN_topic.ipynb; results in build/grades/)
#   make clean   remove .venv and everything built
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
KERNEL := attn-course
STAMP := $(VENV)/.setup-done
KERNEL_STAMP := $(VENV)/.kernel-done
PYTEST_WORKERS ?= 2
OLDEST := .venv-oldest
OLDEST_STAMP := $(OLDEST)/.setup-done

# No CPU path is pinned: MKL_CBWR, ATEN_CPU_CAPABILITY and OMP_NUM_THREADS stay as the caller sets them. nbval compares
# deterministic outputs exactly and never a trained number (README, "For course developers": what nbval compares),
# so the stored outputs pass on any processor; .ci/run proves it with PyTorch's and MKL's least vectorised paths.

# Python may keep the bytecode it compiles (in __pycache__ folders, ignored by git). Where PYTHONDONTWRITEBYTECODE is
# set, as on some CI machines, every process that imports attn_course, and every pytest worker that rewrites the
# tests' asserts, would compile them again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-oldest test unit nbval lint lab html test-browser test-oldest bench execute student grade clean

setup: $(STAMP) $(KERNEL_STAMP)

# Re-runs only when the requirements or the package metadata change. Every installed module is byte-compiled, else
# the first test run compiles torch's modules, and every run does where a shell outside make sets
# PYTHONDONTWRITEBYTECODE. pip compiles one file after another, most of the install's time; compileall uses every core
# (benchmarks/ci.md has the figures), and like pip it passes over files that are not valid Python for this interpreter
# (some packages ship such test data).
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt
	$(BIN)/python -c "import compileall, sysconfig; \
		compileall.compile_dir(sysconfig.get_path('purelib'), quiet=2, workers=0)"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip check
	touch $@

# The course kernel, registered in .venv: the notebooks ask for it by name.
$(KERNEL_STAMP): $(STAMP) Makefile
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (attention course)" >/dev/null
	touch $@

lint: setup
	$(BIN)/ruff check attn_course tests tools benchmarks notebooks conftest.py
	$(BIN)/ruff format --check attn_course tests tools benchmarks conftest.py

# tests/browser needs a browser and the built site: `make test-browser` runs it.
unit: setup
	$(BIN)/pytest -n $(PYTEST_WORKERS) tests --ignore=tests/browser

# Strict nbval: every code cell's output is compared with the stored one, except in cells tagged
# nbval-ignore-output (sliders, timings, trained numbers, whose claims the cells assert), which still run. nbval.cfg
# rewrites what may differ.
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with nbval.cfg
nbval: setup
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile $(NBVAL) notebooks

# The unit tests and nbval in one pytest run: the workers take whole files (a notebook's cells share one kernel), the
# files with the most tests first (pytest-xdist's default order for loadfile), so the short files fill the gaps at the
# end instead of one long file keeping a worker busy while the other waits.
# Each notebook's kernel is a process of its own, on logical CPUs // workers threads (tools/ipc_kernels.py: two kernels
# on two threads each would fight over two cores); the unit tests change no environment variable that outlives them
# (pytest's monkeypatch undoes each).
test: lint
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile $(NBVAL) notebooks tests --ignore=tests/browser

# A second environment: requirements.txt with torch, numpy, matplotlib, ... at their lower bounds in pyproject.toml
# and without the tools no unit test imports (tools/oldest_requirements.py), so that those bounds are versions the unit
# tests pass on. Not nbval: stored outputs may differ with other versions. Only make test-oldest uses it, and the
# unit tests import a small part of what it holds: its modules are compiled when first imported, not when installed,
# which costs the first test run less than compiling everything costs the install.
$(OLDEST_STAMP): requirements.txt pyproject.toml tools/oldest_requirements.py
	test -x $(OLDEST)/bin/python || $(PYTHON) -m venv $(OLDEST)
	$(PYTHON) tools/oldest_requirements.py > $(OLDEST)/requirements.txt
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python -m pip install --quiet --no-compile -r $(OLDEST)/requirements.txt
	$(OLDEST)/bin/python -m pip install --quiet --no-deps -e .
	$(OLDEST)/bin/python -m pip check
	touch $@

setup-oldest: $(OLDEST_STAMP)

# Not the tests marked tools (pyproject.toml): they check the course's files and tools and import no runtime
# dependency, so the lower bounds cannot change what they find (tests/test_environment.py checks the mark against each
# file's imports); make test runs them. make student, which one of them runs, uses .venv's nbconvert, which CI's first
# step may still be installing while this runs.
test-oldest: $(OLDEST_STAMP)
	$(OLDEST)/bin/python -c "import matplotlib, numpy, torch; print('oldest:', 'torch', torch.__version__, \
		'numpy', numpy.__version__, 'matplotlib', matplotlib.__version__)"
	$(OLDEST)/bin/pytest -n $(PYTEST_WORKERS) -m "not tools" tests --ignore=tests/browser

# --allow-root only where the user is root (containers), which Jupyter refuses otherwise.
lab: setup
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks --ServerApp.ip=127.0.0.1 \
		$(if $(filter 0,$(shell id -u)),--allow-root)

# Run notebooks top to bottom in a fresh course kernel and store their outputs: make execute NOTEBOOKS="notebooks/07_*"
execute: setup
	$(BIN)/python tools/execute_notebooks.py $(or $(NOTEBOOKS),$(error give NOTEBOOKS="notebooks/NN_*.ipynb"))

# PARAMS is passed to papermill for every notebook, for example PARAMS="-p SEED 1".
html: setup
	$(BIN)/python tools/build_site.py $(if $(PARAMS),--params '$(PARAMS)')

# Needs /usr/bin/chromium (Debian's chromium package; .ci/run installs it). Three pytest-xdist workers that start with
# a third each, and a worker that runs out takes tests from the others (--dist worksteal), so all stay busy to the end;
# each starts its own JupyterLab for the notebooks it gets. Three on two cores: each worker spends part of its time
# waiting for Chromium or a kernel, and a third fills those gaps (benchmarks/ci.md: the cores' use with two and three).
BROWSER_WORKERS ?= 3
test-browser: html
	$(BIN)/pytest -n $(BROWSER_WORKERS) --dist worksteal tests/browser

bench: setup
	$(BIN)/python benchmarks/bench.py

# The notebooks as a class hands them out: every cell tagged solution removed by nbconvert's TagRemovePreprocessor,
# everything else (outputs included) as stored. STUDENT sets the folder.
STUDENT ?= build/student
student: setup
	rm -rf $(STUDENT)
	$(BIN)/jupyter nbconvert --log-level=WARN --to notebook --output-dir $(STUDENT) \
		--TagRemovePreprocessor.enabled=True --TagRemovePreprocessor.remove_cell_tags=solution \
		notebooks/[0-9][0-9]_*.ipynb

# The hand-ins of a class, SUBMISSIONS/<student>/<notebook>.ipynb, each run in a kernel of its own (no network, the
# course's files read-only, limits on time and memory: tools/grade.py says what is and is not defended), then graded
# by the course's own checks: build/grades/grades.csv, summary.csv and report.html. GRADE_ARGS passes options, for
# example GRADE_ARGS="--jobs 1 --cell-timeout 120" (tools/grade.py --help).
grade: setup
	$(BIN)/python tools/grade.py $(or $(SUBMISSIONS),$(error give SUBMISSIONS=folder, holding <student>/<notebook>.ipynb)) \
		$(GRADE_ARGS)

clean:
	rm -rf $(VENV) $(OLDEST) build site/node_modules .pytest_cache .ruff_cache attn_course.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
