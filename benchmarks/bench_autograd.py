"""torch.autograd.functional tasks over the functional-autograd models (upstream's
functional_autograd_benchmark): one timed call of the task per sample.

asv's parameters form a grid, and the models run different task lists (the ppl models all
ten, deepspeech vjp only, the others vjp, jvp and vhp): one class per task list, so every
declared (model, task) pair is one the model runs and nothing is skipped on every commit."""

import torch

from ._canary import MachineCanary  # noqa: F401  (runs after the pairs)
from ._common import _check_cpu_run, _cpu_only, _sizes, _suite
from ._common import _version as _suite_version
from ._tree import load

try:  # preimport for the forkserver: every pair's process would pay for it (~1 s, scipy)
    import torchpulse.autograd.run  # noqa: F401
except ImportError:  # an old commit's package: its benchmarks skip in setup
    pass


def _prewarm_functional():
    """First uses of torch.autograd.functional and its vectorised (vmap) forms cost 0.5-1.3 s
    in a fresh process; paid once here, in the forkserver parent, instead of per pair."""
    import torch.autograd.functional as F

    def f(t):
        return (t * t).sum()

    x = torch.ones(3)
    F.vjp(f, x, torch.tensor(1.0))
    F.jvp(f, x, x)
    F.vhp(f, x, x)
    F.jacobian(f, x, vectorize=True, strategy="forward-mode")
    F.hessian(f, x, vectorize=True)
    F.hessian(f, x, vectorize=True, outer_jacobian_strategy="forward-mode")


if _cpu_only():
    _prewarm_functional()

_choices = load("autograd/choices.py")


def _models(tasks):
    """The models whose task list is ``tasks``."""
    return [m for m in _choices.MODELS if set(_choices.MODEL_TASKS[m]) == set(tasks)]


def _grid(tasks):
    """[the models whose task list is ``tasks``, those tasks in the suite's order]."""
    return [_models(tasks), [t for t in _choices.TASKS if t in tasks]]


def _revision(model):
    return _sizes.REVISIONS.get(model, 1)


def _version(tasks):
    """2 (sizes from the working tree), the digest of these models' sizes and, for a model
    past its first definition, its revision, then the allocation policy (_common._version)."""
    return _suite_version({
        m: _sizes.AUTOGRAD[m] if _revision(m) == 1 else
        {"sizes": _sizes.AUTOGRAD[m], "revision": _revision(m)} for m in _models(tasks)})


class _Pairs:
    param_names = ["model", "task"]
    # built and warmed up once per process (torchpulse.suite); two rounds (see
    # _common._WorkloadSuite) of 2 to 6 samples within 0.15 s
    rounds = 2
    number = 1
    warmup_time = 0.0
    repeat = (2, 6, 0.15)

    def setup(self, model, task):
        _check_cpu_run()
        revision = _revision(model)
        if revision == 1:  # what every API-2 package measures
            self.prepared = _suite.autograd_task(model, task, _sizes.AUTOGRAD)
        elif getattr(_suite, "API_VERSION", 0) < 3:
            raise NotImplementedError(f"this commit's {model} predates revision {revision}")
        else:
            self.prepared = _suite.autograd_task(model, task, _sizes.AUTOGRAD, revision)

    def time_task(self, model, task):
        self.prepared.call()
        _suite.synchronize()


class FunctionalAutograd(_Pairs):
    """The models that run vjp, jvp and vhp (the class keeps its name: its series are the
    same as when it declared every model x task)."""

    version = _version(_choices.FAST_TASKS)
    params = _grid(_choices.FAST_TASKS)


class FunctionalAutogradVjpOnly(_Pairs):
    """Models with no double backward (deepspeech's LSTM)."""

    version = _version(_choices.FAST_TASKS_NO_DOUBLE_BACK)
    params = _grid(_choices.FAST_TASKS_NO_DOUBLE_BACK)


class FunctionalAutogradAllTasks(_Pairs):
    """Models that run all ten tasks (the ppl models)."""

    version = _version(_choices.ALL_TASKS)
    params = _grid(_choices.ALL_TASKS)
