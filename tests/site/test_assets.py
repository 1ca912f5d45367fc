"""site/assets.py: asv's CDN scripts and styles replaced by local copies, on asv's own
index.html, with a fake node_modules (logic) and the one `npm ci` installs (real bytes)."""

import json
import re
import shutil
from pathlib import Path

import asv
import pytest

from torchpulse.site import assets as site_assets
from torchpulse.site.assets import ASSETS, AssetError

ROOT = Path(__file__).resolve().parents[2]
ASV_INDEX = Path(asv.__file__).parent / "www" / "index.html"


def fake_node_modules(root: Path, skip: str | None = None, versions: dict | None = None
                      ) -> Path:
    """Every asset's package with its files, contents made up (so no hash matches asv's)."""
    for asset in ASSETS:
        if asset.package == skip:
            continue
        pkg = root / asset.package
        version = (versions or {}).get(asset.package, asset.version)
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / "package.json").write_text(json.dumps({"name": asset.package,
                                                      "version": version}))
        target = pkg / asset.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"/* {asset.package} {asset.path} */\n")
        for extra in asset.extra:
            (pkg / extra).mkdir(parents=True, exist_ok=True)
            (pkg / extra / "font.woff").write_bytes(b"font")
    return root


@pytest.fixture
def site(tmp_path):
    html = tmp_path / "html"
    shutil.copytree(ASV_INDEX.parent, html)  # what asv publish starts the site from
    return html


def loaded(html_dir: Path) -> list[tuple[str, str | None]]:
    """(url, integrity) of every script and stylesheet index.html loads."""
    text = (html_dir / "index.html").read_text()
    out = []
    for tag in re.findall(r"<(?:script|link)\b[^>]*>", text):
        url = re.search(r'\b(?:src|href)="([^"]*)"', tag)
        if url and ("<script" in tag or 'rel="stylesheet"' in tag):
            integrity = re.search(r'\bintegrity="([^"]*)"', tag)
            out.append((url.group(1), integrity.group(1) if integrity else None))
    return out


def test_asv_index_still_asks_for_what_the_table_lists():
    urls = [u for u, _ in loaded(ASV_INDEX.parent)]
    assert sorted(a.url for a in ASSETS) == sorted(u for u in urls if u.startswith("https:"))
    for asset in ASSETS:  # the integrity recorded is the one asv's page gives
        assert (asset.url, asset.integrity) in loaded(ASV_INDEX.parent)


def test_vendor_rewrites_every_cdn_url_with_valid_integrity(site, tmp_path):
    modules = fake_node_modules(tmp_path / "node_modules")
    done = site_assets.vendor(site, modules)
    assert [v.asset for v in done] == list(ASSETS)
    assert not any(v.identical for v in done)  # made-up bytes: every hash recomputed
    text = (site / "index.html").read_text()
    assert site_assets.external_urls(text) == []
    assert "https://" not in text and "http://" not in text
    for url, integrity in loaded(site):
        assert (site / url).is_file(), url
        if url.startswith(site_assets.VENDOR_DIR):
            assert integrity == site_assets.sri((site / url).read_bytes())
    # bootstrap's stylesheet finds its fonts at ../fonts, as on the CDN
    assert (site / "vendor/bootstrap@3.1.1/dist/fonts/font.woff").is_file()
    assert ">airspeed velocity</a>" in text  # the credit stays, as text


def test_vendor_is_idempotent(site, tmp_path):
    modules = fake_node_modules(tmp_path / "node_modules")
    site_assets.vendor(site, modules)
    first = (site / "index.html").read_text()
    again = site_assets.vendor(site, modules)
    assert (site / "index.html").read_text() == first
    assert [v.asset for v in again] == list(ASSETS)


def test_missing_package_names_the_fix_and_changes_nothing(site, tmp_path):
    modules = fake_node_modules(tmp_path / "node_modules", skip="flot")
    before = (site / "index.html").read_text()
    with pytest.raises(AssetError, match=r"flot@0\.8\.3 is not installed .*npm ci"):
        site_assets.vendor(site, modules)
    assert (site / "index.html").read_text() == before
    assert not (site / site_assets.VENDOR_DIR).exists()


def test_wrong_version_is_an_error(site, tmp_path):
    modules = fake_node_modules(tmp_path / "node_modules", versions={"jquery": "3.7.1"})
    with pytest.raises(AssetError, match=r"jquery .* is 3\.7\.1, asv's site needs 3\.3\.1"):
        site_assets.check(modules)


def test_missing_file_in_package_is_an_error(tmp_path):
    modules = fake_node_modules(tmp_path / "node_modules")
    (modules / "bootstrap" / "dist" / "fonts" / "font.woff").unlink()
    (modules / "bootstrap" / "dist" / "fonts").rmdir()
    with pytest.raises(AssetError, match="bootstrap@3.1.1 has no dist/fonts"):
        site_assets.check(modules)


def test_unknown_external_url_is_refused(site, tmp_path):
    index = site / "index.html"
    index.write_text(index.read_text().replace(
        "</head>", '<script src="//cdn.example.org/new-lib.js"></script></head>'))
    before = index.read_text()
    with pytest.raises(AssetError, match="//cdn.example.org/new-lib.js"):
        site_assets.vendor(site, fake_node_modules(tmp_path / "node_modules"))
    assert index.read_text() == before


@pytest.mark.parametrize("html, found", [
    ('<script src="https://a.example/x.js">', ["https://a.example/x.js"]),
    ("<link href='//b.example/y.css' rel=stylesheet>", ["//b.example/y.css"]),
    ('<img src=http://c.example/z.png>', ["http://c.example/z.png"]),
    ('<script src="vendor/jquery.js"></script><a href="#/regressions">', []),
    ('<meta http-equiv="Content-Type" content="text/html">', []),
])
def test_external_urls(html, found):
    assert site_assets.external_urls(html) == found


def test_find_node_modules_order(tmp_path, monkeypatch):
    monkeypatch.delenv(site_assets.ASSETS_ENV, raising=False)
    (tmp_path / "node_modules").mkdir()
    assert site_assets.find_node_modules(None, tmp_path) == tmp_path / "node_modules"
    assert site_assets.find_node_modules("/x", tmp_path) == Path("/x")
    monkeypatch.setenv(site_assets.ASSETS_ENV, "/y")
    assert site_assets.find_node_modules(None, tmp_path) == Path("/y")


def test_installed_assets_are_asvs_bytes_where_npm_has_them(site):
    """With the packages `npm ci` installs: jQuery, orderBars, md5 and bootstrap are the very
    files asv's page pins (its integrity hashes match); flot (cdnjs minified it) and
    stupidtable (npm's oldest is 1.1.3) are substitutes with their own hashes."""
    modules = site_assets.find_node_modules(None, ROOT)
    done = {v.asset.url.rsplit("/", 1)[-1]: v.identical for v in
            site_assets.vendor(site, modules)}
    assert {name for name, same in done.items() if same} == {
        "jquery-3.3.1.min.js", "jquery.flot.orderBars.js", "md5.min.js", "bootstrap.min.js",
        "bootstrap.min.css"}
    for url, integrity in loaded(site):
        if url.startswith(site_assets.VENDOR_DIR):
            algorithm = integrity.split("-", 1)[0]
            assert integrity == site_assets.sri((site / url).read_bytes(), algorithm)
