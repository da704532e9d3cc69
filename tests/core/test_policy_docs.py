"""``desktop-approver policy docs`` prints docs/policy.md, the one copy of the format, as the
installed package carries it: from a wheel built the way users get it (sdist, then wheel), with
no source tree in reach."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from desktop_approver.cli import main
from desktop_approver.core import policy

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
# What setup.py and pyproject.toml need to build the wheel: the package and the folders mapped into it.
BUILD_INPUTS = ["desktop_approver", "resources", "packaging/linux", "docs/__init__.py", "docs/policy.md", "setup.py",
                "pyproject.toml", "MANIFEST.in", "README.md", "BENCHMARKS.md"]


def test_the_command_prints_docs_policy_md(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "docs"]) == 0
    assert capsys.readouterr().out == DOCS
    assert policy.policy_format_md() == DOCS == policy.POLICY_FORMAT_MD


def test_the_policy_help_names_the_docs_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["policy", "--help"])
    assert "docs" in capsys.readouterr().out


def test_the_readme_points_at_the_format_rather_than_copying_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### The policy file\n", 1)[1].split("\n### ", 1)[0]
    assert "(docs/policy.md)" in section and "`desktop-approver policy docs`" in section
    assert "## Path zones" not in readme and "## Precedence" not in readme


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the sdist of a copy of the build inputs, unpacked as site-packages would hold it."""
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        origin, target = ROOT / name, source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, target)
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        assert any(name.endswith("/docs/policy.md") for name in sdist.getnames())
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as wheel:
        assert "desktop_approver/docs/policy.md" in wheel.namelist()
        assert not any(name.startswith("desktop_approver/docs/screenshots") for name in wheel.namelist())
        wheel.extractall(site)
    return site


def test_the_command_prints_the_packaged_copy_from_a_wheel(unpacked_wheel: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(unpacked_wheel), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    probe = subprocess.run(
        [sys.executable, "-c", "import desktop_approver, importlib.resources as r; print(desktop_approver.__file__); "
                               "print(r.files('desktop_approver.docs').joinpath('policy.md'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert all(line.startswith(str(unpacked_wheel)) for line in probe.stdout.splitlines()), probe.stdout
    done = subprocess.run([sys.executable, "-m", "desktop_approver", "policy", "docs"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == DOCS
