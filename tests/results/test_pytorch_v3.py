"""PyTorch benchmark database records (v3): import both file shapes, export, round trip.
The records are written here from the format's fields (no file copied)."""

import dataclasses
import json
import math
import shutil

import pytest
from asvproject import make_project, tree_bytes
from clirun import exit_code

from torchpulse.evaluation import synthetic
from torchpulse.results import asv_results
from torchpulse.results.importers import pytorch_v3

H100 = {"name": "linux.aws.h100", "type": "linux.aws.h100", "cpu_count": 96, "gpu_count": 1,
        "gpu_info": "NVIDIA H100"}


def record(sha=None, model="BERT_pytorch", metric="speedup", values=(1.3, 1.32),
           runners=(H100,), device="cuda", **benchmark):
    r = {"benchmark": {"name": "TorchInductor", "mode": "training", "dtype": "amp",
                       "extra_info": {"device": device} if device else {}, **benchmark},
         "model": {"name": model, "type": "OSS model", "backend": "inductor"},
         "metric": {"name": metric, "benchmark_values": list(values)},
         "runners": list(runners)}
    if sha:
        r["head_sha"] = sha
    return r


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "p")


def write(path, records, each_row=False):
    text = ("\n".join(json.dumps(r) for r in records) if each_row
            else json.dumps(records))
    path.write_text(text)
    return path


def imp(project, *args):
    return exit_code(["import", "pytorch-v3", *map(str, args), "--config", str(project.conf)])


def stored(project):
    """(machine, commit, method, series, metric) -> samples, over the results tree."""
    out = {}
    for path in sorted(project.results.glob("*/*-external.json")):
        results = asv_results.load(path)
        for name in asv_results.benchmarks(results):
            for combo, _, samples in asv_results.rows(results, name):
                if samples:
                    key = (path.parent.name, results.commit_hash, name.rsplit(".", 1)[1],
                           *(c.strip("'") for c in combo))
                    out[key] = samples
    return out


def test_list_and_each_row_files_store_the_same_series(project, tmp_path):
    records = [record(sha, model=m, metric=k, values=v)
               for sha in project.main
               for m in ("BERT_pytorch", "resnet50")
               for k, v in (("speedup", (1.25, 1.3)), ("compilation_latency", (40.0, 41.0)))]
    assert imp(project, write(tmp_path / "list.json", records)) == 0
    first = stored(project)
    assert len(first) == 12
    series = ("benchmark=TorchInductor, model=resnet50, backend=inductor, mode=training, "
              "dtype=amp, device=cuda")
    # a speedup is stored inverted: every series here is lower-is-better
    assert first[("linux.aws.h100", project.main[0], "track_inverse", series, "speedup")] == \
        pytest.approx([1 / 1.25, 1 / 1.3])
    assert first[("linux.aws.h100", project.main[0], "track_value", series,
                  "compilation_latency")] == [40.0, 41.0]
    before = tree_bytes(project.results)
    # the same records one per line: already stored as they are
    assert imp(project, write(tmp_path / "rows.json", records, each_row=True)) == 0
    assert tree_bytes(project.results) == before


def test_device_and_machine_come_from_the_runners(project, tmp_path):
    two = [H100, {**H100, "name": "linux.aws.h100-2"}]  # two runners of one type
    cpu = {"name": "c7i", "type": "linux.c7i.metal", "cpu_count": 48, "gpu_count": 0}
    records = [record(project.main[0], runners=two, device=None),
               record(project.main[0], model="m2", runners=[cpu], device=None)]
    assert imp(project, write(tmp_path / "r.json", records)) == 0
    keys = set(stored(project))
    assert {k[0] for k in keys} == {"linux.aws.h100", "linux.c7i.metal"}
    assert any(k[3].endswith("device=cuda") for k in keys if k[0] == "linux.aws.h100")
    assert any(k[3].endswith("device=cpu") for k in keys if k[0] == "linux.c7i.metal")


def one_line_exit_2(project, capsys, files, *words, extra=()):
    before = tree_bytes(project.results)
    capsys.readouterr()
    assert imp(project, *files, *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(w in err[0] for w in words), err
    assert tree_bytes(project.results) == before


def test_what_is_refused(project, tmp_path, capsys):
    sha = project.main[1]
    mixed = [H100, {"name": "x", "type": "linux.aws.a100", "gpu_count": 1}]
    cases = [
        ([record()], ("no head_sha", "--commit")),
        ([record(sha, runners=mixed)], ("no single machine", "--machine")),
        ([record(sha, runners=[], device="cuda")], ("no single machine",)),
        ([record(sha, values=(1.0, math.nan))], ("not finite",)),
        ([record(sha, values=(math.inf,))], ("not finite",)),
        ([record(sha, values=())], ("benchmark_values",)),
        ([record(sha, metric="speedup", values=(0.0,))], ("no inverse",)),
        ([record(sha, model="<script>alert(1)</script>")], ("model.name", "characters")),
        ([record(sha, model="a, b=c")], ("model.name",)),
        ([record(sha, device=None, runners=[])], ("no device",)),
        ([{**record(sha), "head_sha": "HEAD"}], ("not a full commit sha",)),
        ([record(sha), record(sha)], ("again",)),
        ([record(sha, runners=[{**H100, "type": ["a", "b"]}])], ("runner's type", "list")),
        ([record(sha, runners=[{**H100, "type": {"x": 1}}, H100])], ("runner's type",)),
        ([record("f" * 40)], ("ffffffff",)),  # a commit the repository does not have
    ]
    for i, (records, words) in enumerate(cases):
        path = tmp_path / f"bad{i}.json"
        path.write_text(json.dumps(records))  # NaN and Infinity as Python's json writes them
        one_line_exit_2(project, capsys, [path], *words)
    # records that differ in the file but not once --commit or --machine applies: one of
    # the two values would be lost
    path = tmp_path / "commit-twice.json"
    path.write_text(json.dumps([record(), record(sha, values=(2.0,))]))
    one_line_exit_2(project, capsys, [path, "--commit", sha], "two values", sha[:12])
    path = tmp_path / "machine-twice.json"
    path.write_text(json.dumps([record(sha, runners=mixed), record(sha, values=(2.0,))]))
    one_line_exit_2(project, capsys, [path, "--machine", "linux.aws.h100"], "two values",
                    "linux.aws.h100")
    (tmp_path / "broken.json").write_text('{"benchmark": ')
    one_line_exit_2(project, capsys, [tmp_path / "broken.json"], "not JSON")
    # with --commit and --machine the records that lacked them are stored
    path = tmp_path / "fixed.json"
    path.write_text(json.dumps([record(runners=mixed)]))
    assert imp(project, path, "--commit", sha, "--machine", "lab-h100") == 0
    assert {k[:2] for k in stored(project)} == {("lab-h100", sha)}


def test_metric_direction():
    for name in ("speedup", "pass_rate", "Throughput (samples/s)", "tokens_per_second",
                 "compression_ratio", "token_per_sec", "TFLOPS"):
        assert pytorch_v3.higher_is_better(name), name
    for name in ("compilation_latency", "abs_latency", "peak_memory_gb", "time_ms",
                 "instruction_count", "latency_per_step", "ms_per_sample"):
        assert not pytorch_v3.higher_is_better(name), name
    assert pytorch_v3.higher_is_better("goodput", extra=["goodput"])


def test_higher_is_better_flag(project, tmp_path):
    path = write(tmp_path / "r.json", [record(project.main[0], metric="goodput",
                                              values=(4.0,))])
    assert imp(project, path, "--higher-is-better", "goodput") == 0
    ((key, samples),) = stored(project).items()
    assert key[2] == "track_inverse" and samples == [0.25]


def export(project, *args):
    return exit_code(["export", "pytorch-v3", *map(str, args), "--config", str(project.conf)])


def test_round_trip_gives_the_same_values_on_the_same_series(project, tmp_path):
    records = [record(sha, model=m, metric=k, values=v)
               for sha in project.main
               for m in ("BERT_pytorch", "llama")
               for k, v in (("speedup", (1.21, 1.3)), ("peak_memory", (3.5,)))]
    assert imp(project, write(tmp_path / "in.json", records)) == 0
    out = tmp_path / "out.json"
    assert export(project, "--output", out) == 0
    exported = json.loads(out.read_text())
    assert len(exported) == len(records)
    for r in exported:
        assert r["head_sha"] in project.main and r["runners"][0]["type"] == "linux.aws.h100"
        assert r["dependencies"]["p"]["sha"] == r["head_sha"]
    got = {(r["head_sha"], r["model"]["name"], r["metric"]["name"]):
           r["metric"]["benchmark_values"] for r in exported}
    want = {(r["head_sha"], r["model"]["name"], r["metric"]["name"]):
            r["metric"]["benchmark_values"] for r in records}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12)
    # into a second project with the same history: the same stored series and values
    root = tmp_path / "again"
    shutil.copytree(project.root, root, ignore=shutil.ignore_patterns("results"))
    again = dataclasses.replace(project, root=root, conf=root / "asv.conf.json",
                                results=root / "results")
    assert imp(again, out) == 0
    assert stored(again) == stored(project)
    out2 = tmp_path / "out2.json"
    assert export(again, "--output", out2, "--json-each-row") == 0
    assert [json.loads(line) for line in out2.read_text().splitlines()] == exported


def test_export_of_measured_suites_and_its_selections(tmp_path, capsys):
    root = tmp_path / "s"
    synthetic.build(root, commits=5, per_cell=1, noise_series=1, seed=2, kinds=("noise",))
    conf = root / "asv.conf.json"
    assert exit_code(["export", "pytorch-v3", "--config", str(conf)]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported and all(r["benchmark"]["name"].startswith("asv:") for r in exported)
    assert all(r["metric"]["benchmark_values"] for r in exported)
    shas = {r["head_sha"] for r in exported}
    assert len(shas) == 5
    newest = synthetic.history(root)[-1]
    assert exit_code(["export", "pytorch-v3", newest, "--config", str(conf)]) == 0
    assert {r["head_sha"] for r in json.loads(capsys.readouterr().out)} == {newest}
    for argv, word in ((["nosuchrev"], "nosuchrev"), (["--machine", "other"], "other")):
        assert exit_code(["export", "pytorch-v3", *argv, "--config", str(conf)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and word in err[0]


def test_export_of_a_damaged_tree_is_one_line_or_finite_json(tmp_path, capsys):
    """Damage a tree can hold (a NaN or Infinity sample, text for a number, a benchmarks.json
    that is not an object or whose entries are not): never a traceback, never NaN in JSON."""
    root = tmp_path / "s"
    synthetic.build(root, commits=3, per_cell=1, noise_series=1, seed=2, kinds=("noise",))
    conf = root / "asv.conf.json"
    newest = synthetic.history(root)[-1]
    (path,) = [p for p in (root / "results").glob(f"*/{newest[:8]}-*.json")]
    data = json.loads(path.read_text())
    name = next(iter(data["results"]))
    row = data["results"][name]
    samples_at = data["result_columns"].index("samples")
    row[samples_at] = [[math.nan, math.inf, "x", 1.5, True]] * len(row[samples_at])
    path.write_text(json.dumps(data))
    assert exit_code(["export", "pytorch-v3", newest, "--config", str(conf)]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    values = [r["metric"]["benchmark_values"] for r in json.loads(text)]
    assert [1.5] in values
    benchmarks = root / "results" / "benchmarks.json"
    entries = json.loads(benchmarks.read_text())
    benchmarks.write_text(json.dumps({k: (3 if isinstance(v, dict) else v)
                                      for k, v in entries.items()}))
    assert exit_code(["export", "pytorch-v3", newest, "--config", str(conf)]) == 0
    capsys.readouterr()
    benchmarks.write_text("[1, 2]")
    assert exit_code(["export", "pytorch-v3", newest, "--config", str(conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a JSON object" in err[0]
