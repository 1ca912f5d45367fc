"""pytest-benchmark results imported from --benchmark-json files."""

from ._stub import ImportedOnly, declared, params_of

if declared("pytest"):  # nothing imported yet: no empty tiles on the site

    class PytestBenchmark(ImportedOnly):
        version = "1"  # = torchpulse.external.STUBS["pytest"].version
        param_names = ["test"]
        params = params_of("pytest")

        def time_test(self, test):
            pass
