"""The compile suite: eager vs torch.compile over a self-contained model zoo, with the
semantics of PyTorch's dynamo benchmark harness (speedup, compile time, memory, accuracy).

zoo / providers (models) -> config (per-model settings) -> steps (one iteration) ->
accuracy / performance / memory (measurements) -> run (one model) -> worker (a process
with a timeout) -> harness (`torchpulse dynamo`) -> report (CSV, summary);
tracking is what benchmarks/bench_compile.py records per commit.
"""
