"""fastrnns results imported from OSS/PEP JSON (`torchpulse import oss|pep`)."""

from ._stub import ImportedOnly, declared, params_of

if declared("fastrnns"):  # nothing imported yet: no empty tiles on the site

    class Fastrnns(ImportedOnly):
        version = "1"  # = torchpulse.external.STUBS["fastrnns"].version
        param_names = ["runner"]
        params = params_of("fastrnns")

        def time_forward(self, runner):
            pass

        def time_backward(self, runner):
            pass
