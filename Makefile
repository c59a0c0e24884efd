# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# bench/encoder.py's second environment (bench-peer-env below)
PEER_VENV := .venv-st5
# torch is pinned first: on the development machine 2.13.0 is a CPU build on local disk,
# and any other version or a bare range pulls a multi-GB CUDA build.
TORCH := torch==2.13.0

.PHONY: demo test install install-test install-bench bench bench-peer-env bench-stale clean docs docs-serve \
	docs-stale notebooks

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install -q -e '.[test,export,serve,docs]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed-test pyproject.toml
	$(BIN)/pip install -q -e '.[test,export,serve,bench]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-bench: $(VENV)/.installed-bench

# The comparing benchmarks, each against its peer at its best documented configuration (bench/README.md), one
# after another (never two at once, nor beside a training job): about an hour on 2 idle cores. Each rewrites
# its own section of bench/RESULTS.md.
BENCHES := generate lm_throughput embeddings scale bleu encoder recurrent cli_startup dropout forecast onnx
bench: $(VENV)/.installed-bench $(PEER_VENV)/.installed
	set -e; for b in $(BENCHES); do echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py; done

# bench/encoder.py's second environment: sentence-transformers' ONNX and OpenVINO backends, whose extras cannot
# install beside the project's transformers 5 (bench/st5-env.txt says why). About 2 minutes and 1.7 GB.
$(PEER_VENV)/.installed: bench/st5-env.txt
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/pip install -q --upgrade pip
	$(PEER_VENV)/bin/pip install -q $(TORCH)
	$(PEER_VENV)/bin/pip install -q -r bench/st5-env.txt
	touch $@

bench-peer-env: $(PEER_VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/seqlab demo

# The suite runs on every core (pytest-xdist, one torch thread per worker); its budget and how to profile it:
# tests/README.md. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= auto
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=25

# The documentation site (mkdocs.yml, docs/): every page's code runs while it builds, and a failing block fails the
# strict build. `make docs` builds the tiny sizes CI builds (tests/test_docs_site.py builds it too);
# `make docs FULL=1` the published one, every page at its documented size (SEQLAB_DOCS_FULL=1), recording each
# tutorial's results in docs/results/ (docs/page_results.py); PAGES=01,03 runs only those tutorials' code
# (SEQLAB_DOCS_PAGES), to redo one page. Output: site/.
docs: $(VENV)/.installed-test
	$(if $(FULL),SEQLAB_DOCS_FULL=1 )$(if $(PAGES),SEQLAB_DOCS_PAGES=$(PAGES) )$(BIN)/mkdocs build --strict

docs-serve: $(VENV)/.installed-test
	$(BIN)/mkdocs serve

# The tutorials to run again at the documented size, and why: no results, their code changed, the seqlab files they
# ran changed since (results.json's library hash, named), or recorded before that hash existed; with the
# `make docs FULL=1 PAGES=...` that redoes them. Exit status 1 where a recorded hash no longer holds
# (tests/test_docs_results.py fails then too).
docs-stale: $(VENV)/.installed
	$(BIN)/python docs/page_results.py

# The sections of bench/RESULTS.md older than the code they measured (bench/RESULTS.code.json), each with the files
# that changed since its run; exit status 1 while any is stale.
bench-stale: $(VENV)/.installed
	$(BIN)/python bench/stale.py

# The course's notebooks (seqlab/course/notebooks/, committed, in the wheel): generated from the tutorials and the
# tour (docs/notebook_pages.py; tests/test_notebooks.py fails while they differ), then each run at the tiny size in a
# Jupyter kernel, one after another, recording the seconds it took in recorded.json (`seqlab course list`); run it
# on an idle machine (about 2 min on 2 cores).
notebooks: $(VENV)/.installed-test
	$(BIN)/python docs/notebook_pages.py
	$(BIN)/python docs/notebook_run.py

# The pictures of `seqlab serve` in docs/screenshots/ (committed), outside CI: scripts/screenshots.py trains one run
# per page into runs/screenshots/ (about 40 min on 2 idle cores; a run with the same config is reused), then drives
# the system Chromium. CI only checks that the pages render (tests/test_serve_browser.py). Options, e.g. tiny sizes
# to check the script: $(BIN)/python scripts/screenshots.py --quick --out /tmp/shots-quick
.PHONY: screenshots
screenshots: $(VENV)/.installed-test
	$(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) build *.egg-info site
