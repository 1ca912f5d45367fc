"""The one asv launcher: how it starts asv, stops its whole group and says it cannot."""

import os
import subprocess
import sys
import time

import pytest

from torchpulse.results import asv_process


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie is gone
    except FileNotFoundError:
        return False


def test_leaving_the_block_by_an_exception_stops_the_whole_group(tmp_path):
    """asv and what it started (a benchmark process): both gone before the error goes on."""
    pid_file = tmp_path / "grandchild"
    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
              "time.sleep(600)\n")
    with pytest.raises(KeyboardInterrupt):
        with asv_process.started([sys.executable, "-c", script], env=os.environ) as proc:
            while not pid_file.exists() or not pid_file.read_text():
                time.sleep(0.05)
            raise KeyboardInterrupt
    assert proc.poll() is not None
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _alive(grandchild):
        assert time.monotonic() < deadline, "the process asv started outlived it"
        time.sleep(0.05)


def test_quiet_output_is_shown_only_when_it_fails_and_capture_returns_it(tmp_path, capfd):
    say = [sys.executable, "-c", "import sys; print('questions'); sys.exit(int(sys.argv[1]))"]
    assert asv_process.run([*say, "0"], env=os.environ, quiet=True).returncode == 0
    assert "questions" not in "".join(capfd.readouterr())
    assert asv_process.run([*say, "3"], env=os.environ, quiet=True).returncode == 3
    assert "questions" in capfd.readouterr().err
    log = tmp_path / "asv.log"
    done = asv_process.run([*say, "0"], env=os.environ, capture=True, log=log)
    assert done.stdout == "questions\n" and "questions" not in "".join(capfd.readouterr())
    assert log.read_text().endswith("questions\n\n")


def test_an_asv_that_cannot_start_is_one_line(tmp_path):
    with pytest.raises(asv_process.AsvLaunchError) as caught:
        asv_process.run(asv_process.command(["run"], python=str(tmp_path / "no-python")),
                        env=os.environ)
    assert str(caught.value).startswith("cannot run asv (") and "\n" not in str(caught.value)


def test_a_scratch_command_runs_asv_with_a_machine_file_of_its_own(tmp_path):
    machine_file = tmp_path / "machine.json"
    line = asv_process.command(["--version"], scratch=True)
    assert line[1] == "-c" and line[2] == asv_process.LAUNCH
    env = asv_process.environment(machine_file)
    assert env[asv_process.MACHINE_FILE_ENV] == str(machine_file)
    done = subprocess.run(line, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "asv" in (done.stdout + done.stderr).lower()
