"""The asv project: asv.conf.json read once with asv's own loader, the places it names, the
measured repository and its history."""

import json

import pytest
from asvproject import make_project

from torchpulse.cli import main
from torchpulse.results.gitrepo import GitError
from torchpulse.results.project import Project, ProjectError

# what real configs carry and asv accepts: comments anywhere, trailing commas
LENIENT = """{
    "version": 1,  // asv's format
    "project": "p",
    "repo": ".",  // this clone
    "branches": ["main",],
    "results_dir": "out/results",
    "html_dir": "out/site",
}
"""


@pytest.fixture
def repo(tmp_path):
    return make_project(tmp_path / "repo")


def test_config_with_inline_comments_and_trailing_commas(repo):
    repo.conf.write_text(LENIENT)
    project = Project.load(repo.conf)
    assert project.results_dir == repo.root / "out" / "results"
    assert project.html_dir == repo.root / "out" / "site"
    assert project.branches == ["main"] and project.default_branch == "main"
    assert project.local_repo() == repo.root.resolve()


def test_alert_reads_such_a_config(repo, capsys):
    repo.conf.write_text(LENIENT)
    (repo.root / "out" / "results").mkdir(parents=True)
    assert main(["alert", "--config", str(repo.conf)]) == 0
    assert "0 active regressions in 0 series" in capsys.readouterr().out


def test_relative_places_are_relative_to_the_config_not_the_working_directory(repo,
                                                                               monkeypatch,
                                                                               tmp_path):
    monkeypatch.chdir(tmp_path)
    project = Project.load(repo.conf.relative_to(tmp_path))
    assert project.results_dir.resolve() == repo.results.resolve()
    assert project.html_dir.resolve() == repo.html.resolve()


def test_asv_defaults_fill_what_the_config_leaves_out(repo):
    repo.conf.write_text(json.dumps({"version": 1, "repo": "."}))
    project = Project.load(repo.conf)
    assert project.results_dir == repo.root / "results"
    assert project.html_dir == repo.root / "html"
    assert project.branches == ["HEAD"]


def test_history_is_first_parent_oldest_first(repo):
    project = Project.load(repo.conf)
    history = project.history()
    assert history.commits == repo.main
    assert history.position[repo.main[-1]] == 2
    assert project.history("side").commits == [*repo.main, repo.side]


def test_commits_resolve_only_on_the_configured_branches(repo):
    project = Project.load(repo.conf)
    assert project.commit_on_branches("HEAD~1") == repo.main[1]
    assert project.commit_date_ms(repo.main[0]) % 1000 == 0
    with pytest.raises(GitError, match="not on the first-parent history of main"):
        project.commit_on_branches(repo.side)
    with pytest.raises(GitError, match="unknown commit 'nope'"):
        project.commit_on_branches("nope")


def test_results_and_html_dirs_can_be_overridden(repo, tmp_path):
    project = Project.load(repo.conf)
    assert project.with_results_dir(tmp_path / "r").results_dir == tmp_path / "r"
    assert project.with_results_dir(None) is project
    assert project.with_html_dir(tmp_path / "h").html_dir == tmp_path / "h"


@pytest.mark.parametrize("text, message", [
    (None, "no such asv config"),
    ("{not json", "cannot read asv config"),
    ('{"version": 1}', "No repo specified"),
    ('{"repo": "."}', "No version specified"),
])
def test_unusable_configs_are_one_line_errors(tmp_path, text, message):
    config = tmp_path / "asv.conf.json"
    if text is not None:
        config.write_text(text)
    with pytest.raises(ProjectError, match=message) as info:
        Project.load(config)
    assert "\n" not in str(info.value)


def test_a_remote_repo_or_no_repository_is_refused_where_a_clone_is_needed(tmp_path):
    config = tmp_path / "asv.conf.json"
    config.write_text(json.dumps({"version": 1, "repo": "https://example.org/x.git"}))
    project = Project.load(config)
    assert project.is_remote
    with pytest.raises(ProjectError, match="is remote"):
        project.history()
    config.write_text(json.dumps({"version": 1, "repo": "elsewhere"}))
    with pytest.raises(ProjectError, match="not a git repository"):
        Project.load(config).local_repo()
