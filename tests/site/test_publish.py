"""torchpulse publish and serve on a synthetic project: a self-contained site, the summary
page and its link, all-or-nothing replacement of html/, a loopback server."""

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from torchpulse.cli import main
from torchpulse.evaluation import synthetic
from torchpulse.results.project import Project
from torchpulse.site import assets as site_assets
from torchpulse.site import page as summary_page
from torchpulse.site import publish, serve
from torchpulse.site import target as publish_target

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("site")
    synthetic.build(path, commits=15, per_cell=1, noise_series=1, seed=21,
                    kinds=("step", "noise"), sizes=(0.2,), distances=(4,))
    return path


def run_publish(path: Path, *args: str) -> int:
    return main(["publish", "--config", str(path / "asv.conf.json"), *args])


def leftovers(folder: Path) -> list[str]:
    """Scratch folders a publish left beside its target."""
    return sorted(p.name for p in folder.iterdir() if ".publish-" in p.name or ".old-" in p.name)


def tree(html: Path) -> dict[str, bytes]:
    return {str(p.relative_to(html)): p.read_bytes() for p in sorted(html.rglob("*"))
            if p.is_file()}


def test_publish_writes_a_self_contained_site(project, capsys):
    assert run_publish(project) == 0
    out = capsys.readouterr().out
    html = project / "html"
    index = (html / "index.html").read_text()
    assert site_assets.external_urls(index) == []
    assert "https://" not in index
    assert index.count(publish.NAV_LINK) == 1
    assert (html / "regressions.json").is_file() and (html / "graphs").is_dir()
    page = (html / summary_page.PAGE).read_text()
    assert "3 active regression(s)" in page  # the +20 % step at each noise level
    alerts = json.loads((html / summary_page.ALERTS_JSON).read_text())
    assert len(alerts["alerts"]) == 3
    assert {a["benchmark"] for a in alerts["alerts"]} == {
        f"synthetic.Step.time_cv{c}_up20_d4" for c in (1, 2, 3)}
    assert "== 10 assets copied" in out and "site written to" in out
    assert (html / publish_target.MARKER).is_file()
    assert leftovers(project) == []


def test_publish_judges_with_the_alerts_settings(project, capsys):
    """`publish --threshold` gives the page, its JSON and asv's Regressions tab the verdicts
    `alert --threshold` gives: the +20 % steps are under a 50 % threshold."""
    config = str(project / "asv.conf.json")
    assert main(["alert", "--config", config, "--threshold", "0.5", "--format", "json"]) == 0
    alert = json.loads(capsys.readouterr().out)
    assert run_publish(project, "--threshold", "0.5") == 0
    assert "Regressions tab and feed: 0 regression(s)" in capsys.readouterr().out
    html = project / "html"
    site = json.loads((html / summary_page.ALERTS_JSON).read_text())
    assert site["thresholds"] == alert["thresholds"] and site["thresholds"]["time"] == 0.5
    assert site["alerts"] == alert["alerts"] == []
    assert "threshold 50%" in (html / summary_page.PAGE).read_text()
    assert json.loads((html / "regressions.json").read_text())["regressions"] == []


def test_asvs_regressions_tab_shows_torchpulses_verdicts(project, capsys):
    """One verdict everywhere: regressions.json (asv's Regressions tab) and its feed list
    exactly the alerts torchpulse reports, pointing at graphs asv drew."""
    assert run_publish(project) == 0
    assert "Regressions tab and feed: 3 regression(s)" in capsys.readouterr().out
    html = project / "html"
    alerts = json.loads((html / summary_page.ALERTS_JSON).read_text())["alerts"]
    rows = json.loads((html / "regressions.json").read_text())["regressions"]
    index = json.loads((html / "index.json").read_text())
    hash_of = index["revision_to_hash"]
    assert sorted(r[0] for r in rows) == sorted(
        f"{a['benchmark']}({', '.join(a['params'])})" for a in alerts)
    by_name = {f"{a['benchmark']}({', '.join(a['params'])})": a for a in alerts}
    for name, graph, _shown, j, last, best, jumps in rows:
        a = by_name[name]
        assert (html / graph).is_file()  # the graph asv drew for this series
        assert j == 0  # the single parameter value of the synthetic series
        (rev_a, rev_b, before, after) = jumps[0]
        assert rev_a is None and hash_of[str(rev_b)] == a["commit"]
        assert (before, after) == (a["before"], a["after"])
        assert best <= last
    feed = (html / "regressions.xml").read_text()
    assert feed.count("<entry>") == 3 and "torchpulse alert" in feed


def test_publish_twice_gives_the_same_site(project):
    assert run_publish(project) == 0
    first = tree(project / "html")
    assert run_publish(project) == 0
    second = tree(project / "html")
    assert first.keys() == second.keys()
    # asv's own info.json varies from run to run (a timestamp); everything else, the
    # regressions files torchpulse rewrites included, is the same
    differ = {k for k in first if first[k] != second[k]}
    assert differ <= {"info.json"}


def test_missing_assets_keep_the_previous_site(project, tmp_path, capsys):
    assert run_publish(project) == 0
    before = tree(project / "html")
    capsys.readouterr()
    assert run_publish(project, "--assets", str(tmp_path / "nothing")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "npm ci" in err[0] and "is not installed" in err[0]
    assert tree(project / "html") == before


def test_asv_failure_keeps_the_previous_site(project, capsys):
    assert run_publish(project) == 0
    before = tree(project / "html")
    assert run_publish(project, "no-such-branch..HEAD") == 2
    assert "asv publish failed" in capsys.readouterr().err
    assert tree(project / "html") == before
    assert leftovers(project) == []


def test_publish_bad_config_is_exit_2(tmp_path, capsys):
    assert main(["publish", "--config", str(tmp_path / "missing.json")]) == 2
    assert "no such asv config" in capsys.readouterr().err


def test_summary_page_says_why_when_it_cannot_be_built(project, tmp_path):
    # a remote repo: asv publishes from its own clone, the summary needs a local one
    conf = json.loads((project / "asv.conf.json").read_text())
    conf["repo"] = "https://example.org/x.git"
    remote = tmp_path / "remote.conf.json"
    remote.write_text(json.dumps(conf))
    made, error = publish._summarise(Project.load(remote))
    assert made is None and "remote" in error
    publish._write_summary(tmp_path, made, error)
    page = (tmp_path / summary_page.PAGE).read_text()
    assert "No summary:" in page and "remote" in page


def serving(html: Path):
    server = serve.make_server(html, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


def test_serve_binds_loopback_and_serves_the_site(project):
    assert run_publish(project) == 0
    server = serving(project / "html")
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1" and port > 0
        url = serve.url_of(host, port)
        with urllib.request.urlopen(url) as r:
            assert r.status == 200 and b"vendor/jquery@3.3.1" in r.read()
        with urllib.request.urlopen(url + summary_page.PAGE) as r:
            assert b"torchpulse summary" in r.read()
    finally:
        server.shutdown()
        server.server_close()


def test_serve_errors(tmp_path, capsys):
    assert main(["serve", "--html-dir", str(tmp_path)]) == 2
    assert "no published site" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--html-dir", str(tmp_path), "--port", "70000"])
    assert exc.value.code == 2
    assert "between 0 and 65535" in capsys.readouterr().err


def test_serve_port_in_use(project):
    assert run_publish(project) == 0
    first = serving(project / "html")
    try:
        with pytest.raises(serve.ServeError, match="cannot listen"):
            serve.make_server(project / "html", "127.0.0.1", first.server_address[1])
    finally:
        first.shutdown()
        first.server_close()


@pytest.mark.parametrize("host, url, loopback", [
    ("127.0.0.1", "http://127.0.0.1:8080/", True),
    ("::1", "http://[::1]:8080/", True),
    ("localhost", "http://localhost:8080/", True),
    ("0.0.0.0", "http://0.0.0.0:8080/", False),
])
def test_url_and_loopback(host, url, loopback):
    assert serve.url_of(host, 8080) == url
    assert serve.is_loopback(host) is loopback


def _everything(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] != "html"}


@pytest.mark.parametrize("where, says", [
    ("results", "overlaps the results folder"),
    ("results/vm", "overlaps the results folder"),
    (".", "would replace the project"),
    ("..", "would replace the project"),
    (".git", "overlaps the git repository"),
    ("benchmarks", "overlaps the benchmarks folder"),
    ("asv.conf.json", "overlaps the asv config"),
])
def test_publish_refuses_targets_that_would_destroy_the_project(project, where, says,
                                                                capsys):
    before = _everything(project)
    capsys.readouterr()
    assert run_publish(project, "--html-dir", str(project / where)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert _everything(project) == before
    assert leftovers(project) == [] and leftovers(project.parent) == []


def test_publish_never_deletes_what_it_did_not_create(project, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me\n")
    assert run_publish(project, "--html-dir", str(mine)) == 2
    assert "not a torchpulse or asv site" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert run_publish(project, "--html-dir", str(a_file)) == 2
    assert a_file.read_text() == "x"
    # folders named like the old scratch folders are the user's, and stay
    for name in ("html.old", "html.partial"):
        (project / name).mkdir(exist_ok=True)
        (project / name / "keep.txt").write_text(name)
    assert run_publish(project) == 0
    assert [(project / n / "keep.txt").read_text() for n in ("html.old", "html.partial")] == [
        "html.old", "html.partial"]
    # an empty folder, and a site an earlier torchpulse wrote (no marker), are replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_publish(project, "--html-dir", str(empty)) == 0
    (empty / publish_target.MARKER).unlink()
    assert run_publish(project, "--html-dir", str(empty)) == 0
    assert (empty / publish_target.MARKER).is_file() and (empty / "vendor").is_dir()


def test_publish_replaces_the_site_asv_publish_wrote_and_nothing_more(project, tmp_path,
                                                                      capsys):
    """A user's habit: `asv publish`, then `torchpulse publish` into the same html folder.
    asv's own site is replaced; the same site with a file of the user's beside it is not."""
    import subprocess
    import sys

    html = tmp_path / "asv-html"
    subprocess.run([sys.executable, "-m", "asv", "publish", "--config",
                    str(project / "asv.conf.json"), "--html-dir", str(html), "--no-pull"],
                   check=True, capture_output=True, timeout=600)
    assert publish_target.is_asv_site(html)
    (html / "my-notes.txt").write_text("keep me\n")
    before = tree(html)
    assert run_publish(project, "--html-dir", str(html)) == 2
    assert "not a torchpulse or asv site" in capsys.readouterr().err
    assert tree(html) == before
    (html / "my-notes.txt").unlink()
    assert run_publish(project, "--html-dir", str(html)) == 0
    assert (html / publish_target.MARKER).is_file() and (html / "torchpulse.html").is_file()


@pytest.mark.parametrize("atomic", [True, False])
def test_the_new_site_takes_the_old_ones_place(tmp_path, monkeypatch, atomic):
    if not atomic:  # a system without renameat2: two renames
        monkeypatch.setattr(publish_target, "_exchange", lambda a, b: False)
    old, new = tmp_path / "html", tmp_path / ".html.publish-x"
    old.mkdir()
    (old / "page").write_text("old")
    new.mkdir()
    (new / "page").write_text("new")
    publish_target.put(new, old)
    assert (old / "page").read_text() == "new" and (old / publish_target.MARKER).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["html"]


def test_concurrent_publishes_are_serialised(project):
    """Two publishes at once: both succeed, one after the other, and the site is whole."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "torchpulse.cli", "publish", "--config",
           str(project / "asv.conf.json")]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    html = project / "html"
    assert (html / "vendor").is_dir() and (html / summary_page.PAGE).is_file()
    assert site_assets.external_urls((html / "index.html").read_text()) == []
    assert leftovers(project) == []


@pytest.fixture
def hostile_site(tmp_path):
    """A site with a folder, and links that lead out of it to a secret."""
    html, outside = tmp_path / "html", tmp_path / "outside"
    (html / "graphs").mkdir(parents=True)
    outside.mkdir()
    (html / "index.html").write_text("<html>site</html>")
    (html / "graphs" / "a.json").write_text("{}")
    (outside / "secret.txt").write_text("secret")
    (html / "escape").symlink_to(outside, target_is_directory=True)
    (html / "link.txt").symlink_to(outside / "secret.txt")
    server = serving(html)
    yield server
    server.shutdown()
    server.server_close()


def _get(server, path: str) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=60)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/graphs/", "/escape/secret.txt", "/link.txt",
                                  "/index.html%00.txt", "/../outside/secret.txt",
                                  "/%2e%2e/outside/secret.txt", "/escape/"])
def test_serve_keeps_to_the_site(hostile_site, path, capsys):
    status, body = _get(hostile_site, path)
    assert status == 404 and b"secret" not in body
    assert _get(hostile_site, "/graphs/a.json") == (200, b"{}")  # and it still serves
    assert _get(hostile_site, "/")[0] == 200
    assert "Traceback" not in capsys.readouterr().err


def test_serve_bounds_connections_and_closes_idle_ones(tmp_path, monkeypatch):
    import socket
    import time

    monkeypatch.setattr(serve, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(serve._Handler, "timeout", 1.0)
    (tmp_path / "index.html").write_text("<html>site</html>")
    server = serving(tmp_path)

    def handlers() -> int:  # threads serving a connection (each also has a head watchdog)
        return sum(not isinstance(t, threading.Timer) for t in threading.enumerate())

    before = handlers()
    idle = [socket.create_connection(server.server_address[:2], timeout=60) for _ in range(5)]
    try:
        deadline = time.monotonic() + 60
        while handlers() < before + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert handlers() - before <= 2  # the others wait to be accepted
        # every idle connection is closed by the server in the end (EOF), none hangs
        assert [s.recv(1) for s in idle] == [b""] * 5
    finally:
        for s in idle:
            s.close()
        server.shutdown()
        server.server_close()


def test_what_asv_shows_as_html_is_published_escaped(tmp_path, capsys):
    synthetic.build(tmp_path, commits=6, per_cell=1, noise_series=1, seed=5, kinds=("noise",))
    results = tmp_path / "results"
    declared = json.loads((results / "benchmarks.json").read_text())
    name = next(n for n in declared if n != "version")
    declared[name]["code"] = "if a < b and c > d:  # <img src=x onerror=alert(1)>"
    declared[name]["pretty_name"] = "<script>alert(2)</script>"
    (results / "benchmarks.json").write_text(json.dumps(declared))
    machine = results / synthetic.MACHINE / "machine.json"
    info = json.loads(machine.read_text())
    info["cpu"] = "<b onmouseover=alert(3)>cpu</b>"
    machine.write_text(json.dumps(info))
    assert run_publish(tmp_path) == 0
    index = json.loads((tmp_path / "html" / "index.json").read_text())
    entry = index["benchmarks"][name]
    assert entry["code"] == ("if a &lt; b and c &gt; d:  # &lt;img src=x "
                             "onerror=alert(1)&gt;")
    assert entry["pretty_name"] == "&lt;script&gt;alert(2)&lt;/script&gt;"
    assert index["machines"][synthetic.MACHINE]["cpu"].startswith("&lt;b onmouseover")
    text = (tmp_path / "html" / "index.json").read_text()
    assert "<script" not in text and "<img" not in text and "<b " not in text

    # a benchmark name that would be markup cannot be escaped (it is a path and a URL too):
    # publish refuses it and keeps the previous site
    before = tree(tmp_path / "html")
    hostile = "x.<img src=x onerror=alert(4)>"
    declared[hostile] = declared.pop(name)
    declared[hostile]["name"] = hostile
    (results / "benchmarks.json").write_text(json.dumps(declared))
    for path in (results / synthetic.MACHINE).glob("*.json"):
        if path.name != "machine.json":
            data = json.loads(path.read_text())
            data["results"][hostile] = data["results"].pop(name)
            path.write_text(json.dumps(data))
    capsys.readouterr()
    assert run_publish(tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a dotted Python name" in err
    assert tree(tmp_path / "html") == before


@pytest.mark.parametrize("written", ["Infinity", "1e999", "-2E+400"])
def test_an_infinite_value_stops_publish_before_asv_hangs_on_it(tmp_path, capsys, written):
    synthetic.build(tmp_path, commits=6, per_cell=1, noise_series=1, seed=5, kinds=("noise",))
    assert run_publish(tmp_path) == 0
    before = tree(tmp_path / "html")
    path = sorted((tmp_path / "results" / synthetic.MACHINE).glob("*-*.json"))[0]
    data = json.loads(path.read_text())
    name = next(iter(data["results"]))
    data["results"][name][0][0] = 12345.5
    # Python writes an infinity as Infinity, as asv would; 1e999 parses to one too
    path.write_text(json.dumps(data).replace("12345.5", written))
    capsys.readouterr()
    assert run_publish(tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "infinite value" in err and path.name in err
    assert tree(tmp_path / "html") == before


def test_serve_stopped_with_ctrl_c_exits_130(tmp_path):
    """The README's promise for every command: interrupted, it exits 130 (serve said 0)."""
    import signal
    import subprocess
    import sys

    (tmp_path / "index.html").write_text("<!doctype html><title>site</title>\n")
    # a test worker may run with SIGINT ignored, which its children inherit (and Python
    # then leaves Ctrl-C ignored too): the server gets the terminal's default
    proc = subprocess.Popen([sys.executable, "-m", "torchpulse.cli", "serve", "--html-dir",
                             str(tmp_path), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stdout.readline()  # once it listens
        assert "serving" in line, proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in err


def test_publish_removes_the_scratch_of_a_publish_killed_before_and_nothing_else(project):
    """kill -9 during publish left .html.publish-* folders that nothing removed."""
    parent = project
    killed = [parent / ".html.publish-k1ll3d_x", parent / ".html.old-abc123"]
    for folder in killed:
        (folder / "vendor").mkdir(parents=True)
        (folder / "vendor" / "big.js").write_text("x" * 1000)
    theirs = [parent / ".html.publish-notes.txt", parent / ".htmlx.publish-abc",
              parent / "html.publish-abc"]
    theirs[0].write_text("a file, not our folder")
    for folder in theirs[1:]:
        folder.mkdir()
    assert run_publish(project) == 0
    assert not any(f.exists() for f in killed)
    assert all(f.exists() for f in theirs)
    assert not list(parent.glob(".html.publish-*/"))  # this publish's own scratch is gone too


def test_serve_answers_a_fifo_with_404_and_cuts_a_client_that_dribbles_its_head(
        tmp_path, monkeypatch):
    """A FIFO in the site wedged a worker for good; a client sending a header byte every
    20 s held a slot for good (32 of them held the server)."""
    import os
    import socket
    import time
    import urllib.error

    monkeypatch.setattr(serve, "HEAD_SECONDS", 1.0)
    (tmp_path / "index.html").write_text("<!doctype html><title>site</title>\n")
    os.mkfifo(tmp_path / "pipe.json")
    server = serving(tmp_path)
    try:
        host, port = server.server_address[:2]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(serve.url_of(host, port) + "pipe.json", timeout=120)
        assert refused.value.code == 404
        with socket.create_connection((host, port), timeout=120) as slow:
            deadline = time.monotonic() + 120  # generous: only a server that never cuts
            cut = False
            for byte in b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 10_000:
                try:
                    slow.sendall(bytes([byte]))
                except OSError:
                    cut = True
                    break
                time.sleep(0.2)
                if time.monotonic() > deadline:
                    break
            if not cut:
                cut = slow.recv(1) == b""
            assert cut
    finally:
        server.shutdown()
        server.server_close()


def test_a_publish_stopped_while_asv_draws_leaves_no_scratch_folder(tmp_path, monkeypatch):
    """SIGTERM (read as Ctrl-C) while asv publish ran: the scratch folder was removed while
    asv went on writing into it, and a `.html.publish-*` folder stayed behind."""
    import os
    import signal
    import sys
    from types import SimpleNamespace

    from torchpulse.results import asv_process
    from torchpulse.site import publish as publishing

    writer = ("import sys, time, pathlib\n"
              "out = pathlib.Path(sys.argv[1])\n"
              "for i in range(600):\n"
              "    out.mkdir(exist_ok=True); (out / f'{i}.html').write_text('x')\n"
              "    time.sleep(0.05)\n")

    def start(config, out, range_spec, pull):  # asv publish, writing into its output
        return asv_process.started([sys.executable, "-c", writer, str(out)],
                                   env=os.environ)

    monkeypatch.setattr(publishing, "_asv_publish", start)
    monkeypatch.setattr(publishing, "_summarise", lambda project, settings: (None, "none"))
    monkeypatch.setattr(publishing.sanitize, "check_results", lambda results: None)

    def stop(signum, frame):
        raise KeyboardInterrupt

    html = tmp_path / "html"
    project = SimpleNamespace(config=tmp_path / "asv.conf.json", results_dir=tmp_path / "r")
    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            publishing._publish(project, tmp_path / "node_modules", html, None, True,
                                lambda line: None, {})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    time.sleep(0.3)  # as long as six of the writer's writes
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".html")] == []


def test_serve_says_nothing_of_clients_that_reset_and_never_waits_on_its_stderr(
        tmp_path, monkeypatch, capfd):
    """300 connections reset by their clients printed 300 tracebacks of ~23 lines; with its
    stderr a pipe nobody read, the server stopped answering once the pipe was full."""
    import os
    import socket
    import struct
    import sys
    import urllib.request

    (tmp_path / "index.html").write_text("<html>site</html>")
    server = serving(tmp_path)
    address = server.server_address[:2]
    try:
        for _ in range(30):  # half a request, then a reset (SO_LINGER 0)
            s = socket.create_connection(address, timeout=30)
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        with urllib.request.urlopen(f"http://{address[0]}:{address[1]}/", timeout=30) as r:
            assert r.status == 200
    finally:
        server.shutdown()
        server.server_close()
    time.sleep(0.5)  # the log thread writes what is left
    assert "Traceback" not in capfd.readouterr().err

    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        while True:  # a pipe nobody reads, full
            os.write(write, b"x" * 65536)
    except BlockingIOError:
        pass
    os.set_blocking(write, True)
    monkeypatch.setattr(sys, "stderr", os.fdopen(write, "w"))
    server = serving(tmp_path)
    address = server.server_address[:2]
    try:
        for _ in range(serve.LOG_LINES + 50):  # each logs a line nobody will read
            with urllib.request.urlopen(f"http://{address[0]}:{address[1]}/", timeout=30) as r:
                assert r.status == 200
    finally:
        server.shutdown()
        server.socket.close()  # not server_close: its log thread is stuck on the full pipe
        os.close(read)
