# The README's two commands: `make dashboard` and `make test`. Each creates or reuses .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# commits to benchmark (the last N of this repository) and the size preset to use
N ?= 3
PRESET ?= cpu
ASV := $(BIN)/asv
STAMP := $(VENV)/.installed
# everything but the stubs that hold imported results (benchmarks/external: nothing to run)
MEASURED := ^(?!external\.)
# first-parent commits on HEAD (recursively expanded: read when a recipe runs)
COMMITS = $(shell git rev-list --count --first-parent HEAD)

.PHONY: dashboard test venv lint clean

venv: $(STAMP)

# Reinstall when the package metadata changes; torch==2.13.0 is the offline CPU build.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $@

dashboard: $(STAMP)
	$(ASV) machine --yes >/dev/null
	@if [ "$(COMMITS)" -gt "$(N)" ]; then range="HEAD~$(N)..HEAD"; else range="ALL"; fi; \
	echo "== benchmarking $$range (preset $(PRESET), samples recorded)"; \
	TORCHPULSE_PRESET=$(PRESET) $(ASV) run --record-samples --skip-existing-successful \
		--show-stderr --bench "$(MEASURED)" "$$range"
	$(ASV) publish
	@echo "== site written to html/index.html"
	@echo "   view it:  $(ASV) preview   (serves html/ over HTTP; file:// does not work)"
	@echo "== regression alerts (torchpulse alert; 1 = regressions found, reported above)"
	@$(BIN)/torchpulse alert; rc=$$?; [ $$rc -le 1 ]

test: lint
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src benchmarks tests scripts

clean:
	rm -rf html .asv
