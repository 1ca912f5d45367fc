"""The functional-autograd workloads: torch.autograd.functional (vjp, jvp, hvp, ... ) over a
set of models, as PyTorch's functional_autograd_benchmark measures them."""
