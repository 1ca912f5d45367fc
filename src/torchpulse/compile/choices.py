"""The compile suite's names: backends, the zoo's models and what the asv suite tracks (its
sizes are the presets', presets.PRESETS).

The one source of these lists: the zoo (zoo.py), the CLI and the asv suite read them from
here. Standard library only: `torchpulse --help` must not pay for importing torch, and the
asv suite loads this file by path from the working tree (the torchpulse installed for a
measured commit may be older).
"""

BACKENDS = ("eager", "aot_eager", "inductor")
# the self-contained zoo, in zoo.ZOO's order (providers may add more at run time)
MODELS = ("cnn_bn", "resnet18", "lstm", "transformer_encoder", "mlp", "attention",
          "embedding_bag", "control_flow")
# what benchmarks/bench_compile.py tracks per commit (eager would only time eager twice)
TRACKED_BACKENDS = ("aot_eager", "inductor")
