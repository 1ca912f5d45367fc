"""Dynamo harness results imported from its performance and accuracy CSVs. Every metric is
lower-is-better: the harness's speedup is stored as compiled/eager latency."""

from ._stub import ImportedOnly, declared, params_of

if declared("dynamo"):  # nothing imported yet: no empty tiles on the site

    class Dynamo(ImportedOnly):
        version = "1"  # = torchpulse.external.STUBS["dynamo"].version
        param_names = ["device", "model"]
        params = params_of("dynamo")

        def track_latency_ratio(self, device, model):
            pass

        track_latency_ratio.unit = "compiled/eager"

        def time_latency(self, device, model):
            pass

        def time_compilation(self, device, model):
            pass

        def track_memory_ratio(self, device, model):
            pass

        track_memory_ratio.unit = "compiled/eager"

        def track_accuracy_failure(self, device, model):
            pass

        track_accuracy_failure.unit = "failed"

        def track_graph_breaks(self, device, model):
            pass

        track_graph_breaks.unit = "breaks"
