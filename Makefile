# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned first: on the development machine 2.13.0 is a CPU build on local disk,
# and any other version or a bare range pulls a multi-GB CUDA build.
TORCH := torch==2.13.0

.PHONY: demo test install install-test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install -q -e '.[test,export,serve]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/seqlab demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build *.egg-info
