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

.PHONY: test demo lint bench clean install verify-submissions

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev,llm,integrations]"
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# The LLM adapters against their real packages, each in a virtual environment of its own (their
# pins conflict with each other and with the dev extra): `make test-<extra>` installs the extra
# in .venv-<extra> and runs its tests with ROUTINE_ENVS_REQUIRE=<extra>, so a missing package or
# loopback namespace fails instead of skipping (tests/real_packages.py). CI runs them after
# `make test`. openenv and verifiers-v1 serve or call models on 127.0.0.1 in a loopback-only
# network namespace; trl needs the CPU build of PyTorch first.
EXTRA_TESTS_openenv := tests/test_openenv.py
EXTRA_TESTS_verifiers-v1 := tests/test_verifiers_v1.py
EXTRA_TESTS_gem := tests/test_adapters.py -k gem
EXTRA_TESTS_trl := tests/test_adapters.py -k trl
EXTRA_FIRST_trl := "$(TORCH_SPEC)"
# TRL's GRPOTrainer through OpenEnv: two GRPO steps of examples/trl_openenv.py, its server and
# client in a loopback-only namespace
EXTRA_TESTS_trl-openenv := tests/test_trl_openenv.py
EXTRA_FIRST_trl-openenv := "$(TORCH_SPEC)"
LLM_EXTRAS := openenv verifiers-v1 gem trl trl-openenv

.venv-%/.installed: pyproject.toml
	test -x .venv-$*/bin/python || $(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	.venv-$*/bin/python -m pip install --quiet $(EXTRA_FIRST_$*) -e ".[$*]" pytest
	touch $@

$(addprefix test-,$(LLM_EXTRAS)): test-%: .venv-%/.installed
	ROUTINE_ENVS_REQUIRE=$* .venv-$*/bin/python -m pytest -q -p no:cacheprovider $(EXTRA_TESTS_$*)

test-llm-packages: $(addprefix test-,$(LLM_EXTRAS))

.PHONY: test-llm-packages $(addprefix test-,$(LLM_EXTRAS))

demo: $(STAMP)
	$(PY) -m baselines demo

# Every entry of the submissions registry (submissions/<protocol>/<tier>/<name>/) verified as
# data, then two runs of each trained again, chosen by a fresh seed that each line prints (give
# REGISTRY_SEED=N to repeat a check). The reruns run the submitters' code (reviewed in their pull
# request), each in a subprocess; docs/benchmark.md, "The submissions registry". CI runs it.
REGISTRY_SEED ?= $(shell od -An -N2 -tu2 /dev/urandom | tr -d ' ')
verify-submissions: $(STAMP)
	$(PY) -m baselines benchmark verify-submissions --rerun 2 --rerun-seed $(REGISTRY_SEED)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) -m routine_envs.bench

clean:
	rm -rf $(VENV) $(addprefix .venv-,$(LLM_EXTRAS)) results .pytest_cache .ruff_cache .hypothesis
