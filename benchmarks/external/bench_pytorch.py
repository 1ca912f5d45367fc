"""PyTorch benchmark database records (v3) imported with `torchpulse import pytorch-v3`: one
series per benchmark, model, backend, mode, dtype and device, one metric each. Higher-is-better
metrics are stored inverted (track_inverse) so that every series here is lower-is-better."""

from ._stub import ImportedOnly, declared, params_of

if declared("pytorch"):  # nothing imported yet: no empty tiles on the site

    class PyTorchV3(ImportedOnly):
        version = "1"  # = torchpulse.external.STUBS["pytorch"].version
        param_names = ["series", "metric"]
        params = params_of("pytorch")

        def track_value(self, series, metric):
            pass

        track_value.unit = "value"

        def track_inverse(self, series, metric):
            pass

        track_inverse.unit = "1/value"
