"""Models built to fail, one per status of the compile suite (loaded with --models-from)."""

import os
import time

import torch
from torch import nn

from torchpulse.compile.zoo import ModelSpec


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class EagerCrash(_Linear):
    def forward(self, x):
        raise RuntimeError("this model cannot run")


class Flaky(_Linear):
    calls = 0

    def forward(self, x):
        Flaky.calls += 1  # a different output every call, eager or not
        return self.fc(x) + Flaky.calls


class CompiledDiffers(_Linear):
    def forward(self, x):
        y = self.fc(x)
        if torch.compiler.is_compiling():
            y = y + 1.0  # only the compiled graph is wrong
        return y


def _define_op() -> None:
    """torchpulse_faulty::double: doubles in eager; its fake (tracing) kernel raises, so
    torch.compile fails on it while eager runs."""
    if hasattr(torch.ops.torchpulse_faulty, "double"):
        return  # this file was loaded before in this process

    @torch.library.custom_op("torchpulse_faulty::double", mutates_args=())
    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @double.register_fake
    def _(x):
        raise RuntimeError("fails under torch.compile only")


_define_op()


class CompiledCrash(_Linear):
    def forward(self, x):
        return torch.ops.torchpulse_faulty.double(self.fc(x))


class Sleeper(_Linear):
    def forward(self, x):
        time.sleep(60)
        return self.fc(x)


class Exits(_Linear):
    def forward(self, x):
        os._exit(3)  # the whole process goes, as a segfault would


def _maker(cls):
    def make(size, batch, gen):
        return cls(), (torch.randn(batch, 4, generator=gen),)
    return make


def _cannot_load(size, batch, gen):
    raise FileNotFoundError("weights.bin")


MODELS = [
    ModelSpec("faulty_load", _cannot_load, {"smoke": 2}),
    ModelSpec("faulty_eager", _maker(EagerCrash), {"smoke": 2}),
    ModelSpec("faulty_flaky", _maker(Flaky), {"smoke": 2}),
    ModelSpec("faulty_accuracy", _maker(CompiledDiffers), {"smoke": 2}),
    ModelSpec("faulty_compile", _maker(CompiledCrash), {"smoke": 2}),
    ModelSpec("faulty_sleeper", _maker(Sleeper), {"smoke": 2}),
    ModelSpec("faulty_exit", _maker(Exits), {"smoke": 2}),
    ModelSpec("fine_linear", _maker(_Linear), {"smoke": 2}),
]
