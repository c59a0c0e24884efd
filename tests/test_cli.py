"""The command line contract (docs/manual.md, "The command line" and "Rules of the code"): --help with examples,
--version, one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

import seqlab
from seqlab import cli


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"seqlab {seqlab.__version__}"
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for verb in cli.COMMANDS:
        assert f"seqlab {verb}" in out, verb


@pytest.mark.parametrize("verb", cli.COMMANDS)
def test_every_verb_has_help_with_an_example(verb, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([verb, "--help"])
    assert e.value.code == 0
    assert "example:\n  seqlab " in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["train", "no-such-preset"], "unknown preset"),
    (["train", "lm-char", "--set", "model.nope=1"], "unknown key model.nope"),
    (["train", "lm-char", "--set", "model.d_model=30"], "d_model"),
    (["train", "lm-char", "--set", "data.source=no-such-corpus"], "no-such-corpus"),
    (["generate", "/nonexistent/run", "--prompt", "x"], "not found"),
    (["eval", "/nonexistent/run"], "not found"),
    (["no-such-verb"], "invalid choice"),
    (["train", "lm-char", "--resume", "--force", "--out", "r"], "--resume continues the run and --force replaces it"),
    (["train", "lm-char", "--out", "afile.txt"], "afile.txt is a file, not a folder; give --out a folder path"),
    (["train", "lm-char", "--set", "train.device=cuda"], 'train.device = "cuda" but no CUDA device is available'),
])
def test_bad_input_is_one_error_line_and_exit_2(argv, message, tmp_path, monkeypatch, capsys):
    """The command line's probe of bad inputs (the Python API's: tests/test_notebook_api.py)."""
    from seqlab.training import devices

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(devices, "cuda_present", lambda: False)  # the same on a machine with a GPU
    (tmp_path / "afile.txt").write_text("mine")
    code = cli.main(argv) if argv[0] != "no-such-verb" else _exit_code(argv)
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile.txt"]  # nothing written


def _exit_code(argv):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    return e.value.code


def test_bad_files_for_the_corpus(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    for source, message in [(tmp_path / "empty.txt", "empty"), (tmp_path / "latin1.txt", "UTF-8"),
                            (tmp_path, "directory"), (tmp_path / "missing.txt", "not found")]:
        out = tmp_path / f"run-{source.name}"
        code = cli.main(["train", "lm-char", "--set", f'data.source="{source}"', "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("error:") and message in err[0], err
        assert not (out / "model.safetensors").exists()


def test_python_m_seqlab_runs():
    out = subprocess.run([sys.executable, "-m", "seqlab", "presets"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "lm-char" in out.stdout and "lm-bpe" in out.stdout


def test_public_api_names_are_the_functions():
    """seqlab.train / seqlab.load are the API functions, even after every submodule has been imported."""
    import seqlab.tasks.lm  # noqa: F401  (imports the trainer module)
    import seqlab.training.trainer  # noqa: F401

    assert callable(seqlab.train) and seqlab.train.__module__ == "seqlab.api"
    assert callable(seqlab.load) and seqlab.load.__module__ == "seqlab.api"
