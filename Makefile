# The README's two commands: `make run` and `make test`. Everything they need is installed
# here, into .venv, so a fresh machine with Python 3.11+ needs nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PG_URL ?= postgres://postgres@127.0.0.1:5432/claimdesk
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint format bench soak clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The API's Python client (client/), editable: the README's example imports it, and the
# tests import the working copy.
$(VENV)/.installed: requirements.txt client/pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q -e client
	touch $@

$(VENV)/.installed-test: requirements-test.txt $(VENV)/.installed
	$(BIN)/pip install -q -r requirements-test.txt
	touch $@

## make run: install, migrate, load the demo project and its users (once), serve on :8000 with
## a worker beside the server for background jobs (Ctrl-C stops both)
run: $(VENV)/.installed
	DEBUG=true $(BIN)/python manage.py migrate --noinput
	DEBUG=true $(BIN)/python manage.py load_demo
	DEBUG=true PY=$(BIN)/python bash bin/run-dev

## make test: the whole suite on PostgreSQL (with the browser tests), then on SQLite
test: $(VENV)/.installed-test
	$(BIN)/ruff check .
	@bash bin/test-legs

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## make bench: every benchmark, on scratch PostgreSQL databases (claimdesk_bench, claimdesk_tasks_bench,
## claimdesk_bench_http); bench/reference.py is the reference one: gunicorn over real HTTP
bench: $(VENV)/.installed-test
	$(BIN)/python bench/import_bundle.py
	$(BIN)/python bench/labelling.py
	$(BIN)/python bench/agreement_gold.py
	$(BIN)/python bench/tasks.py
	$(BIN)/python bench/reports.py
	$(BIN)/python bench/reference.py
	$(BIN)/python bench/calibration_simulation.py

## make soak: the chaos soak (bench/soak.py, claimdesk_bench_soak): 40 reviewers and a lead for
## 10 minutes on two app servers, the worker killed, connections terminated, Redis restarted
soak: $(VENV)/.installed-test
	$(BIN)/python bench/soak.py

clean:
	rm -rf $(VENV) var staticfiles test-artifacts .pytest_cache
