"""One asv project: its asv.conf.json, read once with asv's own loader, and what torchpulse
needs of it: where results and the site go, the measured repository, its branches and their
first-parent history.

asv's loader accepts what asv accepts (``//`` comments anywhere, trailing commas) and
resolves nothing: asv runs with the config's directory as its working directory, so every
relative path in the config is relative to that directory, here too.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results import gitrepo
from torchpulse.results.gitrepo import History

DEFAULT_CONFIG = "asv.conf.json"


class ProjectError(TorchpulseError, ValueError):
    """An asv config that cannot be read or used for what was asked."""


@dataclass(frozen=True)
class Project:
    config: Path  # asv.conf.json
    settings: dict  # the config's settings as asv reads them (asv's defaults filled in)
    results_dir: Path
    html_dir: Path

    @classmethod
    def load(cls, config: str | os.PathLike[str] = DEFAULT_CONFIG) -> Project:
        from asv import util as asv_util
        from asv.config import Config

        path = Path(config)
        if not path.is_file():
            raise ProjectError(f"{path}: no such asv config (give --config)")
        try:
            conf = Config.load(str(path))
        except asv_util.UserError as exc:
            raise ProjectError(f"{path}: {exc}") from None
        except (OSError, ValueError) as exc:  # json5's syntax errors are ValueErrors
            raise ProjectError(f"{path}: cannot read asv config ({exc})") from None
        except (TypeError, AttributeError, RecursionError):  # asv expects an object
            raise ProjectError(f"{path}: not an asv config (a JSON object)") from None
        settings = dict(vars(conf))
        root = path.parent
        return cls(path, settings, root / str(settings.get("results_dir") or "results"),
                   root / str(settings.get("html_dir") or "html"))

    def with_results_dir(self, results_dir: str | os.PathLike[str] | None) -> Project:
        """This project with its results read from and written to ``results_dir`` (None:
        the config's)."""
        if results_dir is None:
            return self
        return dataclasses.replace(self, results_dir=Path(results_dir))

    def with_html_dir(self, html_dir: str | os.PathLike[str] | None) -> Project:
        if html_dir is None:
            return self
        return dataclasses.replace(self, html_dir=Path(html_dir))

    def elsewhere(self, results_dir: Path, html_dir: Path,
                  min_build_cache: int = 8) -> dict:
        """The config's own settings (as written, read with asv's loader) made to run from
        anywhere: every path absolute, results and site in the given folders, the same
        environments and build cache, which keeps at least ``min_build_cache`` builds."""
        from asv import util as asv_util

        settings = asv_util.load_json(str(self.config), js_comments=True)
        root = self.root.resolve()
        for name, default in (("benchmark_dir", "benchmarks"), ("env_dir", "env")):
            settings[name] = str(root / str(settings.get(name) or default))
        settings["repo"] = str(self.local_repo())
        settings["results_dir"] = str(results_dir)
        settings["html_dir"] = str(html_dir)
        settings["build_cache_size"] = max(int(settings.get("build_cache_size") or 2),
                                           min_build_cache)
        return settings

    @property
    def root(self) -> Path:
        """The config's directory: asv's working directory, the base of relative paths."""
        return self.config.parent

    @property
    def repo_setting(self) -> str:
        return str(self.settings.get("repo") or ".")

    @property
    def is_remote(self) -> bool:
        return "://" in self.repo_setting or self.repo_setting.startswith("git@")

    @property
    def branches(self) -> list[str]:
        """The branches asv benchmarks; ``["HEAD"]`` when the config names none."""
        return [str(b) for b in self.settings.get("branches") or [] if b] or ["HEAD"]

    @property
    def default_branch(self) -> str:
        return self.branches[0]

    def local_repo(self) -> Path:
        """The measured git repository, which must be a local clone."""
        if self.is_remote:
            raise ProjectError(f"{self.config}: repo {self.repo_setting!r} is remote; this "
                               "needs a local clone (point 'repo' at it)")
        repo = (self.root / self.repo_setting).resolve()
        if not (repo / ".git").exists() and not (repo / "objects").is_dir():
            raise ProjectError(f"{repo}: not a git repository ({self.config} 'repo')")
        return repo

    def history(self, branch: str | None = None) -> History:
        """The first-parent history of ``branch`` (default: the config's first), oldest
        first."""
        return History(gitrepo.first_parent_history(self.local_repo(),
                                                    branch or self.default_branch))

    def resolve(self, rev: str) -> str:
        """The full sha of a git revision in the measured repository."""
        return gitrepo.resolve(self.local_repo(), rev)

    def commit_on_branches(self, rev: str) -> str:
        """The full sha of ``rev``, which must be on the first-parent history of one of the
        config's branches (asv shows no other commit)."""
        sha = self.resolve(rev)
        gitrepo.branch_containing(self.local_repo(), sha, self.branches)
        return sha

    def commit_date_ms(self, sha: str) -> int:
        return gitrepo.commit_date_ms(self.local_repo(), sha)

