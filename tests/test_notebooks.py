"""The course's notebooks (seqlab/course/notebooks/): generated from the pages and equal to them now, run in a real
Jupyter kernel at the tiny size with the solutions filled in (every cell passes), and as shipped every ``check``
cell says "not passed" in words; ``seqlab course list`` and ``seqlab course get``.

The kernel run of a tutorial is the suite's only run of that page's code: the site's test build leaves it out
(``SEQLAB_DOCS_SKIP_NOTEBOOKS=1``, tests/test_docs_site.py), so what the build's run of the pages checked is
checked here on the notebooks' outputs (each tutorial shows its central functions' source, the tour's runs)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

from needs import needs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import notebook_pages  # noqa: E402
import notebook_run  # noqa: E402

NAMES = list(notebook_pages.sources())
KERNEL = needs("nbclient", "ipykernel", "nbformat", extra="test")
# the central functions each tutorial shows beside its equations (show_source), read from the installed code
SOURCE_BESIDE = {
    "01-time-series-ar": ["seqlab.models.autoregressive.design_matrix", "seqlab.models.autoregressive.AR.fit",
                          "seqlab.models.autoregressive.FittedAR.forecast"],
    "02-tokens-and-vocabularies": ["seqlab.text.vocab.Vocab.build", "seqlab.data.batching.pad_batch"],
    "03-recurrent-networks": ["seqlab.nn.recurrent.gru_step", "seqlab.nn.recurrent.lstm_step"],
    "04-word-embeddings": ["seqlab.models.word2vec_kernels._sgd_pair", "seqlab.models.glove_torch.GloVe.forward"],
    "05-seq2seq-attention": ["seqlab.nn.additive.AdditiveAttention.forward", "seqlab.metrics.bleu.compute_bleu"],
    "06-transformer": ["seqlab.nn.attention.attention_equations", "seqlab.nn.attention.split_heads",
                       "seqlab.nn.attention.merge_heads", "seqlab.nn.attention.MultiHeadAttention.forward"],
    "07-pretrained-encoders": ["seqlab.text.wordpiece.WordPieceTokenizer.encode_words",
                               "seqlab.models.pretrained.mean_pool"],
}


def test_the_committed_notebooks_are_what_the_pages_make_now():
    """One source: a page's prose or code and its notebook never differ (``python docs/notebook_pages.py``)."""
    committed = {p.name for p in notebook_pages.OUT.glob("*.ipynb")}
    assert committed == {f"{name}.ipynb" for name in NAMES}, "python docs/notebook_pages.py"
    assert len(NAMES) == 8 and set(SOURCE_BESIDE) < set(NAMES)
    for name in NAMES:
        text = (notebook_pages.OUT / f"{name}.ipynb").read_text(encoding="utf-8")
        assert text == notebook_pages.notebook_text(name), f"{name}.ipynb differs from its page: " \
                                                           "python docs/notebook_pages.py"
        assert str(ROOT) not in text and "/tmp/" not in text and "docs_support" not in text
        doc = json.loads(text)
        code = [c for c in doc["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
        assert doc["metadata"]["seqlab"]["notebook"] == name
        if name != notebook_pages.TOUR_NAME:  # the size switch first; the exercises' starters, no solution
            assert "".join(code[0]["source"]) == notebook_pages.SIZE_CELL
            sources = ["".join(c["source"]) for c in code]
            from seqlab import course

            for exercise in course.exercises(name[:2]):
                at = sources.index(exercise.starter().rstrip())
                assert sources[at + 1] == notebook_pages.check_code(exercise)
    recorded = (notebook_pages.OUT / "recorded.json").read_text(encoding="utf-8")
    assert recorded == notebook_pages.recorded_text(notebook_pages.tiny_records()), \
        "recorded.json's documented runs differ from docs/results: python docs/notebook_pages.py"


@pytest.fixture(scope="module")
def env(tmp_path_factory, shared_data):
    return lambda folder: notebook_run.kernel_env(folder, shared_data)


@pytest.fixture(scope="module")
def forks(tmp_path_factory):
    """Fresh kernels forked from one process that imported ipykernel, torch, numba and matplotlib once
    (docs/kernel_forks.py): each notebook still runs in a new kernel process of its own."""
    pytest.importorskip("ipykernel")
    with notebook_run.KernelForks(notebook_run.kernel_env(tmp_path_factory.mktemp("kernel-forks"))) as server:
        yield server


@pytest.mark.heavy
@KERNEL
@pytest.mark.parametrize("name", NAMES)
def test_every_notebook_runs_in_a_kernel_with_the_solutions(name, env, forks, tmp_path):
    nb = notebook_run.with_solutions(notebook_run.load(name))
    seconds = notebook_run.execute(nb, tmp_path, env(tmp_path), forks)  # a failing cell raises, with its traceback
    shown = [notebook_run.outputs_text(cell) for cell in nb.cells if cell.cell_type == "code"]
    assert not [text for text in shown if "Traceback" in text]
    checks = [notebook_run.outputs_text(c) for c in nb.cells if c.cell_type == "code" and "course.check(" in c.source]
    assert all(": passed, equal to seqlab's" in text for text in checks), checks
    everything = "\n".join(shown)
    for dotted in SOURCE_BESIDE.get(name, []):  # the source as the code has it now: name, file and lines
        import inspect
        import pkgutil

        func = getattr(pkgutil.resolve_name(dotted), "py_func", pkgutil.resolve_name(dotted))
        lines, start = inspect.getsourcelines(func)
        path = Path(inspect.getsourcefile(func)).resolve().relative_to(ROOT).as_posix()
        assert f"**`{dotted}`** · `{path}` lines {start}-{start + len(lines) - 1}" in everything, (name, dotted)
    if name == notebook_pages.TOUR_NAME:  # every task trained from memory, every verb, save and load, a plot
        runs = tmp_path / "runs"
        assert seconds < 120 and (runs / "tour-attention.png").stat().st_size > 1000
        assert (runs / "tour-lm-saved" / "model.safetensors").exists()
        assert sorted(p.name for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")) == [
            "tour-ar", "tour-cls", "tour-fc", "tour-lm", "tour-lm-saved", "tour-mt", "tour-ner", "tour-stop",
            "tour-w2v"]
        assert "perplexity" in everything and "10 20" in everything
    else:
        assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
                   for cell in nb.cells for o in cell.get("outputs", [])), f"{name} shows no figure"
    print(f"\n{name}: {seconds:.1f} s in a kernel")


@KERNEL
def test_a_forked_kernel_ends_with_its_notebook_and_leaves_no_connection_file(forks, tmp_path, monkeypatch):
    """nbclient shuts down only kernels of managers it made: a forked kernel must be shut down by execute() itself,
    its process gone and its connection file (jupyter_client writes it in the temp folder) removed."""
    import nbformat

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os; print(os.getpid())")])
    notebook_run.execute(nb, tmp_path, notebook_run.kernel_env(tmp_path), forks)
    pid = int(notebook_run.outputs_text(nb.cells[0]))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert list(temp.iterdir()) == []


@KERNEL
def test_as_shipped_every_check_cell_says_not_passed_in_words(forks, tmp_path):
    """The exercise cells alone (no chapter's training): the starters untouched, every check reports in words."""
    nb = notebook_run.exercises_only([n for n in NAMES if n != notebook_pages.TOUR_NAME])
    notebook_run.execute(nb, tmp_path, notebook_run.kernel_env(tmp_path), forks)
    checks = [c for c in nb.cells if "course.check(" in c.source]
    from seqlab import course

    assert len(checks) == len(course.exercises())
    for cell in checks:
        text = notebook_run.outputs_text(cell)
        assert ": not passed. On case 1 of" in text and "Traceback" not in text, text
        assert all(o.output_type != "error" for o in cell.outputs)


def test_course_list_shows_each_notebook_with_its_measured_times(seqlab_cli):
    code, out, err = seqlab_cli("course", "list")
    assert code == 0 and not err
    rows = [line.split("\t") for line in out.splitlines() if not line.startswith("#")]
    assert [r[0] for r in rows] == NAMES
    recorded = json.loads((notebook_pages.OUT / "recorded.json").read_text(encoding="utf-8"))
    for name, tiny, documented, title in rows:
        for size, shown in (("tiny", tiny), ("documented", documented)):
            seconds = (recorded[name][size] or {}).get("seconds")
            assert shown.startswith(f"{size}: ") and (("not measured yet" in shown) == (seconds is None)), shown
        assert title
    assert rows[3][3] == "3. Recurrent networks: RNN, GRU and LSTM"


def test_course_get_writes_the_notebooks_and_never_over_an_edited_copy(seqlab_cli, tmp_path):
    folder = tmp_path / "deep" / "course"
    code, out, err = seqlab_cli("course", "get", "3", "--dir", folder)
    assert code == 0 and out.startswith("wrote\t") and [p.name for p in folder.iterdir()] == [
        "03-recurrent-networks.ipynb"]
    shipped = (notebook_pages.OUT / "03-recurrent-networks.ipynb").read_bytes()
    assert (folder / "03-recurrent-networks.ipynb").read_bytes() == shipped
    code, out, err = seqlab_cli("course", "get", "all", "--dir", folder)
    assert code == 0 and out.count("wrote\t") == 7 and out.count("unchanged\t") == 1
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.ipynb" for n in NAMES)
    edited = folder / "tour.ipynb"  # the learner's edits, saved as Jupyter saves them
    doc = json.loads(edited.read_text(encoding="utf-8"))
    doc["cells"][1]["source"] = ["print('mine')\n"]
    edited.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = seqlab_cli("course", "get", "all", "--dir", folder)
    assert code == 2 and not out and err.startswith("error: ") and err.count("\n") == 1 and "--force" in err
    assert "print('mine')" in edited.read_text(encoding="utf-8")
    code, out, err = seqlab_cli("course", "get", "tour", "--dir", folder, "--force")
    assert code == 0 and out.startswith("replaced\t") and edited.read_bytes() == (
        notebook_pages.OUT / "tour.ipynb").read_bytes()
    edited.write_text('{"cells": [], "metadata": {}}', encoding="utf-8")  # a notebook of the learner's own
    code, out, err = seqlab_cli("course", "get", "tour", "--dir", folder, "--force")
    assert code == 2 and "seqlab did not write" in err and err.count("\n") == 1
    for args in (("99",), ("zero",), ("all", "--dir", edited)):
        code, out, err = seqlab_cli("course", "get", *args)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (args, err)
