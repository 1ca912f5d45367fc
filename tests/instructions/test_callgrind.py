"""Reading callgrind dumps: totals, own costs per function, compressed names."""

import pytest

from torchpulse.instructions import callgrind

# Two functions in two objects: main (own 10 + 4 + 2; its call of work cost 150) and work (own
# 100 + 50); name compression as callgrind writes it ("(id) name" once, "(id)" after).
DUMP = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 42
cmd:  python worker.py
part: 3

desc: I1 cache:
desc: Trigger: Client Request: rnns/cudnn/forward
positions: line
events: Ir
summary: 166

ob=(1) /usr/lib/libpython3.11.so.1.0
fl=(1) ???
fn=(1) _PyEval_EvalFrameDefault
0 10
+2 4
cob=(2) /opt/torch/lib/libtorch_cpu.so
cfi=(2) ???
cfn=(2) at::native::lstm(at::Tensor const&)
calls=2 0
0 150
-1 2

ob=(2)
fl=(2)
fn=(2)
0 100
* 50

totals: 166
"""


def test_own_costs_per_function():
    dump = callgrind.parse(DUMP)
    assert dump.total == 166
    main = "_PyEval_EvalFrameDefault [libpython3.11.so.1.0]"
    work = "at::native::lstm(at::Tensor const&) [libtorch_cpu.so]"
    assert dump.self_cost == {main: 16, work: 150}
    assert sum(dump.self_cost.values()) == dump.total
    assert dump.trigger == "Client Request: rnns/cudnn/forward"


def test_a_recursive_call_is_counted_once():
    text = ("events: Ir\nob=(1) /lib/a.so\nfn=(1) f\n0 5\ncfn=(1)\ncalls=1 0\n0 5\n"
            "summary: 5\n")
    dump = callgrind.parse(text)
    assert dump.self_cost == {"f [a.so]": 5}


def test_a_cut_dump_or_an_undefined_name_is_refused(tmp_path):
    with pytest.raises(callgrind.CallgrindFormatError, match="no summary"):
        callgrind.parse(DUMP.split("summary:")[0])
    with pytest.raises(callgrind.CallgrindFormatError, match=r"\(7\)"):
        callgrind.parse("events: Ir\nfn=(7)\n0 3\nsummary: 3\n")
    path = tmp_path / "callgrind.out.1.1"
    path.write_text("events: Ir\n0 3\n")
    with pytest.raises(callgrind.CallgrindFormatError, match="callgrind.out.1.1"):
        callgrind.read(path)


def test_code_generated_at_run_time_is_one_function_whatever_its_address():
    text = ("events: Ir\nob=(1) ???\nfn=(1) 0x000000002b0f2000\n0 8\n"
            "fn=(2) 0x000000002b0ec000\n0 2\nsummary: 10\n")
    assert callgrind.parse(text).self_cost == {callgrind.JIT_CODE: 10}


def test_the_total_alone_is_read_from_the_end_of_a_long_dump(tmp_path):
    path = tmp_path / "callgrind.out.42.1"
    long = DUMP.replace("ob=(2)\n", "ob=(2)\n" + "# padding\n" * 2000)
    path.write_text(long)
    assert callgrind.read_total(path) == callgrind.read(path).total == 166
    path.write_text(long.split("totals:")[0])  # cut short: its summary is far from the end
    with pytest.raises(callgrind.CallgrindFormatError, match="no totals line at its end"):
        callgrind.read_total(path)


def test_reading_the_total_allocates_alike_whatever_comes_before_it(tmp_path):
    """The counted process reads its sizing dump between workloads: callgrind writes a
    dump's functions in an order that follows valgrind's own memory (the pid's digits moved
    it), and the lines a parse of that order made laid the heap out otherwise for the next
    workload of the child (experiments/diary/instructions.md, "Determinism"). What read_total
    allocates depends on the total alone."""
    import tracemalloc

    peaks = []
    for pid, last in ((303, "f"), (10501, "g" * 300), (4096, "h(int, long) const" * 3)):
        path = tmp_path / f"callgrind.out.{pid}.4"
        path.write_text(f"version: 1\npid: {pid}\nevents: Ir\n" + "fn=(1) x\n0 3\n" * 400
                        + f"fn=(2) {last}\n0 7\n\ntotals: 15935860\n")
        tracemalloc.start()
        try:
            assert callgrind.read_total(str(path)) == 15935860
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert len(set(peaks)) == 1, peaks
