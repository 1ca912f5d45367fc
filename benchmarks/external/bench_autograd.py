"""functional_autograd_benchmark results imported from its markdown table."""

from ._stub import ImportedOnly, declared, params_of

if declared("autograd"):  # nothing imported yet: no empty tiles on the site

    class FunctionalAutograd(ImportedOnly):
        version = "1"  # = torchpulse.external.STUBS["autograd"].version
        param_names = ["model", "task"]
        params = params_of("autograd")

        def time_task(self, model, task):
            pass
