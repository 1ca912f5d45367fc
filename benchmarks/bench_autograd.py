"""torch.autograd.functional tasks over the functional-autograd models (upstream's
functional_autograd_benchmark): one timed call of the task per sample."""

from ._common import _suite
from ._tree import load

_choices = load("autograd/choices.py")
MODELS = list(_choices.MODELS)
TASKS = list(_choices.TASKS)


class FunctionalAutograd:
    version = "1"
    params = [MODELS, TASKS]
    param_names = ["model", "task"]
    # built and warmed up once per process (torchpulse.suite); 5 to 20 samples within 0.5 s
    rounds = 1
    number = 1
    warmup_time = 0.0
    repeat = (5, 20, 0.5)

    def setup(self, model, task):
        if _suite is None:
            raise NotImplementedError("this commit's package has no torchpulse.suite")
        if not hasattr(_suite, "autograd_task"):
            raise NotImplementedError("this commit's torchpulse has no functional-autograd suite")
        self.prepared = _suite.autograd_task(model, task)  # unsupported pairs: skipped

    def time_task(self, model, task):
        self.prepared.call()
        _suite.synchronize()
