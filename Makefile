# The README's two commands: `make test` and `make demo`. Both create .venv and install on first use;
# the stamp file makes later runs skip the install until pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# CPU build of PyTorch, installed before the project so that no CUDA build is pulled in. The dev
# extra includes the cluster extra (Ray), so the Ray tests run too.
TORCH_SPEC ?= torch==2.13.0
# test processes (pytest-xdist); a file's tests stay in one process (--dist loadfile)
TEST_WORKERS ?= 2

.PHONY: test demo lint bench clean install test-openenv test-verifiers

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev,llm,integrations]"
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# The OpenEnv adapter against the real package, in a virtual environment of its own (openenv's
# pins are not the dev extra's; tests/test_openenv.py serves ids on 127.0.0.1 in a loopback-only
# network namespace and plays them with OpenEnv's clients). CI runs it after `make test`.
OPENENV_VENV := .venv-openenv
$(OPENENV_VENV)/.installed: pyproject.toml
	test -x $(OPENENV_VENV)/bin/python || $(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OPENENV_VENV)/bin/python -m pip install --quiet -e ".[openenv]" pytest
	touch $@

test-openenv: $(OPENENV_VENV)/.installed
	ROUTINE_ENVS_REQUIRE=openenv $(OPENENV_VENV)/bin/python -m pytest -q -p no:cacheprovider \
		tests/test_openenv.py

# The verifiers v1 adapter (verifiers>=0.4) the same way, in .venv-verifiers: its taskset loaded by
# id and evaluated by verifiers' own run_eval against a scripted model on 127.0.0.1.
VERIFIERS_VENV := .venv-verifiers
$(VERIFIERS_VENV)/.installed: pyproject.toml
	test -x $(VERIFIERS_VENV)/bin/python || $(PYTHON) -m venv $(VERIFIERS_VENV)
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VERIFIERS_VENV)/bin/python -m pip install --quiet -e ".[verifiers-v1]" pytest
	touch $@

test-verifiers: $(VERIFIERS_VENV)/.installed
	ROUTINE_ENVS_REQUIRE=verifiers $(VERIFIERS_VENV)/bin/python -m pytest -q -p no:cacheprovider \
		tests/test_verifiers_v1.py

demo: $(STAMP)
	$(PY) -m baselines demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) -m routine_envs.bench

clean:
	rm -rf $(VENV) $(OPENENV_VENV) $(VERIFIERS_VENV) results .pytest_cache .ruff_cache .hypothesis
