# The README's two commands: `make dashboard` and `make test`. Each creates or reuses .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# commits to benchmark (the last N of this repository: 5, the fewest that give every series
# a verdict) and the size preset to use
N ?= 5
PRESET ?= cpu
ASV := $(BIN)/asv
STAMP := $(VENV)/.installed
FLEET := $(VENV)/.fleet-installed
# the site's third-party scripts and styles (package.json pins asv's versions; npm ci)
ASSETS := node_modules/.package-lock.json
# everything but the stubs that hold imported results (benchmarks/external: nothing to run)
MEASURED := ^(?!external\.)
# first-parent commits on HEAD (recursively expanded: read when a recipe runs)
COMMITS = $(shell git rev-list --count --first-parent HEAD)

.PHONY: dashboard test venv lint browser clean

venv: $(STAMP) $(ASSETS)

# Reinstall when the package metadata or the pins change; constraints.txt pins torch to the
# offline CPU build (the package itself only asks for a lower bound).
$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	@touch $@

# Ray for `torchpulse fleet` (the [fleet] extra): the tests need it, the dashboard does not
$(FLEET): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev,fleet]"
	@touch $@

$(ASSETS): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm); torchpulse publish needs them for the site's assets" >&2; exit 2; }
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# headless Chromium for the browser tests (installed when missing and allowed; see the script)
browser:
	@scripts/install-browser

dashboard: $(STAMP) $(ASSETS)
	$(ASV) machine --yes >/dev/null
	@if [ "$(COMMITS)" -gt "$(N)" ]; then range="HEAD~$(N)..HEAD"; else range="ALL"; fi; \
	echo "== benchmarking $$range (preset $(PRESET), samples recorded; every default suite takes about 2 min a commit on 2 idle cores, docs/measurements.md)"; \
	TORCHPULSE_PRESET=$(PRESET) $(ASV) run --record-samples --interleave-rounds \
		--skip-existing-successful --show-stderr --bench "$(MEASURED)" "$$range"
	@# points the machine canary marks disturbed, and steps seen in one run only (the
	@# newest point of their series), are measured again (see README); a second pass for
	@# what the first one's readings changed or measured on a still disturbed machine
	@mkdir -p .asv && for pass in 1 2; do \
		bench=$$($(BIN)/torchpulse disturbed --newest $(N) \
			--hashfile .asv/disturbed.txt --confirm .asv/confirmed.txt) || exit 2; \
		[ -s .asv/disturbed.txt ] || break; \
		echo "== re-measuring $$(wc -l < .asv/disturbed.txt) commit(s), pass $$pass of 2: measured on a disturbed machine, or a step seen in one run only"; \
		TORCHPULSE_PRESET=$(PRESET) $(ASV) run --record-samples --interleave-rounds \
			--show-stderr --bench "$$bench" HASHFILE:.asv/disturbed.txt || exit $$?; \
	done
	$(BIN)/torchpulse publish
	@echo "   view it:  $(BIN)/torchpulse serve   (http://127.0.0.1:8080/; file:// does not work)"
	@echo "== regression alerts (torchpulse alert; 1 = regressions found, reported above)"
	@$(BIN)/torchpulse alert; rc=$$?; [ $$rc -le 1 ]

test: lint $(ASSETS) browser $(FLEET)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src benchmarks tests scripts

# what make dashboard builds again: the site, asv's environments, the list of points to
# re-measure. results/ and the confirmation ledger (.asv/confirmed.txt, which steps of those
# results were measured twice) stay.
clean:
	rm -rf html .asv/env .asv/disturbed.txt
