"""The five foreign-format parsers: golden files in the shape the upstream harnesses print
(README, "Importing results"), malformed variants, and fuzzing (any text gives records or one
InputError, nothing else)."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import IMPORT_DATA

from torchpulse.results.external import PARAM_VALUE
from torchpulse.results.importers import (
    InputError,
    autograd,
    dynamo,
    fastrnns,
    formats,
    pytest_benchmark,
)

DATA = IMPORT_DATA


def _by_key(records):
    return {(r.stub, r.method, r.params): r for r in records}


def test_oss_means_become_seconds():
    records = _by_key(fastrnns.parse_oss(DATA / "oss.json", (DATA / "oss.json").read_text(),
                                         None))
    assert len(records) == 12
    assert records[("fastrnns", "time_forward", ("cudnn",))].value == pytest.approx(5.8125e-3)
    assert records[("fastrnns", "time_backward", ("resnet50",))].value == pytest.approx(0.2015566)
    assert all(not r.samples for r in records.values())


def test_oss_from_upstreams_cpu_path_is_in_seconds_with_unit_s():
    text = '{"lstm": {"cudnn": 0.0921}, "lstm-backward": {"cudnn": 0.381}}'
    records = _by_key(fastrnns.parse_oss(Path("cpu.json"), text, 1.0))
    assert records[("fastrnns", "time_forward", ("cudnn",))].value == pytest.approx(0.0921)


def test_pep_keeps_every_sample_and_skips_other_log_lines():
    records = _by_key(fastrnns.parse_pep(DATA / "pep.log", (DATA / "pep.log").read_text(),
                                                  1e-3))
    assert set(records) == {("fastrnns", m, (r,)) for m in ("time_forward", "time_backward")
                            for r in ("cudnn", "jit")}
    cudnn = records[("fastrnns", "time_forward", ("cudnn",))]
    assert cudnn.samples == pytest.approx((5.8e-3, 5.9e-3, 5.7e-3))
    assert cudnn.value == pytest.approx(5.8e-3)  # the median
    assert records[("fastrnns", "time_backward", ("jit",))].samples == pytest.approx(
        (16.1e-3, 16.5e-3, 16.0e-3))


def test_pytest_benchmark_uses_the_samples_and_the_full_name():
    text = (DATA / "pytest-benchmark.json").read_text()
    records = pytest_benchmark.parse(DATA / "pytest-benchmark.json", text, None)
    names = {r.params[0] for r in records}
    assert names == {"benchmarks/pytest_bench/test_fastrnns.py::test_forward[cudnn]",
                     "benchmarks/pytest_bench/test_fastrnns.py::test_backward[resnet18]"}
    for r in records:
        assert len(r.samples) == 2 and min(r.samples) <= r.value <= max(r.samples)


def test_pytest_benchmark_without_data_uses_the_median():
    text = '{"benchmarks": [{"name": "test_a", "stats": {"median": 0.25, "mean": 0.3}}]}'
    (record,) = pytest_benchmark.parse(Path("x.json"), text, None)
    assert record.params == ("test_a",) and record.value == 0.25 and not record.samples


def test_dynamo_performance_is_stored_lower_is_better_and_failures_noted():
    notes: list[str] = []
    path = DATA / "dynamo_performance.csv"
    records = _by_key(dynamo.parse(path, path.read_text(), None, notes))
    key = ("cuda", "BERT_pytorch")
    assert records[("dynamo", "track_latency_ratio", key)].value == pytest.approx(1 / 1.452)
    assert records[("dynamo", "time_latency", key)].value == pytest.approx(12.5316e-3)
    assert records[("dynamo", "time_compilation", key)].value == pytest.approx(41.229)
    assert records[("dynamo", "track_memory_ratio", key)].value == pytest.approx(1 / 1.12)
    assert not any(r.params == ("cuda", "hf_T5") for r in records.values())
    assert len(notes) == 1 and "hf_T5 failed to run" in notes[0] and ":4:" in notes[0]


def test_dynamo_accuracy_stores_failure_not_pass():
    path = DATA / "dynamo_accuracy.csv"
    records = _by_key(dynamo.parse(path, path.read_text(), None))
    assert {k[2][1]: r.value for k, r in records.items()
            if k[1] == "track_accuracy_failure"} == {
        "BERT_pytorch": 0.0, "resnet18": 1.0, "hf_T5": 1.0}
    assert {k[2][1]: r.value for k, r in records.items() if k[1] == "track_graph_breaks"} == {
        "BERT_pytorch": 0.0, "resnet18": 0.0, "hf_T5": 0.0}


CI_ACCURACY = """name,accuracy,graph_breaks
BERT_pytorch,pass,0

resnet18,fail_accuracy,3
hf_T5,eager_1st_run_OOM,0
"""


def test_pytorch_ci_accuracy_files_need_the_device_and_keep_graph_breaks():
    path = Path("ci_expected_accuracy/cpu_inductor_training.csv")
    with pytest.raises(InputError, match="no dev column; give --device"):
        dynamo.parse(path, CI_ACCURACY, None)
    records = _by_key(dynamo.parse(path, CI_ACCURACY, None, device="cpu"))
    failure = {k[2]: r.value for k, r in records.items() if k[1] == "track_accuracy_failure"}
    assert failure == {("cpu", "BERT_pytorch"): 0.0, ("cpu", "resnet18"): 1.0,
                       ("cpu", "hf_T5"): 1.0}
    assert records[("dynamo", "track_graph_breaks", ("cpu", "resnet18"))].value == 3.0
    with_dev = "dev,name,accuracy\ncuda,BERT_pytorch,pass\n"
    with pytest.raises(InputError, match="dev is 'cuda', --device says 'cpu'"):
        dynamo.parse(path, with_dev, None, device="cpu")


@pytest.mark.parametrize("status", sorted(dynamo.STATUSES))
def test_every_status_the_harness_writes_is_read(status):
    text = f"dev,name,accuracy\ncuda,m,{status}\n"
    (record,) = [r for r in dynamo.parse(Path("a.csv"), text, None)
                 if r.method == "track_accuracy_failure"]
    assert record.value == (0.0 if status.startswith("pass") else 1.0)


@pytest.mark.parametrize("header, says", [
    ("dev,accuracy,graph_breaks", "missing column(s) name for an accuracy CSV"),
    ("dev,name,speedup,abs_latency", "missing column(s) compilation_latency for a "
                                     "performance CSV"),
])
def test_the_missing_column_is_the_one_named(header, says):
    with pytest.raises(InputError) as exc:
        dynamo.parse(Path("a.csv"), header + "\n", None)
    assert says in str(exc.value)


def test_autograd_markdown_in_seconds():
    path = DATA / "autograd.md"
    records = _by_key(autograd.parse(path, path.read_text(), None))
    assert records[("autograd", "time_task", ("resnet18", "vjp"))].value == pytest.approx(0.03401)
    assert len(records) == 4


MALFORMED = [
    ("oss", "", "empty file"),
    ("oss", "{not json", ":1: not JSON"),
    ("oss", '{"lstm": {"cudnn": 1.0}}\n{"lstm": {}}', ":2: more than one line"),
    ("oss", '{"gru": {"cudnn": 1.0}}', "unknown group 'gru'"),
    ("oss", '{"lstm": {"cudnn": NaN}}', "not finite"),
    ("oss", '{"lstm": {"cudnn": Infinity}}', "not finite"),
    ("oss", '{"lstm": {"cudnn": -1}}', "is negative"),
    ("oss", '{"lstm": {"cudnn": "5.0"}}', "a string, not a number"),
    ("oss", '{"lstm": {"cudnn": true}}', "not a number"),
    ("oss", '{"lstm": [1, 2]}', "not an object of runner"),
    ("oss", '{"lstm": {"<script>": 1.0}}', "has characters outside"),
    ("oss", '{"lstm": {}}', "no runner results"),
    ("pep", "just a log line\n", "no 'Caffe2Observer {...}' lines"),
    ("pep", 'Caffe2Observer {"type": "NET"', ":1: not JSON"),
    ("pep", 'x\nCaffe2Observer {"type": "NET", "metric": "lstm-cudnn", "unit": "s", '
            '"value": "1"}', ":2: unit 's'"),
    ("pep", 'Caffe2Observer {"type": "NET", "metric": "cudnn", "unit": "ms", "value": "1"}',
     "is not <group>-<runner>"),
    ("pep", 'Caffe2Observer {"type": "NET", "metric": "lstm-cudnn", "unit": "ms", '
            '"value": "fast"}', "not a number"),
    ("pep", 'Caffe2Observer {"type": "NET", "metric": "lstm-cudnn", "unit": "ms"}',
     "missing value"),
    ("pytest-benchmark", "[]", "expected an object with a 'benchmarks' list"),
    ("pytest-benchmark", '{"benchmarks": []}', "'benchmarks' is empty"),
    ("pytest-benchmark", '{"benchmarks": [{"name": "t", "stats": {}}]}',
     "neither 'data' nor 'median'"),
    ("pytest-benchmark", '{"benchmarks": [{"name": "t", "stats": {"data": [1, -2]}}]}',
     "is negative"),
    ("pytest-benchmark", '{"benchmarks": [{"name": "t\\"><img>", "stats": {"median": 1}}]}',
     "has characters outside"),
    ("dynamo-csv", "dev,name,speedup\ncpu,m,1.0\n", ":1: missing column(s) abs_latency"),
    ("dynamo-csv", "dev,name,batch_size,speedup,abs_latency,compilation_latency\n"
                   "cpu,m,1,-2.0,1.0,1.0\n", ":2: speedup is negative"),
    ("dynamo-csv", "dev,name,batch_size,speedup,abs_latency,compilation_latency\n"
                   "cpu,m,1,2.0,1.0\n", ":2: 5 fields, the header has 6"),
    ("dynamo-csv", "dev,name,batch_size,accuracy\ncpu,m,1,great\n",
     "unknown accuracy status 'great'"),
    ("dynamo-csv", "dev,name,batch_size,accuracy\n", "no data rows"),
    ("autograd-md", "| model | task | mean | var |\n| -- | -- | -- | -- |\n", "has no rows"),
    ("autograd-md", "| a | b |\n", "no '| model | task | mean | var |' header"),
    ("autograd-md", "| model | task | mean | var |\n| m | vjp | nan | 0 |\n",
     ":2: mean is not finite"),
    ("autograd-md", "| model | task | mean | var |\n| m | vjp | 1.0 |\n", ":2: 3 cells"),
]


@pytest.mark.parametrize("fmt, text, message", MALFORMED)
def test_malformed_input_is_one_input_error_naming_file_and_line(fmt, text, message):
    with pytest.raises(InputError) as info:
        formats()[fmt](Path("f.txt"), text, None, [])
    assert message in str(info.value)
    assert str(info.value).startswith("f.txt")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("fmt", list(formats()))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300))
def test_fuzzed_text_never_escapes_as_another_exception(fmt, text):
    try:
        records = formats()[fmt](Path("fuzz"), text, None, [])
    except InputError as exc:
        assert str(exc).startswith("fuzz")
    else:
        assert records


def _near_valid(fmt):
    """Valid-looking documents with fuzzed values, names and numbers."""
    name = st.text(min_size=0, max_size=12)
    value = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                      st.text(max_size=8), st.booleans(), st.none())
    if fmt == "oss":
        return st.dictionaries(st.sampled_from(["lstm", "lstm-backward", "resnet", "x"]),
                               st.dictionaries(name, value, max_size=3), max_size=3).map(
            lambda d: json.dumps(d))
    if fmt == "pep":
        rec = st.fixed_dictionaries({"type": st.just("NET"), "metric": name.map(
            lambda n: "lstm-" + n), "unit": st.just("ms"), "value": value})
        return st.lists(rec, max_size=4).map(lambda rs: "\n".join(
            "Caffe2Observer " + json.dumps(r) for r in rs))
    if fmt == "pytest-benchmark":
        bench = st.fixed_dictionaries({"name": name, "stats": st.fixed_dictionaries(
            {"median": value})})
        return st.lists(bench, max_size=3).map(
            lambda bs: json.dumps({"benchmarks": bs}))
    if fmt == "dynamo-csv":
        row = st.tuples(name, name, value, value, value).map(
            lambda t: f"cpu,{t[0]},1,{t[2]},{t[3]},{t[4]}")
        return st.lists(row, max_size=3).map(
            lambda rows: "dev,name,batch_size,speedup,abs_latency,compilation_latency\n"
            + "\n".join(rows))
    row = st.tuples(name, name, value, value).map(lambda t: f"| {t[0]} | {t[1]} | {t[2]} | "
                                                  f"{t[3]} |")
    return st.lists(row, max_size=3).map(
        lambda rows: "| model | task | mean | var |\n| -- | -- | -- | -- |\n" + "\n".join(rows))


@pytest.mark.parametrize("fmt", list(formats()))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_near_valid_documents_give_clean_records_or_input_error(fmt, data):
    text = data.draw(_near_valid(fmt))
    try:
        records = formats()[fmt](Path("fuzz"), text, None, [])
    except InputError:
        return
    for r in records:
        assert all(PARAM_VALUE.fullmatch(p) for p in r.params)
        assert math.isfinite(r.value) and r.value >= 0
        assert all(math.isfinite(s) and s > 0 for s in r.samples)


# --------------------------------------------------------------------------- fastrnns units


def test_fastrnns_values_that_fit_both_units_need_unit():
    text = '{"lstm": {"cudnn": 5.8}, "lstm-backward": {"cudnn": 13.0}}'
    with pytest.raises(InputError, match=r"fit both ms and s; pass --unit ms .* --unit s"):
        fastrnns.parse_oss(Path("a.json"), text, None, [])
    assert fastrnns.parse_oss(Path("a.json"), text, 1.0, [])[0].value == 5.8  # --unit s


@pytest.mark.parametrize("values, scale, said", [
    ({"cudnn": 5.8, "resnet50": 201.5}, 1e-3, "read as ms (assumed: the largest, 201.5"),
    ({"cudnn": 0.004, "resnet50": 1.2}, 1.0, "read as s (assumed: the smallest, 0.004"),
])
def test_fastrnns_unit_from_values_only_one_unit_allows(values, scale, said):
    lstm = {k: v for k, v in values.items() if k == "cudnn"}
    resnet = {k: v for k, v in values.items() if k != "cudnn"}
    notes: list[str] = []
    records = fastrnns.parse_oss(Path("a.json"), json.dumps({"lstm": lstm, "resnet": resnet}),
                                 None, notes)
    assert sorted(r.value for r in records) == pytest.approx(
        sorted(v * scale for v in values.values()))
    assert len(notes) == 1 and said in notes[0]


def test_fastrnns_values_that_fit_neither_unit_are_refused():
    pep = "\n".join(f'Caffe2Observer {{"type": "NET", "metric": "lstm-{r}", "unit": "ms", '
                    f'"value": "{v}"}}' for r, v in (("cudnn", 0.001), ("py", 500)))
    with pytest.raises(InputError, match="fit neither ms nor s"):
        fastrnns.parse_pep(Path("p.log"), pep, None, [])


def test_upstreams_backward_of_a_forward_only_runner_is_left_out():
    """Upstream's OSS from its CPU path: seconds, and a backward "time" for cudnn_layernorm
    that is two timer reads with nothing between them."""
    text = ('{"lstm": {"cudnn": 0.09, "cudnn_layernorm": 0.12}, '
            '"lstm-backward": {"cudnn": 0.38, "cudnn_layernorm": 1.2e-06}}')
    notes: list[str] = []
    records = _by_key(fastrnns.parse_oss(Path("cpu.json"), text, 1.0, notes))
    assert set(records) == {("fastrnns", "time_forward", ("cudnn",)),
                            ("fastrnns", "time_backward", ("cudnn",)),
                            ("fastrnns", "time_forward", ("cudnn_layernorm",))}
    assert any("cudnn_layernorm backward left out" in n for n in notes)
    pep = ('Caffe2Observer {"type": "NET", "metric": "lstm-backward-cudnn_layernorm", '
           '"unit": "ms", "value": "0.003"}\n'
           'Caffe2Observer {"type": "NET", "metric": "lstm-cudnn_layernorm", "unit": "ms", '
           '"value": "7.5"}\n')
    (record,) = fastrnns.parse_pep(Path("p.log"), pep, 1e-3, [])
    assert record.method == "time_forward" and record.value == pytest.approx(7.5e-3)
