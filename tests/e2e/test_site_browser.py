"""The published site in headless Chromium, served by `torchpulse serve`, with every host but
127.0.0.1 unreachable (as in a lab without internet): asv's pages and torchpulse's render,
the graph canvas is drawn with its points, and no request leaves loopback.

`make test` installs Chromium and ChromeDriver (scripts/install-browser) where it can."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from torchpulse.evaluation import synthetic

CHROMIUM = os.environ.get("TORCHPULSE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TORCHPULSE_CHROMEDRIVER", "/usr/bin/chromedriver")
COMMITS = 15
STEP = "synthetic.Step.time_cv1_up20_d4"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
        reason=f"no headless Chromium ({CHROMIUM}, {CHROMEDRIVER}): `make browser` installs "
        "the Debian packages chromium and chromium-driver where the user may (root or sudo)"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A published synthetic project served on a free loopback port by the real CLI."""
    path = tmp_path_factory.mktemp("browser-site")
    synthetic.build(path, commits=COMMITS, per_cell=1, noise_series=1, seed=31,
                    kinds=("step", "noise"), sizes=(0.2,), distances=(4,))
    yield from published_and_served(path)


def published_and_served(path):
    """Publish the project at ``path`` and serve it on a free loopback port with the real
    CLI; yields the site's URL, stops the server after."""
    subprocess.run([sys.executable, "-m", "torchpulse.cli", "publish", "--config",
                    str(path / "asv.conf.json")], check=True, capture_output=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "torchpulse.cli", "serve", "--port", "0", "--config",
         str(path / "asv.conf.json")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    try:
        line = server.stdout.readline()  # "serving DIR at http://127.0.0.1:PORT/ ..."
        url = next(w for w in line.split() if w.startswith("http://"))
        assert urlsplit(url).hostname == "127.0.0.1", line
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
                # no internet: every name but loopback fails to resolve
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def visit(driver, url: str, ready_js: str, timeout: float = 20.0):
    """Load ``url`` (logs cleared first) and wait until ``ready_js`` returns truthy."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("performance")
    driver.get_log("browser")
    driver.get("about:blank")  # a new document even when only the #fragment differs
    driver.get(url)
    try:
        return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
            f"try {{ return {ready_js.strip()}; }} catch (e) {{ return null; }}"))
    except TimeoutException:
        requests, errors = traffic(driver)
        raise AssertionError(f"{url} not ready after {timeout:g} s: at {driver.current_url} "
                             f"({driver.title!r}); errors: {errors[:3]}") from None


def traffic(driver) -> tuple[list[str], list[str]]:
    """Network requests since the last call (every scheme but data/blob/about/chrome), and
    console or network errors."""
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if urlsplit(url).scheme not in ("data", "blob", "about", "chrome",
                                            "chrome-untrusted"):
                requests.append(url)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return requests, errors


def assert_only_loopback(driver) -> list[str]:
    requests, errors = traffic(driver)
    offsite = [u for u in requests if urlsplit(u).hostname != "127.0.0.1"]
    assert requests and not offsite, offsite
    assert not errors, errors
    return requests


PAINTED_JS = """
  (function () {
    var c = document.querySelector('#main-graph canvas.flot-base');
    if (!c || !$('#main-graph').data('plot')) return null;
    var px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;
    for (var i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
    return n > 0 ? n : null;
  })()
"""


def test_index_renders_the_benchmark_grid(site, browser):
    count = visit(browser, site, "$('#summarygrid-display .benchmark-container').length")
    assert count == 6  # 3 planted steps + 3 noise benchmarks
    assert not browser.current_url.endswith("error.html")
    assert "torchpulse summary" in browser.find_element("id", "nav-li-torchpulse").text
    requests = assert_only_loopback(browser)
    assert any("/vendor/jquery@3.3.1/" in u for u in requests)


def test_graph_canvas_is_drawn_with_every_point(site, browser):
    painted = visit(browser, f"{site}#{STEP}?machine={synthetic.MACHINE}", PAINTED_JS)
    assert painted > 1000  # pixels: axes, grid, the line and its points
    points = browser.execute_script(
        "return $('#main-graph').data('plot').getData().map(function (s) {"
        "  return s.data.filter(function (p) { return p[1] !== null; }).length; });")
    assert COMMITS in points  # the series, one point per commit
    assert STEP in browser.find_element("id", "title").text
    assert_only_loopback(browser)


def test_regressions_page_shows_asvs_regressions(site, browser):
    import urllib.request

    with urllib.request.urlopen(site + "regressions.json") as r:
        names = {row[0].split("(")[0] for row in json.load(r)["regressions"]}
    assert names and names <= {f"synthetic.Step.time_cv{cv}_up20_d4" for cv in (1, 2, 3)}
    text = visit(browser, f"{site}#/regressions",
                 "$('#regressions-display table.table tbody tr').length > 0 && "
                 "$('#regressions-display').text()")
    assert all(name in text for name in names)
    assert_only_loopback(browser)


def test_benchmark_list_sorts_with_the_npm_stupidtable(site, browser):
    """stupidtable comes from npm at 1.1.3 (asv asks cdnjs for 1.0.1): sorting must work."""
    visit(browser, f"{site}#/summarylist", "$('#summarylist-body table tbody tr').length")
    header = browser.find_elements("css selector", "#summarylist-body table thead th")[0]
    header.click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(
        lambda d: "sort=0" in d.current_url and d.execute_script(
            "return $('#summarylist-body thead th').eq(0).is('.asc, .desc')"))
    names = browser.execute_script(
        "return $('#summarylist-body tbody tr td:first-child').map(function () {"
        "  return $(this).text().trim(); }).get();")
    assert names in (sorted(names), sorted(names, reverse=True))
    assert_only_loopback(browser)


def test_summary_page_from_the_navigation_bar(site, browser):
    visit(browser, site, "$('#nav-li-torchpulse a').length")
    browser.find_element("css selector", "#nav-li-torchpulse a").click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith("torchpulse.html"))
    alerts = browser.find_elements("css selector", "table.alerts tbody tr")
    rows = browser.find_elements("css selector", "table.series tbody tr")
    assert len(alerts) == 3 and len(rows) == 6
    assert all("+" in a.find_element("css selector", "td").text for a in alerts)
    # a row's link opens asv's graph of that series
    link = next(r for r in rows if STEP in r.text).find_element("css selector", "a")
    link.click()
    WebDriverWait(browser, 20).until(lambda d: d.execute_script(f"return {PAINTED_JS.strip()}"))
    assert_only_loopback(browser)


def test_summary_page_charts_each_series_and_filters_by_status(site, browser):
    visit(browser, site + "torchpulse.html", "document.readyState === 'complete'")
    charts = browser.execute_script("""
      return Array.from(document.querySelectorAll('table.series tbody tr')).map(function (r) {
        var svg = r.querySelector('svg.spark'), box = svg.getBoundingClientRect();
        return {name: r.cells[0].textContent, status: r.dataset.status,
                points: svg.querySelector('polyline.levels').points.numberOfItems,
                changes: svg.querySelectorAll('line.change').length,
                band: svg.querySelector('rect.band').getBBox().height,
                shown: box.width > 100 && box.height > 20};
      });""")
    assert len(charts) == 6 and all(c["shown"] and c["band"] > 0 for c in charts)
    assert all(c["points"] == COMMITS for c in charts)
    steps = [c for c in charts if c["status"] == "regression"]
    assert len(steps) == 3 and all(c["changes"] >= 1 for c in steps)  # each step is marked
    # each alert shows its series' chart too
    assert len(browser.find_elements("css selector", "table.alerts tr.alert svg.spark")) == 3

    def shown_statuses():
        return browser.execute_script(
            "return Array.from(document.querySelectorAll('table.series tbody tr'))"
            ".filter(function (r) { return r.offsetParent !== null; })"
            ".map(function (r) { return r.dataset.status; });")

    browser.find_element("id", "show-regression").click()
    assert shown_statuses() == ["regression"] * 3
    browser.find_element("id", "show-all").click()
    assert len(shown_statuses()) == 6
    assert browser.execute_script("return document.scripts.length") == 0
    assert_only_loopback(browser)


def test_html_references_no_external_url(site):
    import urllib.request

    from torchpulse.site.assets import external_urls

    for page in ("index.html", "torchpulse.html"):
        with urllib.request.urlopen(site + page) as r:
            assert external_urls(r.read().decode()) == [], page



PWN = "<img src=x onerror=\"window.__pwned=(window.__pwned||0)+1\">"


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    """A site whose benchmark code, pretty name and machine details hold markup that runs
    script if a page inserts it as HTML (asv shows code and machine details as HTML
    tooltips)."""
    path = tmp_path_factory.mktemp("hostile-site")
    synthetic.build(path, commits=6, per_cell=1, noise_series=1, seed=7, kinds=("noise",))
    results = path / "results"
    declared = json.loads((results / "benchmarks.json").read_text())
    for name, entry in declared.items():
        if name != "version":
            entry["code"] = f"def {name.rsplit('.', 1)[-1]}(): pass  # {PWN}"
            entry["pretty_name"] = f"{name} {PWN}"
    (results / "benchmarks.json").write_text(json.dumps(declared))
    machine = results / synthetic.MACHINE / "machine.json"
    info = json.loads(machine.read_text())
    info.update(cpu=PWN, os=PWN)
    machine.write_text(json.dumps(info))
    yield from published_and_served(path)


def test_hostile_names_show_as_text_and_run_no_script(hostile_site, browser):
    # the grid: names in the page, code in a tooltip on hover (asv: html: true)
    visit(browser, hostile_site, "$('#summarygrid-display .benchmark-container').length")
    browser.execute_script("$('.benchmark-text, .benchmark-plot').trigger('mouseenter');")
    shown = visit_wait(browser, "$('.tooltip').length > 0 && $('.tooltip').text()")
    assert "onerror" in shown and "<img" in shown  # the markup, shown as the text it is
    # a graph page: the benchmark list's tooltips and the machine details
    name = "synthetic.Noise.time_cv1"
    visit(browser, f"{hostile_site}#{name}?machine={synthetic.MACHINE}", PAINTED_JS)
    browser.execute_script("$('#navigation li, [data-toggle], .btn').trigger('mouseenter');")
    visit_wait(browser, "$('.tooltip').length > 0")
    # the summary page shows the machine details too
    visit(browser, hostile_site + "torchpulse.html", "document.readyState === 'complete'")
    assert "onerror" in browser.find_element("css selector", "body").text
    for page in (hostile_site, hostile_site + "torchpulse.html"):
        visit(browser, page, "document.readyState === 'complete'")
        browser.execute_script("$ && $('*').trigger('mouseenter');" if page == hostile_site
                               else "void 0;")
        assert browser.execute_script("return window.__pwned || 0") == 0
        assert browser.execute_script("return document.querySelectorAll('img[src=x]').length") \
            == 0


def visit_wait(driver, js: str, timeout: float = 20.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
        f"try {{ return {js}; }} catch (e) {{ return null; }}"))


@pytest.fixture(scope="module")
def triaged_site(tmp_path_factory):
    """A site whose repository triaged two of its three steps: one accepted with a note
    that holds markup, one under investigation."""
    path = tmp_path_factory.mktemp("triaged-site")
    truths = synthetic.build(path, commits=COMMITS, per_cell=1, noise_series=1, seed=31,
                             kinds=("step", "noise"), sizes=(0.2,), distances=(4,))
    history = synthetic.history(path)
    steps = sorted((t for t in truths if t.kind == "step"), key=lambda t: t.benchmark)
    accepted, looked_at = steps[0], steps[1]

    def entry(t, state, note):
        return (f"[[triage]]\nseries = '{t.benchmark}(*)'\ncommit = '{history[t.at]}'\n"
                f"state = '{state}'\nnote = {json.dumps(note)}\n\n")

    (path / "torchpulse.toml").write_text(
        entry(accepted, "accepted", f"the new allocator {PWN}")
        + entry(looked_at, "investigating", "ask the compiler team"))
    yield from published_and_served(path)


def test_the_summary_shows_each_triage_state_with_its_note(triaged_site, browser,
                                                            tmp_path):
    visit(browser, triaged_site + "torchpulse.html", "document.readyState === 'complete'")
    alerts = browser.find_elements("css selector", "table.alerts tbody tr")
    assert len(alerts) == 2  # the accepted step no longer alerts
    said = [a.text for a in alerts]
    assert sum("triage: investigating: ask the compiler team" in t for t in said) == 1
    summary = browser.find_element("css selector", "details.triaged summary")
    assert summary.text == "2 change(s) triaged in torchpulse.toml, 1 not alerting"
    summary.click()
    rows = {r.text.split()[0]: r.text
            for r in browser.find_elements("css selector", "table.triaged tbody tr")}
    assert set(rows) == {"accepted", "investigating"}
    assert f"the new allocator {PWN}" in rows["accepted"]
    assert "taken out of its series (1 accepted)" in \
        browser.find_element("css selector", "p.triaged").text
    assert browser.execute_script("return window.__pwned || 0") == 0
    assert browser.execute_script("return document.querySelectorAll('img[src=x]').length") \
        == 0
    # what a person sees: kept where TORCHPULSE_SCREENSHOTS points (docs/dashboard.md's)
    where = os.environ.get("TORCHPULSE_SCREENSHOTS")
    shot = (Path(where) if where else tmp_path) / "triage-summary.png"
    browser.execute_script("arguments[0].scrollIntoView()",
                           browser.find_element("css selector", "h3"))
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    assert_only_loopback(browser)


def test_asvs_regressions_tab_says_the_triage_and_still_links_its_graph(triaged_site,
                                                                        browser):
    """asv's own Regressions tab showed a regression under investigation as any other:
    its row now says the triage file's word, and its link still opens the graph."""
    text = visit(browser, f"{triaged_site}#/regressions",
                 "$('#regressions-display table.table tbody tr').length > 0 && "
                 "$('#regressions-display').text()")
    rows = browser.find_elements("css selector", "#regressions-display table.table tbody tr")
    assert len(rows) == 2  # the accepted step is not a regression any more
    assert sum("[triage: investigating: ask the compiler team]" in r.text for r in rows) == 1
    assert "accepted" not in text
    link = next(r for r in rows if "investigating" in r.text).find_element("css selector", "a")
    name = link.text.split("(")[0]
    link.click()  # asv looks the benchmark up by what precedes the first "(" of the row's name
    assert visit_wait(browser, "$('#title').text()") == name
    assert_only_loopback(browser)
