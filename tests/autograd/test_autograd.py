"""The functional-autograd suite: every (model, task) pair at the smoke preset, finite
differences on the ppl models, the Hungarian matcher against brute force, the markdown table
and the CLI."""

import itertools
import math
from pathlib import Path

import pytest
import torch

from torchpulse.autograd import choices, matcher, models, ppl, run, table, tasks
from torchpulse.cli import main

CPU = torch.device("cpu")


def flat(result) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for r in result for t in flat(r)]


def expected_shapes(task: str, inputs) -> list[tuple[int, ...]]:
    """What torch.autograd.functional returns for a scalar function of ``inputs``."""
    shapes = [tuple(i.shape) for i in inputs]
    if task in ("vjp", "vhp", "hvp"):
        return [(), *shapes]  # (output, one tensor per input)
    if task == "jvp":
        return [(), ()]
    if task in ("jacobian", "jacrev", "jacfwd"):
        return shapes
    return [a + b for a in shapes for b in shapes]  # Hessians: every block


def test_models_and_tasks_follow_the_torch_free_name_lists():
    assert tuple(m.name for m in models.MODELS) == choices.MODELS
    assert set(choices.TASKS) == set(choices.ALL_TASKS)  # one set, two orders
    for name, own in choices.MODEL_TASKS.items():
        assert set(own) <= set(choices.ALL_TASKS), name
        for task in own:  # every listed task is one torch.autograd.functional can run
            assert callable(tasks.task_function(task))


@pytest.mark.parametrize("model, task", [(m.name, t) for m, t in models.supported_pairs()])
def test_every_supported_pair_runs_at_smoke_size(model, task):
    prepared = run.Prepared(models.BY_NAME[model], task, CPU, "smoke", seed=0)
    result = prepared.call()
    tensors = flat(result)
    assert [tuple(t.shape) for t in tensors] == expected_shapes(task, prepared.inputs)
    assert all(torch.isfinite(t).all() for t in tensors)


def test_loss_has_no_side_effects():
    fn, params = models.BY_NAME["resnet18"].getter(CPU, models.BY_NAME["resnet18"].size("smoke"))
    before = [p.clone() for p in params]
    first, second = fn(*params), fn(*params)
    assert first.item() == second.item()  # no running statistics, no dropout
    assert all(torch.equal(a, b) for a, b in zip(before, params, strict=True))


def test_rnns_keep_training_mode_with_dropout_off():
    """deepspeech's vjp failed on the GPU with its LSTMs in eval mode ("cudnn RNN backward can
    only be called in training mode", experiments/diary/gpu.md): torch's RNN modules keep
    training mode with dropout 0, every other module is in eval mode, and the loss repeats
    exactly."""
    from torchpulse.autograd.audio_text import DeepSpeech
    from torchpulse.autograd.functional import without_side_effects

    model = DeepSpeech(num_classes=5, hidden=8, layers=2, spectrogram=41)
    for sub in model.modules():
        if isinstance(sub, torch.nn.RNNBase):
            sub.dropout = 0.3  # as a user's model might have it
    without_side_effects(model)
    rnns = [m for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
    assert rnns and all(m.training and m.dropout == 0.0 for m in rnns)
    assert not any(m.training for m in model.modules() if not isinstance(m, torch.nn.RNNBase))
    spec = models.BY_NAME["deepspeech"]
    fn, params = spec.getter(CPU, spec.size("smoke"))
    assert fn(*params).item() == fn(*params).item()


def finite_difference_grad(fn, inputs, eps=1e-6):
    grads = []
    for i, x in enumerate(inputs):
        g = torch.zeros_like(x)
        for idx in itertools.product(*(range(s) for s in x.shape)):
            plus = [t.detach().clone() for t in inputs]
            minus = [t.detach().clone() for t in inputs]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (fn(*plus) - fn(*minus)) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("getter", [ppl.simple_regression, ppl.robust_regression])
def test_vjp_and_jvp_match_finite_differences(getter):
    torch.set_default_dtype(torch.float64)
    try:
        # seed 2: moderate prior draws (nu 2.3); at seed 3 robust regression draws nu 1e-4,
        # where the loss is too steep for finite differences at this step
        torch.manual_seed(2)
        fn, inputs = getter(CPU, {"n": 10, "k": 4})
        numeric = finite_difference_grad(fn, inputs)
        _, vjp = torch.autograd.functional.vjp(fn, inputs, torch.tensor(2.0))
        for g, n in zip(vjp, numeric, strict=True):
            torch.testing.assert_close(g, 2 * n, rtol=1e-5, atol=1e-6)
        v = tuple(torch.rand_like(i) for i in inputs)
        _, jvp = torch.autograd.functional.jvp(fn, inputs, v)
        expected = sum((n * d).sum() for n, d in zip(numeric, v, strict=True))
        torch.testing.assert_close(jvp, expected, rtol=1e-5, atol=1e-6)
    finally:
        torch.set_default_dtype(torch.float32)


def test_robust_regression_does_upstreams_work(monkeypatch):
    """Three Student-t likelihoods per evaluation, as upstream (not one shared), and the
    priors' draws as they come: seed 1234 draws nu = 8.6e-11, which the old clamp raised
    to 0.5; every task stays finite."""
    torch.manual_seed(1234)
    fn, inputs = ppl.robust_regression(CPU, {"n": 10, "k": 10})
    assert inputs[0].item() < 1e-9
    scored = []
    log_prob = torch.distributions.StudentT.log_prob
    monkeypatch.setattr(torch.distributions.StudentT, "log_prob",
                        lambda self, value: scored.append(1) or log_prob(self, value))
    assert torch.isfinite(fn(*inputs))
    assert len(scored) == 3
    for task in choices.ALL_TASKS:
        out = tasks.run_once(fn, inputs, task, tasks.make_v(fn, inputs, task))
        flat = [t for t in (out if isinstance(out, (list, tuple)) else [out])]
        while any(isinstance(t, (list, tuple)) for t in flat):
            flat = [u for t in flat for u in (t if isinstance(t, (list, tuple)) else [t])]
        assert all(torch.isfinite(t).all() for t in flat if isinstance(t, torch.Tensor)), task


@pytest.mark.parametrize("seed, queries, targets", [(0, 4, 3), (1, 5, 5), (2, 6, 2)])
def test_hungarian_matcher_finds_the_cheapest_assignment(seed, queries, targets):
    g = torch.Generator().manual_seed(seed)
    outputs = {"pred_logits": torch.randn(1, queries, 8, generator=g),
               "pred_boxes": torch.rand(1, queries, 4, generator=g) * 0.5 + 0.25}
    goal = [{"labels": torch.randint(0, 7, (targets,), generator=g),
             "boxes": torch.rand(targets, 4, generator=g) * 0.5 + 0.25}]
    m = matcher.HungarianMatcher(1, 5, 2)
    cost = m.cost_matrices(outputs, goal)[0]
    rows, cols = m(outputs, goal)[0]
    found = cost[rows, cols].sum().item()
    best = min(sum(cost[q, t].item() for t, q in enumerate(perm))
               for perm in itertools.permutations(range(queries), targets))
    assert found == pytest.approx(best, rel=1e-6)
    assert sorted(cols.tolist()) == list(range(targets))


def test_markdown_table_parses_back(tmp_path):
    timings = [run.Timing("ppl_simple_reg", "vjp", (0.001, 0.003)),
               run.Timing("resnet18", "jvp", (0.5,)),
               run.Timing("wav2letter", "vhp", ())]
    path = tmp_path / "out.md"
    path.write_text(table.to_markdown(timings))
    assert path.read_text().splitlines()[:2] == ["| model | task | mean | var |",
                                                 "| -- | -- | -- | -- |"]
    back = table.read(path)
    assert back[("ppl_simple_reg", "vjp")] == (pytest.approx(0.002), pytest.approx(2e-6))
    mean, var = back[("resnet18", "jvp")]
    assert mean == 0.5 and math.isnan(var)
    assert all(math.isnan(x) for x in back[("wav2letter", "vhp")])


def test_select_filters_and_rejects_unknown_names():
    assert [(m.name, t) for m, t in run.select(["deepspeech"], None)] == [("deepspeech", "vjp")]
    assert len(run.select(["ppl_simple_reg"], None)) == len(choices.ALL_TASKS)
    assert {m.name for m, _ in run.select(None, ["vjp"])} == set(models.BY_NAME)
    assert run.select(["deepspeech"], ["hvp"]) == []  # no double backward through its LSTM
    with pytest.raises(ValueError, match="unknown model 'resnet'"):
        run.select(["resnet"], None)
    with pytest.raises(ValueError, match="unknown task 'grad'"):
        run.select(None, ["grad"])


def test_cli_warm_up_only_still_writes_the_table(tmp_path, capsys):
    out = tmp_path / "out.md"
    assert main(["autograd", "--num-iters", "0", "--task-filter", "vjp", "--model-filter",
                 "ppl_robust_reg,multiheadattn", "--gpu", "-1", "--preset", "smoke",
                 "--output", str(out)]) == 0
    rows = table.read(out)
    assert set(rows) == {(m, t) for m in ("ppl_robust_reg", "multiheadattn")
                         for t in ("vjp", "functorch vjp")}
    assert all(math.isnan(mean) for mean, _ in rows.values())
    assert "Results for model multiheadattn on task vjp" in capsys.readouterr().out


def test_cli_timed_run_and_compare(tmp_path, capsys):
    before, after = tmp_path / "before.md", tmp_path / "after.md"
    for path in (before, after):
        assert main(["autograd", "--num-iters", "2", "--model-filter", "ppl_simple_reg",
                     "--gpu", "-1", "--preset", "smoke", "--output", str(path)]) == 0
    rows = table.read(before)
    # every task, and every one again through functorch but jacobian, which it cannot do
    functorch = {f"functorch {t}" for t in choices.ALL_TASKS if t != "jacobian"}
    assert {task for _, task in rows} == set(choices.ALL_TASKS) | functorch
    assert all(mean > 0 and var >= 0 for mean, var in rows.values())
    out = capsys.readouterr().out
    assert "Results for model ppl_simple_reg on task hvp using Functorch: " in out
    assert ("Failed model using Functorch: ppl_simple_reg, task: jacobian, Error message: "
            "functorch has no equivalent") in out
    assert main(["autograd", "compare", str(before), str(after)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| model | task | before (s) | after (s) | speedup |"
    assert len(lines) == 2 + len(rows)
    assert all(line.endswith("x |") for line in lines[2:])


def test_cli_no_functorch_leaves_its_rows_out(tmp_path):
    out = tmp_path / "out.md"
    assert main(["autograd", "--num-iters", "1", "--model-filter", "ppl_simple_reg",
                 "--task-filter", "vjp,hvp", "--gpu", "-1", "--preset", "smoke",
                 "--no-functorch", "--output", str(out)]) == 0
    assert set(table.read(out)) == {("ppl_simple_reg", "vjp"), ("ppl_simple_reg", "hvp")}


@pytest.mark.parametrize("model, task", [(m.name, t) for m, t in models.supported_pairs()
                                         if m.name.startswith("ppl_") or t == "vjp"])
def test_functorch_agrees_with_autograd_functional_or_says_why_not(model, task):
    """Upstream's consistency check: the functorch result of the warm-up call matches
    torch.autograd.functional's; where the transforms cannot go (jacobian, detr's scipy
    matcher, deepspeech's packed sequences) a RuntimeError, which upstream reports."""
    prepared = run.Prepared(models.BY_NAME[model], task, CPU, "smoke", seed=0, functorch=True)
    cannot = task == "jacobian" or model in ("detr", "deepspeech")
    if cannot:
        with pytest.raises(RuntimeError):
            prepared.warm_up()
    else:
        prepared.warm_up()  # raises AssertionError on disagreement


def test_a_disagreeing_functorch_row_is_left_out_and_fails_the_run(tmp_path, monkeypatch,
                                                                    capsys):
    real = tasks.functorch_function

    def off_by_one(task):
        def wrong(fn, inputs, v):
            out, grads = real(task)(fn, inputs, v)
            return out, tuple(g + 1 for g in grads)
        return wrong

    monkeypatch.setattr(tasks, "functorch_function", off_by_one)
    out = tmp_path / "out.md"
    assert main(["autograd", "--num-iters", "1", "--model-filter", "ppl_simple_reg",
                 "--task-filter", "vjp", "--gpu", "-1", "--preset", "smoke",
                 "--output", str(out)]) == 1
    assert set(table.read(out)) == {("ppl_simple_reg", "vjp")}
    err = capsys.readouterr().err
    assert "functorch vjp on ppl_simple_reg disagrees with torch.autograd.functional" in err


def test_cli_bad_input(tmp_path, capsys):
    assert main(["autograd", "--model-filter", "vgg"]) == 2
    assert "unknown model 'vgg'" in capsys.readouterr().err
    bad = tmp_path / "bad.md"
    bad.write_text("not a table\n")
    assert main(["autograd", "compare", str(bad), str(bad)]) == 2
    assert "no '| model | task | mean | var |' header" in capsys.readouterr().err
    assert main(["autograd", "compare", str(tmp_path / "missing.md"), str(bad)]) == 2


def test_output_imports_as_asv_results(tmp_path):
    """The table is what `torchpulse import autograd-md` reads."""
    from torchpulse.results.importers import autograd as importer

    path = tmp_path / "out.md"
    path.write_text(table.to_markdown([run.Timing("detr", "vjp", (0.2, 0.3)),
                                       run.Timing("detr", "functorch vjp", (0.4,))]))
    plain, functorch = importer.parse(Path(path), path.read_text(), None)
    assert plain.params == ("detr", "vjp") and plain.value == pytest.approx(0.25)
    assert functorch.params == ("detr", "functorch vjp") and functorch.value == 0.4


def test_compare_of_a_binary_file_is_one_line(tmp_path, capsys):
    binary = tmp_path / "b.md"
    binary.write_bytes(bytes(range(128, 256)) * 4)
    assert main(["autograd", "compare", str(binary), str(binary)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a text file" in err


def test_compare_of_a_device_is_one_line_not_read(tmp_path, capsys):
    """/dev/zero was read until the memory ran out; /dev/null stands in for it here."""
    good = tmp_path / "a.md"
    good.write_text(table.to_markdown([run.Timing("detr", "vjp", (0.2, 0.3))]))
    assert main(["autograd", "compare", str(good), "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert err == ("torchpulse autograd: error: /dev/null: cannot read (a device or a socket, "
                   "not a file)\n")


def test_compare_lists_pairs_found_in_one_table_only():
    before = {("m", "vjp"): (0.2, 0.0), ("m", "jvp"): (0.4, 0.0)}
    after = {("m", "vjp"): (0.1, 0.0), ("m", "hvp"): (0.3, 0.0)}
    lines = table.compare(before, after).splitlines()[2:]
    assert lines == ["| m | vjp | 0.2 | 0.1 | 2.000x |", "| m | jvp | 0.4 | - | - |",
                     "| m | hvp | - | 0.3 | - |"]
