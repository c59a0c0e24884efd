"""`seqlab demo`: the main job in one command.

Trains a small character-level Transformer LM on an embedded corpus (no network, no GPU needed) within a time
budget, with a plan that this machine's speed chooses, then prints the test perplexity of its best checkpoint
next to the unigram and bigram baselines on the same characters (and the same on the validation split, which
chose the checkpoint), prints a generated sample, and writes runs/demo/plots/loss.png and
runs/demo/plots/attention.png. It always replaces runs/demo/.

The plan (:func:`seqlab.tasks.demo_plan.plan`) is a pure function of the measured steps per second, the budget
and the corpora's sizes, from measurements (bench/demo_scaling.py, every threshold chosen on the validation split): a machine
that trains few steps gets a smaller model, one that trains more gets the larger model, then more text, then
dropout, and never more passes over the same text than were measured to help.

The budget is spent whatever the load. A probe of a few seconds measures the speed, and other work on the
cores may start or stop after it. So the plan fixes what the speed chooses (model size, corpus, dropout) and
the demo trains with ``train.schedule = "wsd-time"``: the schedule's position is the larger of the step and the
share of the budget spent (:func:`seqlab.training.optim.clock_position`), so its decay starts four fifths into the budget
and the run ends, decayed, when the budget does, however fast the steps came, at most MAX_STEPS. Chosen over
re-measuring the speed and re-planning the length: the time clock needs no second measure and cannot be
fooled by one, and a re-plan could not change the model's size mid-run anyway. ``--steps N`` keeps the clock
of steps (exact and reproducible: the benchmark of the plans). A core that other work keeps busy stalls every
parallel operation of the thread that shares it, so where cores are busy (:func:`free_threads`) the probe also
times fewer threads, and the faster count trains (:func:`fastest_threads`).
"""

from __future__ import annotations

from seqlab.commands import add_parser
from seqlab.tasks.demo_plan import CORPORA, DEMO_OVERRIDES, SIZES, Plan, baselines, plan, plan_steps, size_overrides, \
    train_chars


def add(sub):
    p = add_parser(sub, "demo", "train a small Transformer LM on an embedded corpus, report perplexity, generate",
                   "seqlab demo --minutes 2",
                   description=" ".join(__doc__.split("\n\n")[1:3]).replace("\n", " "))
    p.add_argument("--corpus", default="auto", choices=["auto", *CORPORA, "pystdlib"],
                   help="embedded corpus (default auto: the plan chooses pydocs or pyprose by this machine's speed)")
    p.add_argument("--minutes", type=float, default=4.0, help="training time budget (default 4)")
    p.add_argument("--steps", type=int, default=0,
                   help="the plan of a machine that trains this many steps of the probe's model in --minutes, "
                        "trained to the plan's steps (more for a smaller, faster model) with no time budget "
                        "(default 0: this machine's plan, measured on a few steps first, trained for --minutes)")
    p.add_argument("--out", default="runs/demo", help="run directory, always replaced (default runs/demo)")
    p.add_argument("--prompt", default=None, help="prompt for the sample (default: a sentence of the test split)")
    p.set_defaults(run=run)


def run(args) -> int:
    import sys
    import time
    from pathlib import Path

    from seqlab.api import Interrupted, load, train_run
    from seqlab.base.errors import SeqlabError
    from seqlab.training.optim import probe_rate

    if args.minutes <= 0 or args.steps < 0:
        raise SeqlabError("--minutes must be > 0 and --steps >= 0")

    def log(*a, **k):
        print(*a, **{"file": sys.stderr, **k})

    def rate_on(threads: int) -> float:  # a few steps of the largest size on ``threads``
        def probe(extra: list[str], run_dir: Path) -> None:
            config = [*DEMO_OVERRIDES, "data.source=pydocs", *size_overrides(SIZES[0]), f"train.threads={threads}",
                      *extra]
            train_run("lm-char", run_dir, overrides=config, force=True, log=lambda *a, **k: None)

        return probe_rate(probe, Path(args.out))

    chars = {c: train_chars(c) for c in ({*CORPORA, args.corpus} - {"auto"})}
    threads = []  # train.threads, where fewer threads than PyTorch's default were measured too
    if args.steps:  # these steps, on the clock of steps (a benchmark of the plan: bench/demo_scaling.py)
        chosen, minutes = plan_steps(args.steps, chars, args.corpus), 0.0
    else:
        default = default_threads()
        best, rates = fastest_threads(rate_on, default, free_threads())
        rate, threads = rates[best], [f"train.threads={best}"] if len(rates) > 1 else []
        chosen, minutes = plan(rate, args.minutes, chars, args.corpus), args.minutes
        note = (f" on {best} thread{'s' if best > 1 else ''} ({rates[default]:.1f} on {default}: other work keeps "
                f"cores busy)" if best != default else "")
        log(f"demo: {rate:.1f} steps/s on this machine{note}; {chosen.affordable:,} steps fit {args.minutes:g} min; "
            "the schedule's decay follows the clock, to end with the budget")
    log(chosen.describe())
    overrides = [*DEMO_OVERRIDES, *chosen.overrides(minutes), *threads]

    t0 = time.perf_counter()
    try:
        run_dir = train_run("lm-char", args.out, overrides=overrides, force=True, log=log)
    except Interrupted as e:
        log(str(e))
        return e.exit_code
    minutes = (time.perf_counter() - t0) / 60
    report(load(run_dir), chosen, minutes, args.prompt)
    return 0


def default_threads() -> int:
    """PyTorch's intra-op threads in this process (what ``train.threads = 0`` leaves)."""
    import torch

    return torch.get_num_threads()


def free_threads(seconds: float = 0.5, stat: str = "/proc/stat") -> int:
    """Fewer threads than PyTorch's default for a machine whose cores other processes keep busy: its default
    less the cores busy over ``seconds`` (from /proc/stat, rounded; at least 1), or 0 where they are all free or
    it cannot be read. Measured on a 2-core Xeon with one core kept busy by a Python loop: the demo's model
    trains at 1.0 steps/s on 2 threads, 6.8 on 1 (9.9 on 2 when idle), as every parallel operation waits for
    the thread that shares its core."""
    import os
    import time

    def jiffies() -> tuple[int, int]:  # (all, idle + iowait) over every CPU since boot
        with open(stat, encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
        return sum(fields), fields[3] + fields[4]

    try:
        (total0, idle0), _ = jiffies(), time.sleep(seconds)
        total1, idle1 = jiffies()
    except (OSError, ValueError, IndexError):
        return 0
    busy = round(os.cpu_count() * (1 - (idle1 - idle0) / max(1, total1 - total0)))
    default = default_threads()
    return max(1, default - busy) if busy and default > 1 else 0


def fastest_threads(rate_on, default: int, fewer: int) -> tuple[int, dict[int, float]]:
    """The threads to train on, and the steps per second ``rate_on(threads)`` measured: ``default``, or
    ``fewer`` (:func:`free_threads`; 0: not tried) where it was measured faster."""
    rates = {default: rate_on(default)}
    if fewer and fewer != default:
        rates[fewer] = rate_on(fewer)
    return max(rates, key=rates.get), rates


def report(lm, chosen: Plan, minutes: float, prompt: str | None) -> None:
    """What the demo prints once trained: the test and validation blocks, the checkpoint, a sample, the plots."""
    from pathlib import Path

    from seqlab.api import load
    from seqlab.data.lm_tokens import load_splits
    from seqlab.views.viz import plot_attention

    run_dir = lm.run_dir
    final = lm.checkpoint if lm.checkpoint["dir"] == str(run_dir) else load(run_dir, last=True).checkpoint
    splits = load_splits(Path(run_dir))
    print(f"\ntrained {lm.config.model.n_layers}-layer, {lm.config.model.d_model}-wide Transformer "
          f"({lm.model.num_params() / 1e6:.2f}M parameters) on '{chosen.corpus}' characters in {minutes:.1f} min "
          f"-> {run_dir}")
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
