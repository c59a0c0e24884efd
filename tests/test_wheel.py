"""The package as `pip install seqlab` gets it: the sdist and the wheel built (the wheel from the sdist, as
``python -m build`` does, and once straight from the tree: the same files), the wheel installed, not editable, into
a fresh virtual environment, and run from outside the source tree. A file missing from the wheel (a preset, the
inspector's static files, the course's notebooks) fails here, where the editable install of the rest of the suite would not see it.

The fresh environment takes its dependencies (torch at the pinned version, numpy, ...) from this environment's
site-packages through a ``.pth`` line, which adds the folder and nothing else: seqlab itself comes only from the
wheel (this environment's editable finder is not loaded there)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("build")  # the test extra; under CI a missing one fails (conftest.py)


def run(*args, cwd, env=None) -> str:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc.stdout


def files_of(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return {n for n in z.namelist() if not n.endswith(".dist-info/RECORD")}


@pytest.mark.heavy
def test_the_wheel_installs_and_runs_outside_the_source_tree(tmp_path):
    dist, direct, tree = tmp_path / "dist", tmp_path / "direct", tmp_path / "tree"
    # the files git would commit, copied: a build in the checkout would leave build/ there, whose stale files a
    # later build packs
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, tree, cwd=tmp_path)  # sdist, then its wheel
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", direct, tree, cwd=tmp_path)
    (wheel,), (straight,) = dist.glob("*.whl"), direct.glob("*.whl")
    assert len(list(dist.glob("*.tar.gz"))) == 1, "no sdist"
    assert files_of(wheel) == files_of(straight), "the sdist builds another wheel than the tree"
    names = files_of(wheel)
    for needed in ("seqlab/py.typed", "seqlab/serve/static/page.html", "seqlab/serve/static/seqlab.js",
                   "seqlab/serve/static/seqlab.css"):
        assert needed in names, f"{needed} is not in the wheel"
    presets = sorted(p.name for p in (ROOT / "seqlab" / "base" / "presets").glob("*.toml"))  # every preset file
    assert len(presets) > 10 and sorted(n for n in names if n.startswith("seqlab/base/presets/")) == [
        f"seqlab/base/presets/{name}" for name in presets]
    assert not [n for n in names if n.startswith(("tests/", "docs/", "bench/"))]
    shipped = sorted(p.name for p in (ROOT / "seqlab" / "course" / "notebooks").iterdir())  # the course's notebooks
    assert len([n for n in shipped if n.endswith(".ipynb")]) == 8 and "recorded.json" in shipped
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("seqlab/course/notebooks/")) == shipped

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path).strip())
    (purelib / "seqlab-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel,
        cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = run(python, "-c", "import seqlab; print(seqlab.__file__)", cwd=tmp_path, env=env).strip()
    assert Path(where).is_relative_to(venv), f"seqlab imported from {where}, not from the installed wheel"
    seqlab = venv / "bin" / "seqlab"
    assert run(seqlab, "--version", cwd=tmp_path, env=env).startswith("seqlab ")
    assert "lm-char" in run(seqlab, "presets", cwd=tmp_path, env=env)
    assert "usage: seqlab serve" in run(seqlab, "serve", "--help", cwd=tmp_path, env=env)
    page = run(python, "-c", "from importlib.resources import files; "
               "print(files('seqlab.serve').joinpath('static/page.html').read_text()[:200])", cwd=tmp_path, env=env)
    assert "<" in page
    got = run(seqlab, "course", "get", "all", "--dir", tmp_path / "course", cwd=tmp_path, env=env)
    assert got.count("wrote\t") == 8 and (tmp_path / "course" / "03-recurrent-networks.ipynb").read_bytes() == (
        ROOT / "seqlab" / "course" / "notebooks" / "03-recurrent-networks.ipynb").read_bytes()
    out = run(seqlab, "demo", "--steps", "3", "--out", tmp_path / "demo", cwd=tmp_path, env=env)
    assert "trained to step" in out and (tmp_path / "demo" / "model.safetensors").exists()
