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
# pytest-xdist workers for make test: one per core on the 2-core machines CI runs on, each
# kept to its core (tests/conftest.py); each test file runs whole in one worker, so a
# module's shared fixture is built once, and the end-to-end files start first, in
# conftest's order (--no-loadscope-reorder)
TEST_WORKERS ?= 2

.PHONY: dashboard test venv lint browser clean

venv: $(STAMP) $(ASSETS)

# Reinstall when the package metadata or the pins change; constraints.txt pins torch to the
# offline CPU build (the package itself only asks for a lower bound). pip byte-compiles what
# it installs one file at a time (50 s for torch here); compileall afterwards uses every core
# (24 s). Like pip, it passes over a file it cannot compile (torch ships one in Python 3.12
# syntax), hence its `|| true`: the install itself fails make as before. $(1): the extras.
COMMA := ,
define install
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e ".[$(1)]"
	@$(BIN)/python -m compileall -qq -j 0 $(VENV)/lib || true
endef

$(STAMP): pyproject.toml constraints.txt
	$(call install,dev)
	@touch $@

# The same with Ray for `torchpulse fleet` (the [fleet] extra): the tests need it, the
# dashboard does not. One install for both stamps: make test builds this one first, so a
# fresh clone installs once.
$(FLEET): pyproject.toml constraints.txt
	$(call install,dev$(COMMA)fleet)
	@touch $(STAMP) $@

$(ASSETS): package.json package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm); torchpulse publish needs them for the site's assets" >&2; exit 2; }
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# headless Chromium for the browser tests (installed when missing and allowed; see the script)
browser:
	@scripts/install-browser

# the main job (torchpulse dashboard): measure the last N commits, measure again what the
# machine canary saw disturbed, publish the site, print the alert; regressions (exit 1) are
# its answer, not a failure of make
dashboard: $(STAMP) $(ASSETS)
	@$(BIN)/torchpulse dashboard -n $(N) --preset $(PRESET); rc=$$?; \
	echo "   view the site:  $(BIN)/torchpulse serve   (http://127.0.0.1:8080/)"; [ $$rc -le 1 ]

test: $(FLEET) lint $(ASSETS) browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check src benchmarks tests scripts

# what make dashboard builds again: the site, asv's environments, the list of points to
# re-measure. results/ and the confirmation ledger (.asv/confirmed.txt, which steps of those
# results were measured twice) stay.
clean:
	rm -rf html .asv/env .asv/disturbed.txt .asv/dashboard-commits.txt
