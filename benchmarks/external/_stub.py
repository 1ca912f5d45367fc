"""The base of the stub suites that hold imported results (underscore: no benchmarks here).

The stubs never run (setup raises NotImplementedError, so asv records a skip; `make
dashboard` also leaves them out with --bench). They exist so that asv's discovery keeps them
in benchmarks.json with the parameter values already imported; a stub whose format nothing
was imported from is not declared (asv would show it as empty tiles). Their definitions live in
src/torchpulse/results/external.py, loaded by path from this working tree: the torchpulse
installed in asv's environment is the measured commit's, which may predate it.
"""

from .._tree import ROOT, load

external = load("results/external.py")
try:
    RESULTS_DIR = external.results_dir_of(ROOT / "asv.conf.json")
except (OSError, ValueError):  # no readable config: the defaults alone
    RESULTS_DIR = None
# one scan of the results tree for all stub modules of this process
_SCANNED = external.scan(RESULTS_DIR) if RESULTS_DIR is not None else {}


def declared(key):
    """Whether the stub of ``key`` has imported results to keep (else it is left out)."""
    return external.has_imports(external.STUBS[key], RESULTS_DIR, _SCANNED)


def params_of(key):
    return external.stub_params(external.STUBS[key], RESULTS_DIR, _SCANNED)


class ImportedOnly:
    def setup(self, *params):
        raise NotImplementedError("imported results only: load them with `torchpulse import`")
