"""`seqlab demo`: the main job in one command.

Trains a small character-level Transformer LM on an embedded corpus (no network, no GPU needed) within a time
budget, with a plan that this machine's speed chooses, then prints the test perplexity of its best checkpoint
next to the unigram and bigram baselines on the same characters (and the same on the validation split, which
chose the checkpoint), prints a generated sample, and writes runs/demo/plots/loss.png and
runs/demo/plots/attention.png. It always replaces runs/demo/.

The plan (:func:`plan`) is a pure function of the measured steps per second, the budget and the corpora's
sizes, from measurements (bench/demo_scaling.py): a machine that trains more steps gets more text, then
dropout, and never more passes over the same text than were measured to help.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqlab.commands import add_parser

# The model and schedule: of eleven 4-minute trials on pydocs (an earlier version's "make demo quality", chosen by
# validation loss; bench/demo_scaling.py now reports the demo on held-out test characters), 3 layers of width 192
# (0.72x the steps of 4 layers of 128, a lower minimum) and the warm-up, stable, decay schedule, whose short final
# decay to a low rate gains most in this budget (cosine decays all the way).
DEMO_OVERRIDES = [
    "model.n_layers=3", "model.n_heads=4", "model.d_model=192", "model.d_ff=768", "model.max_len=128",
    "train.batch_size=32", "train.warmup_steps=100", "train.lr=3e-3", "train.min_lr=2e-5", "train.schedule=wsd",
    "train.eval_every=250", "train.save_every=500", "train.eval_batches=10",
]
TOKENS_PER_STEP = 32 * 128  # train.batch_size x model.max_len above: characters per optimiser step
CORPORA = ("pydocs", "pyprose")  # smallest first: the plan's "more text"

# The plan's thresholds, measured with this model and schedule at fixed step counts (bench/demo_scaling.py; the
# sweep that chose them ran 1,500-12,000 steps with dropout 0, 0.1 and 0.2; R = bigram / model test perplexity):
# - pydocs while a run makes at most PYDOCS_MAX_PASSES passes over it: at 1,500 steps (14.7 passes) pydocs gave
#   R 3.35 on its test split and pyprose 3.20 on the same characters; at 3,000 steps (29 passes) pydocs had
#   memorised (its best checkpoint was step 1,500, R 3.14) while pyprose gave 3.48 there.
# - no dropout up to DROPOUT_FROM_PASSES passes over pyprose (6,000 steps, 14.6 passes: R 4.09 without, 3.96
#   with 0.1); beyond, dropout 0.1 (12,000 steps, 29 passes: R 4.24 with 0.1, 3.94 without).
# - at most MAX_STEPS steps, the longest measured: a faster machine stops there, before its budget.
PYDOCS_MAX_PASSES = 20.0
DROPOUT_FROM_PASSES = 16.0
LATE_DROPOUT = 0.1
MAX_STEPS = 12_000


@dataclass(frozen=True)
class Plan:
    """What the demo trains: the corpus, the steps, the dropout, and why (passes over the corpus's train split)."""

    corpus: str
    steps: int
    dropout: float
    passes: float
    affordable: int  # the steps the budget allows at the measured rate (steps may be fewer: MAX_STEPS)

    def overrides(self) -> list[str]:
        return [f"data.source={self.corpus}", f"train.max_steps={self.steps}", f"model.dropout={self.dropout}"]

    def describe(self) -> str:
        capped = f" (capped from {self.affordable:,}: the longest plan measured)" if self.steps < self.affordable else ""
        return (f"plan: {self.steps:,} steps{capped} on '{self.corpus}', {self.passes:.1f} passes over its "
                f"training text, dropout {self.dropout:g}")


def plan(steps_per_s: float, minutes: float, train_chars: dict[str, int], corpus: str = "auto") -> Plan:
    """The demo's plan on a machine that trains ``steps_per_s`` (the probe's measure) for ``minutes``, given each
    corpus's training characters: :func:`plan_steps` of the steps that fit (:func:`seqlab.optim.budget_steps`)."""
    from seqlab.optim import budget_steps

    return plan_steps(budget_steps(steps_per_s, minutes), train_chars, corpus)


def plan_steps(affordable: int, train_chars: dict[str, int], corpus: str = "auto") -> Plan:
    """The demo's plan for ``affordable`` steps given each corpus's training characters: the smallest corpus of
    :data:`CORPORA` that the steps pass over at most PYDOCS_MAX_PASSES times (the largest otherwise), dropout
    beyond DROPOUT_FROM_PASSES passes, at most MAX_STEPS steps. ``corpus`` other than "auto" fixes the corpus."""
    steps = min(affordable, MAX_STEPS)
    if corpus == "auto":
        corpus = next((c for c in CORPORA if steps * TOKENS_PER_STEP / train_chars[c] <= PYDOCS_MAX_PASSES),
                      CORPORA[-1])
    passes = steps * TOKENS_PER_STEP / train_chars[corpus]
    return Plan(corpus, steps, LATE_DROPOUT if passes > DROPOUT_FROM_PASSES else 0.0, passes, affordable)


def train_chars(corpus: str) -> int:
    """The characters of an embedded corpus's train split (data.split's default)."""
    from seqlab.data.sources import read_text, split_points

    return split_points(len(read_text(corpus)))[0]


def add(sub):
    p = add_parser(sub, "demo", "train a small Transformer LM on an embedded corpus, report perplexity, generate",
                   "seqlab demo --minutes 2",
                   description=" ".join(__doc__.split("\n\n")[1:3]).replace("\n", " "))
    p.add_argument("--corpus", default="auto", choices=["auto", *CORPORA, "pystdlib"],
                   help="embedded corpus (default auto: the plan chooses pydocs or pyprose by this machine's speed)")
    p.add_argument("--minutes", type=float, default=4.0, help="training time budget (default 4)")
    p.add_argument("--steps", type=int, default=0,
                   help="train exactly this many steps, with no time budget, for the plan of a machine that trains "
                        "them in --minutes (default 0: as many as this machine trains in --minutes, measured on a "
                        "few steps first)")
    p.add_argument("--out", default="runs/demo", help="run directory, always replaced (default runs/demo)")
    p.add_argument("--prompt", default=None, help="prompt for the sample (default: a sentence of the test split)")
    p.set_defaults(run=run)


def run(args) -> int:
    import sys
    import time
    from pathlib import Path

    from seqlab.api import Interrupted, load, train_run
    from seqlab.errors import SeqlabError
    from seqlab.optim import probe_rate
    from seqlab.tasks import resolve

    if args.minutes <= 0 or args.steps < 0:
        raise SeqlabError("--minutes must be > 0 and --steps >= 0")

    def log(*a, **k):
        print(*a, **{"file": sys.stderr, **k})

    def probe(extra: list[str], run_dir: Path) -> None:  # a few steps of the same model, timed by probe_rate
        train_run(resolve("lm-char", [*DEMO_OVERRIDES, "data.source=pydocs", *extra]), run_dir, force=True,
                  log=lambda *a, **k: None)

    chars = {c: train_chars(c) for c in ({*CORPORA, args.corpus} - {"auto"})}
    if args.steps:  # exactly these steps (a benchmark of the plan: bench/demo_scaling.py)
        chosen, budget = plan_steps(args.steps, chars, args.corpus), []
    else:
        rate = probe_rate(probe, Path(args.out))
        chosen, budget = plan(rate, args.minutes, chars, args.corpus), [f"train.max_minutes={args.minutes}"]
        log(f"demo: {rate:.1f} steps/s on this machine; {chosen.affordable:,} steps fit {args.minutes:g} min")
    log(chosen.describe())
    cfg = resolve("lm-char", [*DEMO_OVERRIDES, *chosen.overrides(), *budget])

    t0 = time.perf_counter()
    try:
        run_dir = train_run(cfg, args.out, force=True, log=log)
    except Interrupted as e:
        log(str(e))
        return e.exit_code
    minutes = (time.perf_counter() - t0) / 60
    report(load(run_dir), chosen, minutes, args.prompt)
    return 0


def baselines(lm, split: str, splits: dict | None = None) -> list[tuple[str, float, float]]:
    """The model's (name, loss, perplexity) on ``split`` of its run, then the add-one unigram and bigram models
    (counted on the train split) on exactly the same characters. ``splits``: the run's token splits, if read."""
    from seqlab.data.lm_tokens import load_splits
    from seqlab.metrics.lm import ngram_nll, perplexity

    splits = load_splits(lm.run_dir) if splits is None else splits
    result = lm.evaluate(split)
    rows = [("seqlab Transformer", result["loss"], result["perplexity"])]
    for order, name in ((1, "unigram (add-one)"), (2, "bigram (add-one)")):
        total, count = ngram_nll(splits["train"], splits[split], order, lm.tokenizer.vocab_size)
        rows.append((name, total / count, perplexity(total, count)))
    return rows


def report(lm, chosen: Plan, minutes: float, prompt: str | None) -> None:
    """What the demo prints once trained: the test and validation blocks, the checkpoint, a sample, the plots."""
    from pathlib import Path

    from seqlab.api import load
    from seqlab.data.lm_tokens import load_splits
    from seqlab.viz import plot_attention

    run_dir = lm.run_dir
    final = lm.checkpoint if lm.checkpoint["dir"] == str(run_dir) else load(run_dir, last=True).checkpoint
    splits = load_splits(Path(run_dir))
    print(f"\ntrained {lm.config.model.n_layers}-layer Transformer ({lm.model.num_params() / 1e6:.2f}M parameters) "
          f"on '{chosen.corpus}' characters in {minutes:.1f} min -> {run_dir}")
    print(chosen.describe())
    for split, title in (("test", "test split"), ("valid", "validation split (it chose the checkpoint)")):
        print(f"\n{title}: {len(splits[split]) - 1:,} scored characters")
        print(f"{'model':<20} {'loss (nats)':>12} {'perplexity':>11}")
        for name, loss, ppl in baselines(lm, split, splits):
            print(f"{name:<20} {loss:>12.4f} {ppl:>11.3f}")
    stop = (f"; stopped early at step {final['step']} (train.patience)" if final.get("stopped_early")
            else f"; trained to step {final['step']}")
    print(f"checkpoint: step {lm.checkpoint['step']}, the best validation loss{stop}")

    text = prompt if prompt is not None else prose_prompt(lm, splits)
    sample = lm.generate(text, max_new_tokens=300, temperature=0.8, top_k=0, top_p=0.95, seed=0)
    print(f"\nsample (temperature 0.8, top-p 0.95), prompt {text!r}:\n{text}{sample}\n")

    tokens, layers = lm.attention(attention_text(lm, splits))
    last = layers[-1]
    maps = [last[h].numpy() for h in range(last.shape[0])]
    attention_png = plot_attention(tokens, tokens, maps, Path(run_dir) / "plots" / "attention.png",
                                   titles=[f"last layer, head {h}" for h in range(last.shape[0])], cols=2)
    print(f"plots: {Path(run_dir) / 'plots' / 'loss.png'}  {attention_png}")


def sentences(lm, splits, chars: int = 20000):
    """The sentences of the start of the test split: capitalised, ending with a full stop, of letters and
    common punctuation (no table or code line)."""
    import re

    text = lm.tokenizer.decode(splits["test"][:chars].tolist())
    for paragraph in re.split(r"\n\s*\n", text)[1:]:
        flat = " ".join(paragraph.split())
        for sentence in re.findall(r"[A-Z][a-z][^.!?|=*>#{}\[\]]*?[.]", flat):
            if re.fullmatch(r"[A-Za-z ,;:'()\-.]+", sentence):
                yield sentence


def attention_text(lm, splits) -> str:
    """A short sentence of the test split (24 to 40 characters), long enough to read in the heatmaps."""
    return next((s for s in sentences(lm, splits) if 24 <= len(s) <= 40), "The value is returned as a string.")


def prose_prompt(lm, splits) -> str:
    """The first words of a prose sentence of the test split (at least eight words): the sample continues
    English, not a table."""
    for sentence in sentences(lm, splits):
        words = sentence.split()
        if len(words) >= 8:
            return " ".join(words[:3]) + " "
    return "The "
