import json

from torchpulse.cli import main


def test_acceptance_profile_writes_a_trace_with_labelled_passes(tmp_path, capsys):
    out_dir = tmp_path / "prof"
    rc = main(["profile", "--rnns", "cudnn", "--preset", "smoke", "--device", "cpu",
               "--nloops", "2", "--output", str(out_dir)])
    out = capsys.readouterr().out
    assert rc == 0
    trace = json.loads((out_dir / "cudnn.trace.json").read_text())
    names = [e.get("name") for e in trace["traceEvents"]]
    assert names.count("## forward ##") == 2 and names.count("## backward ##") == 2
    assert any(n and n.startswith("aten::") for n in names)
    table = (out_dir / "cudnn.txt").read_text()
    assert "2 training steps" in table and "Self CPU" in table and "## forward ##" in table
    assert str(out_dir / "cudnn.trace.json") in out
    assert sorted(p.name for p in out_dir.iterdir()) == ["cudnn.trace.json", "cudnn.txt"]


def test_profile_needs_runners_and_a_directory(tmp_path, capsys):
    assert main(["profile", "--preset", "smoke"]) == 2
    assert "name the runners" in capsys.readouterr().err
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert main(["profile", "--rnns", "py", "--output", str(not_a_dir)]) == 2
    assert "is not a folder" in capsys.readouterr().err
