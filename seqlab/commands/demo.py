"""`seqlab demo`: the main job in one command.

Trains a small character-level Transformer LM on an embedded corpus (no network, no GPU needed)
within a time budget, then prints the validation perplexity of its best checkpoint next to the
unigram and bigram baselines on the same split, prints a generated sample, and writes
runs/demo/plots/loss.png and runs/demo/plots/attention.png. It always replaces runs/demo/.
"""

from seqlab.commands import add_parser

# The model and schedule that gave the lowest validation loss in the 4-minute budget (bench/RESULTS.md, "make demo
# quality"): 3 layers of width 192 (0.72x the steps of 4 layers of 128, a lower minimum), and the warm-up, stable,
# decay schedule, whose short final decay to a low rate gains most in this budget (cosine decays all the way).
DEMO_OVERRIDES = [
    "model.n_layers=3", "model.n_heads=4", "model.d_model=192", "model.d_ff=768", "model.max_len=128",
    "train.batch_size=32", "train.warmup_steps=100", "train.lr=3e-3", "train.min_lr=2e-5", "train.schedule=wsd",
    "train.eval_every=250", "train.save_every=500", "train.eval_batches=10", "train.patience=4",
]


def add(sub):
    p = add_parser(sub, "demo", "train a small Transformer LM on an embedded corpus, report perplexity, generate",
                   "seqlab demo --minutes 2",
                   description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--corpus", default="pydocs", help="embedded corpus: pydocs (English prose) or pystdlib (Python)")
    p.add_argument("--minutes", type=float, default=4.0, help="training time budget (default 4)")
    p.add_argument("--steps", type=int, default=0,
                   help="training steps, the length of the learning-rate schedule (default 0: as many as this "
                        "machine trains in --minutes, measured on a few steps first)")
    p.add_argument("--out", default="runs/demo", help="run directory, always replaced (default runs/demo)")
    p.add_argument("--prompt", default=None, help="prompt for the sample (default: a line from the corpus)")
    p.set_defaults(run=run)


def run(args) -> int:
    import sys
    import time
    from pathlib import Path

    from seqlab.api import Interrupted, load, train
    from seqlab.errors import SeqlabError
    from seqlab.metrics.lm import ngram_nll, perplexity
    from seqlab.optim import fit_steps
    from seqlab.tasks import resolve
    from seqlab.data.lm_tokens import load_splits
    from seqlab.viz import plot_attention

    if args.minutes <= 0 or args.steps < 0:
        raise SeqlabError("--minutes must be > 0 and --steps >= 0")
    overrides = [*DEMO_OVERRIDES, f"data.source={args.corpus}", f"train.max_minutes={args.minutes}"]

    def log(*a, **k):
        print(*a, **{"file": sys.stderr, **k})

    def probe(extra: list[str], run_dir: Path) -> None:  # a few steps of the same run, timed by fit_steps
        train(resolve("lm-char", [*overrides, *extra]), run_dir, force=True, log=lambda *a, **k: None)

    steps = args.steps or fit_steps(probe, args.minutes, Path(args.out), log)
    cfg = resolve("lm-char", [*overrides, f"train.max_steps={steps}"])

    t0 = time.perf_counter()
    try:
        run_dir = train(cfg, args.out, force=True, log=log)
    except Interrupted as e:
        log(str(e))
        return e.exit_code
    minutes = (time.perf_counter() - t0) / 60

    lm = load(run_dir)  # the best checkpoint (best validation loss)
    final = lm.checkpoint if lm.checkpoint["dir"] == str(run_dir) else load(run_dir, last=True).checkpoint
    splits = load_splits(Path(run_dir))
    vocab = lm.tokenizer.vocab_size
    result = lm.evaluate("valid")
    rows = [("seqlab Transformer", result["loss"], result["perplexity"])]
    for order, name in ((1, "unigram (add-one)"), (2, "bigram (add-one)")):
        total, count = ngram_nll(splits["train"], splits["valid"], order, vocab)
        rows.append((name, total / count, perplexity(total, count)))

    print(f"\ntrained {lm.config.model.n_layers}-layer Transformer ({lm.model.num_params() / 1e6:.2f}M parameters) "
          f"on '{args.corpus}' characters in {minutes:.1f} min -> {run_dir}")
    print(f"validation split: {result['tokens']:,} scored characters\n")
    print(f"{'model':<20} {'loss (nats)':>12} {'perplexity':>11}")
    for name, loss, ppl in rows:
        print(f"{name:<20} {loss:>12.4f} {ppl:>11.3f}")
    stop = (f"; stopped early at step {final['step']} (train.patience)" if final.get("stopped_early")
            else f"; trained to step {final['step']}")
    print(f"checkpoint: step {lm.checkpoint['step']}, the best validation loss{stop}")

    text = load_text_prompt(lm, splits) if args.prompt is None else args.prompt
    sample = lm.generate(text, max_new_tokens=300, temperature=0.8, top_k=0, top_p=0.95, seed=0)
    print(f"\nsample (temperature 0.8, top-p 0.95), prompt {text!r}:\n{text}{sample}\n")

    tokens, layers = lm.attention(attention_text(lm, splits))
    last = layers[-1]
    maps = [last[h].numpy() for h in range(last.shape[0])]
    attention_png = plot_attention(tokens, tokens, maps, Path(run_dir) / "plots" / "attention.png",
                                   titles=[f"last layer, head {h}" for h in range(last.shape[0])], cols=2)
    print(f"plots: {Path(run_dir) / 'plots' / 'loss.png'}  {attention_png}")
    return 0


def attention_text(lm, splits) -> str:
    """A short sentence of the test split (24 to 40 characters), long enough to read in the heatmaps."""
    text = lm.tokenizer.decode(splits["test"][:20000].tolist())
    for line in text.splitlines()[1:]:
        for sentence in line.strip().split(". "):
            if 24 <= len(sentence) <= 40 and sentence[0].isupper():
                return sentence.rstrip(".") + "."
    return "The value is returned as a string."


def load_text_prompt(lm, splits) -> str:
    """The first line of the test split that starts with a capital letter: a natural prompt."""
    text = lm.tokenizer.decode(splits["test"][:4000].tolist())
    for line in text.splitlines()[1:]:
        line = line.strip()
        if len(line) > 20 and line[0].isupper():
            return line.split(" ")[0] + " "
    return "The "
