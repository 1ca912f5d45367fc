"""Accuracy of a compiled model against eager, with the upstream dynamo harness's rules.

``same`` follows ``torch._dynamo.utils.same`` for what the zoo returns (tensors, floats and
nested lists/tuples/dicts of them): allclose at ``tol``; failing that, the compiled result
passes when its RMSE against the float64 run is at most ``multiplier`` times eager's RMSE
(plus tol/10); in cosine mode, when the cosine similarity is at least 0.99. It is written
here rather than imported because that function is private and its signature changes
between torch releases, while the benchmarks run against several.

``check`` runs the harness's sequence and returns its status: a float64 reference (cosine mode
if it cannot be made), two eager runs that must agree exactly, then the compiled run.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torchpulse.compile.report import error_line
from torchpulse.compile.steps import IterFn, Prepared, clone_inputs, reset_rng_state

log = logging.getLogger(__name__)
COSINE_THRESHOLD = 0.99

PASS = "pass"
PASS_DUE_TO_SKIP = "pass_due_to_skip"
FAIL_ACCURACY = "fail_accuracy"
FAIL_TO_RUN = "fail_to_run"
EAGER_FAIL_TO_RUN = "eager_fail_to_run"
EAGER_TWO_RUNS_DIFFER = "eager_two_runs_differ"
MODEL_FAIL_TO_LOAD = "model_fail_to_load"
TIMEOUT = "timeout"


def rmse(ref: torch.Tensor, res: torch.Tensor) -> float:
    return torch.sqrt(torch.mean(torch.square(ref.double() - res.double()))).item()


def _multiplier(ref: torch.Tensor, res: torch.Tensor, tol: float) -> float:
    if res.dtype in (torch.float16, torch.bfloat16):
        return 3.0
    # noise dominates the error of small tensors and 1x1 maps; large tol = "higher" models
    if ref.numel() < 1000 or (ref.ndim == 4 and ref.shape[-1] == ref.shape[-2] == 1) \
            or tol >= 2e-2:
        return 3.0
    return 2.0


def same(ref: Any, res: Any, fp64_ref: Any = None, tol: float = 1e-4,
         cosine: bool = False, equal_nan: bool = False) -> bool:
    """Whether ``res`` matches ``ref`` (see the module docstring)."""
    if fp64_ref is None:
        fp64_ref = ref
    if isinstance(ref, (list, tuple)):
        if not isinstance(res, (list, tuple)) or len(ref) != len(res):
            log.error("accuracy: length or type mismatch")
            return False
        fp64 = fp64_ref if isinstance(fp64_ref, (list, tuple)) else [None] * len(ref)
        return all(same(a, b, c, tol, cosine, equal_nan)
                   for a, b, c in zip(ref, res, fp64, strict=True))
    if isinstance(ref, dict):
        if not isinstance(res, dict) or set(ref) != set(res):
            log.error("accuracy: dict keys differ")
            return False
        return all(same(ref[k], res[k], fp64_ref[k] if isinstance(fp64_ref, dict) else None,
                        tol, cosine, equal_nan) for k in sorted(ref))
    if isinstance(ref, (torch.Tensor, float)):
        ref_t = ref if isinstance(ref, torch.Tensor) else torch.tensor(ref)
        if not isinstance(res, (torch.Tensor, float)):
            return False
        res_t = res if isinstance(res, torch.Tensor) else torch.tensor(res)
        fp64_t = fp64_ref if isinstance(fp64_ref, torch.Tensor) else torch.tensor(fp64_ref)
        if ref_t.dtype != res_t.dtype or ref_t.shape != res_t.shape:
            log.error("accuracy: dtype or shape mismatch %s %s / %s %s", ref_t.dtype,
                      tuple(ref_t.shape), res_t.dtype, tuple(res_t.shape))
            return False
        if not ref_t.is_floating_point():
            return bool(torch.equal(ref_t, res_t))
        res_t = res_t.to(ref_t.device)
        if cosine:
            a, b = ref_t.flatten().float(), res_t.flatten().float()
            if torch.allclose(a, b, atol=tol, rtol=tol, equal_nan=True):
                return True  # zeros and nans: cosine similarity is meaningless there
            score = torch.nn.functional.cosine_similarity(a, b, dim=0, eps=1e-6).item()
            if score < COSINE_THRESHOLD:
                log.error("accuracy: cosine similarity %.5f", score)
            return score >= COSINE_THRESHOLD
        if torch.allclose(ref_t, res_t, atol=tol, rtol=tol, equal_nan=equal_nan):
            return True
        if fp64_t.dtype != torch.float64:
            log.error("accuracy: not allclose at tol %g and no float64 reference", tol)
            return False
        fp64_t = fp64_t.to(ref_t.device)
        ref_error = rmse(fp64_t, ref_t)
        res_error = rmse(fp64_t, res_t)
        multiplier = _multiplier(fp64_t, res_t, tol)
        ok = res_error <= multiplier * ref_error + tol / 10.0
        if not ok and equal_nan and math.isnan(ref_error) and math.isnan(res_error):
            ok = True
        if not ok:
            log.error("accuracy: RMSE (compiled - fp64) %.3g > %.0f x (eager - fp64) %.3g + "
                      "tol/10, shape %s", res_error, multiplier, ref_error,
                      tuple(res_t.shape))
        return ok
    # anything else (ints, None, strings) must be equal
    return ref == res


def _detach(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_detach(v) for v in value)
    if isinstance(value, dict):
        return {k: _detach(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class AccuracyResult:
    status: str
    detail: str = ""  # why, for anything but pass


def check(prepared: Prepared, compile_fn: Callable[[IterFn], IterFn], tol: float = 1e-4,
          cosine: bool = False, non_deterministic: bool = False,
          compiled: IterFn | None = None) -> AccuracyResult:
    """The harness's accuracy sequence for one prepared model. ``compile_fn`` turns the
    iteration function into the compiled one (``torch.compile(fn, backend=...)``); a
    ``compiled`` iteration already compiled for this model (the one a measurement timed) is
    checked instead, without compiling again."""
    fp64_result = None
    try:
        model64, inputs64 = prepared.as_float64()
        reset_rng_state()
        fp64_result = _detach(prepared.run(prepared.iter_fn, model64, inputs64))
        del model64, inputs64
    except Exception as exc:  # as upstream: no float64 run, compare by cosine similarity
        log.warning("no float64 reference (%s): cosine mode", error_line(exc))
        cosine = True

    results = []
    for _ in range(2):
        try:
            reset_rng_state()
            results.append(_detach(prepared.run(prepared.iter_fn, prepared.copy(),
                                                clone_inputs(prepared.inputs))))
        except Exception as exc:
            return AccuracyResult(EAGER_FAIL_TO_RUN, error_line(exc))
    expected, rerun = results
    if not non_deterministic:
        try:
            agree = same(expected, rerun, None, tol=0.0)
        except Exception:
            agree = False
        if not agree:
            return AccuracyResult(EAGER_TWO_RUNS_DIFFER, "two eager runs differ at tol 0")
    del rerun

    try:
        if compiled is None:
            torch._dynamo.reset()
            compiled = compile_fn(prepared.iter_fn)
        reset_rng_state()
        actual = _detach(prepared.run(compiled, prepared.copy(), clone_inputs(prepared.inputs)))
    except Exception as exc:
        return AccuracyResult(FAIL_TO_RUN, error_line(exc))
    if non_deterministic:
        return AccuracyResult(PASS_DUE_TO_SKIP, "non_deterministic: not compared")
    try:
        ok = same(expected, actual, fp64_result, tol=tol, cosine=cosine)
    except Exception as exc:
        return AccuracyResult(FAIL_ACCURACY, error_line(exc))
    if not ok:
        mode = "cosine similarity" if cosine else f"tol {tol:g}"
        return AccuracyResult(FAIL_ACCURACY, f"compiled differs from eager ({mode})")
    return AccuracyResult(PASS)
