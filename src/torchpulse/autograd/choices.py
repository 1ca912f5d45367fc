"""The functional-autograd names: models, tasks, and which tasks each model runs (upstream's
functional_autograd_benchmark lists).

The one source of these lists: the models (models.py), the tasks (tasks.py), the CLI, the
asv suite and the stubs for imported results read them from here. Standard library only:
the asv suite loads this file by path from the working tree (the torchpulse installed for a
measured commit may be older), and `torchpulse --help` must not import torch.
"""

FAST_TASKS_NO_DOUBLE_BACK = ("vjp",)
FAST_TASKS = (*FAST_TASKS_NO_DOUBLE_BACK, "vhp", "jvp")
ALL_TASKS_NON_VECTORIZED = (*FAST_TASKS, "hvp", "jacobian", "hessian")
VECTORIZED_TASKS = ("hessian_fwdrev", "hessian_revrev", "jacfwd", "jacrev")
ALL_TASKS = (*ALL_TASKS_NON_VECTORIZED, *VECTORIZED_TASKS)
# the order of the asv suite's and the stubs' task parameter (stored results follow it)
TASKS = ("vjp", "jvp", "vhp", "hvp", "jacobian", "hessian", "jacfwd", "jacrev",
         "hessian_fwdrev", "hessian_revrev")

# model -> the tasks it runs, as upstream: the ppl models all ten, deepspeech vjp only (no
# double backward through its LSTM), the others vjp, vhp and jvp
MODEL_TASKS = {
    "resnet18": FAST_TASKS,
    "fcn_resnet": FAST_TASKS,
    "detr": FAST_TASKS,
    "ppl_simple_reg": ALL_TASKS,
    "ppl_robust_reg": ALL_TASKS,
    "wav2letter": FAST_TASKS,
    "deepspeech": FAST_TASKS_NO_DOUBLE_BACK,
    "transformer": FAST_TASKS,
    "multiheadattn": FAST_TASKS,
}
MODELS = tuple(MODEL_TASKS)
