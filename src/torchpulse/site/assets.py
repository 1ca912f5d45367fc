"""The third-party scripts and styles of asv's site, served from html/ instead of CDNs.

asv's index.html loads jQuery, flot, stupidtable, blueimp-md5 and bootstrap from CDNs, so a
machine without internet shows only asv's error page. The same versions come from the npm
registry (package.json pins them, ``npm ci`` installs them into node_modules/); this module
copies them into html/vendor/ and rewrites index.html to load them from there.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError

VENDOR_DIR = "vendor"
ASSETS_ENV = "TORCHPULSE_ASSETS"
# Where `npm ci` puts the packages in a checkout of torchpulse (src/torchpulse/site/ -> root).
_CHECKOUT_ROOT = Path(__file__).resolve().parents[3]


class AssetError(TorchpulseError, RuntimeError):
    """A site asset that is missing, or an external URL with no local copy."""


@dataclass(frozen=True)
class Asset:
    """One URL asv's index.html loads, and the npm file that replaces it."""

    url: str
    package: str
    version: str
    path: str  # the file in the package that index.html loads instead of ``url``
    integrity: str  # the hash asv's index.html gives for ``url``
    extra: tuple[str, ...] = ()  # files or folders ``path`` refers to (bootstrap's fonts)

    @property
    def local(self) -> str:
        """The URL relative to html/."""
        return f"{VENDOR_DIR}/{self.package}@{self.version}/{self.path}"


_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
_JSDELIVR = "https://cdn.jsdelivr.net/npm"
# asv 0.6.6's index.html. cdnjs minified flot itself (npm's flot has the plain files, same
# code) and hosts stupidtable 1.0.1, which npm never had: 1.1.3 is the oldest there, with
# the same API asv uses (stupidtable(sortFns), stupidsort(dir), the aftertablesort event).
ASSETS = (
    Asset("https://code.jquery.com/jquery-3.3.1.min.js", "jquery", "3.3.1",
          "dist/jquery.min.js", "sha256-FgpCb/KJQlLNfOu91ta32o/NMZxltwRo8QtmkMRdAu8="),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.min.js", "flot", "0.8.3", "jquery.flot.js",
          "sha512-eO1AKNIv7KSFl5n81oHCKnYLMi8UV4wWD1TcLYKNTssoECDuiGhoRsQkdiZkl8VUjoms2SeJY7"
          "zTSw5noGSqbQ=="),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.time.min.js", "flot", "0.8.3",
          "jquery.flot.time.js",
          "sha512-lcRowrkiQvFli9HkuJ2Yr58iEwAtzhFNJ1Galsko4SJDhcZfUub8UxGlMQIsMvARiTqx2pm7g6"
          "COxJozihOixA=="),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.selection.min.js", "flot", "0.8.3",
          "jquery.flot.selection.js",
          "sha512-3EUG0t3qfbLaGN3FXO86i+57nvxHOXvIb/xMSKRrCuX/HXdn1bkbqwAeLd6U1PDmuEB2cnKhfM"
          "+SGLAVQbyjWQ=="),
    Asset(f"{_CDNJS}/flot/0.8.3/jquery.flot.categories.min.js", "flot", "0.8.3",
          "jquery.flot.categories.js",
          "sha512-x4QGSZkQ57pNuICMFFevIhDer5NVB5eJCRmENlCdJukMs8xWFH8OHfzWQVSkl9VQ4+4upPPTkH"
          "SAewR6KNMjGA=="),
    Asset(f"{_JSDELIVR}/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js", "flot-orderbars",
          "1.0.0", "js/jquery.flot.orderBars.js",
          "sha256-OXNbT0b5b/TgglckAfR8VaJ2ezZv0dHoIeRKjYMKEr8="),
    Asset(f"{_CDNJS}/stupidtable/1.0.1/stupidtable.min.js", "stupid-table-plugin", "1.1.3",
          "stupidtable.min.js",
          "sha512-GM3Ds3dUrgkpKVXc+4RxKbQDoeTemdlzXxn5d/QCOJT6EFdEufu1UTVBpIFDLd6YjIhSThNe+z"
          "po1mwqzNq4GQ=="),
    Asset(f"{_CDNJS}/blueimp-md5/2.19.0/js/md5.min.js", "blueimp-md5", "2.19.0",
          "js/md5.min.js",
          "sha512-8pbzenDolL1l5OPSsoURCx9TEdMFTaeFipASVrMYKhuYtly+k3tcsQYliOEKTmuB1t7yuzAiVo"
          "+yd7SJz+ijFQ=="),
    Asset(f"{_JSDELIVR}/bootstrap@3.1.1/dist/js/bootstrap.min.js", "bootstrap", "3.1.1",
          "dist/js/bootstrap.min.js", "sha256-iY0FoX8s/FEg3c26R6iFw3jAtGbzDwcA5QJ1fiS0A6E="),
    Asset(f"{_JSDELIVR}/bootstrap@3.1.1/dist/css/bootstrap.min.css", "bootstrap", "3.1.1",
          "dist/css/bootstrap.min.css", "sha256-6VA0SGkrc43SYPvX98q/LhHwm2APqX5us6Vuulsafps=",
          extra=("dist/fonts",)),
)

# A <script src=...> or <link href=...> tag and the URL it loads.
_TAG = re.compile(r"<(script|link)\b[^>]*?\b(src|href)=\"([^\"]*)\"[^>]*>", re.IGNORECASE)
_INTEGRITY = re.compile(r"\bintegrity=\"([^\"]*)\"")
_EXTERNAL = re.compile(r"""\b(?:src|href)\s*=\s*["']?((?:[a-z][a-z0-9+.-]*:)?//[^"'\s>]+)""",
                       re.IGNORECASE)
# asv's credit link in the navigation bar: kept as text, without the link out.
_CREDIT = re.compile(r"<a href=\"https://github\.com/airspeed-velocity/asv/?\"([^>]*)>")


@dataclass(frozen=True)
class Vendored:
    """What became of one asset: byte-identical to what asv asked for (its integrity hash
    matches) or a substitute (same version from npm, or the nearest one; hash recomputed)."""

    asset: Asset
    identical: bool


def find_node_modules(explicit: str | os.PathLike[str] | None, project_dir: Path) -> Path:
    """The node_modules folder holding the assets: ``explicit``, else $TORCHPULSE_ASSETS,
    else the asv project's own, else the one of the torchpulse checkout."""
    if explicit or os.environ.get(ASSETS_ENV):
        return Path(explicit or os.environ[ASSETS_ENV])
    for root in (project_dir, _CHECKOUT_ROOT):
        if (root / "node_modules").is_dir():
            return root / "node_modules"
    return _CHECKOUT_ROOT / "node_modules"


def _installed_version(node_modules: Path, package: str) -> str | None:
    try:
        return str(json.loads((node_modules / package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def check(node_modules: Path) -> None:
    """Raise AssetError naming the fix unless every asset is installed at its version."""
    fix = (f"run `npm ci` in {_CHECKOUT_ROOT} (`make venv` does it), or point --assets / "
           f"${ASSETS_ENV} at a node_modules folder that has them")
    for asset in ASSETS:
        version = _installed_version(node_modules, asset.package)
        if version is None:
            raise AssetError(f"site asset {asset.package}@{asset.version} is not installed in "
                             f"{node_modules}: {fix}")
        if version != asset.version:
            raise AssetError(f"site asset {asset.package} in {node_modules} is {version}, "
                             f"asv's site needs {asset.version}: {fix}")
        for rel in (asset.path, *asset.extra):
            if not (node_modules / asset.package / rel).exists():
                raise AssetError(f"site asset {asset.package}@{asset.version} has no {rel} "
                                 f"in {node_modules}: {fix}")


def sri(data: bytes, algorithm: str = "sha384") -> str:
    """A Subresource Integrity value for ``data``."""
    digest = hashlib.new(algorithm, data).digest()
    return f"{algorithm}-{base64.b64encode(digest).decode()}"


def _matches(integrity: str, data: bytes) -> bool:
    for token in integrity.split():
        algorithm, _, _ = token.partition("-")
        if algorithm in ("sha256", "sha384", "sha512") and sri(data, algorithm) == token:
            return True
    return False


def _copy(node_modules: Path, asset: Asset, html_dir: Path) -> bytes:
    source_root = node_modules / asset.package
    target_root = html_dir / VENDOR_DIR / f"{asset.package}@{asset.version}"
    for rel in (asset.path, *asset.extra):
        source, target = source_root / rel, target_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)
    return (source_root / asset.path).read_bytes()


def _retag(tag: str, attr: str, asset: Asset, data: bytes) -> tuple[str, bool]:
    """The tag loading ``asset.local``. Its integrity stays asv's when the local bytes are
    what asv asked for, else it becomes the local file's hash (SRI stays checked)."""
    tag = tag.replace(f'{attr}="{asset.url}"', f'{attr}="{asset.local}"')
    identical = _matches(asset.integrity, data)
    value = asset.integrity if identical else sri(data)
    found = _INTEGRITY.search(tag)
    if found:
        tag = tag[:found.start(1)] + value + tag[found.end(1):]
    return tag, identical


def vendor(html_dir: Path, node_modules: Path) -> list[Vendored]:
    """Copy the assets into ``html_dir``/vendor and point index.html at them. Idempotent.
    AssetError when an asset is missing (nothing changed yet) or when index.html would
    still load something from another host (index.html left as it was)."""
    check(node_modules)
    index = html_dir / "index.html"
    text = index.read_text(encoding="utf-8")
    by_url = {a.url: a for a in ASSETS} | {a.local: a for a in ASSETS}
    done: dict[Asset, Vendored] = {}

    def replace(match: re.Match[str]) -> str:
        tag, attr, url = match.group(0), match.group(2), match.group(3)
        asset = by_url.get(url)
        if asset is None:
            return tag
        data = _copy(node_modules, asset, html_dir)
        tag, identical = _retag(tag, attr, asset, data)
        done[asset] = Vendored(asset, identical)
        return tag

    text = _TAG.sub(replace, text)
    text = _CREDIT.sub(r"<a\1>", text)
    left = external_urls(text)
    if left:
        raise AssetError(f"{index} loads {left[0]}, which torchpulse has no local copy of "
                         f"(asv changed its site?): add its npm package to package.json and "
                         "torchpulse/site/assets.py ASSETS")
    index.write_text(text, encoding="utf-8")
    return [done[a] for a in ASSETS if a in done]


def external_urls(html: str) -> list[str]:
    """Every src or href in ``html`` that points at another host."""
    return [m.group(1) for m in _EXTERNAL.finditer(html)]
