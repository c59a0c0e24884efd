"""nanoGPT itself beside seqlab on nanoGPT's CPU configuration (tinyshakespeare, character level), over seeds.

A quality comparison, not a speed one: both models are scored on the WHOLE validation split (the last 10% of
tinyshakespeare's characters) the same way, by seqlab's :func:`seqlab.metrics.lm.score_stream` (non-overlapping
windows of 64, every character after the first scored once).

- nanoGPT: a checkout (``--nanogpt``, a folder or a git directory, by default the mirror) is extracted into a
  temporary folder, never modified; its ``data/shakespeare_char/prepare.py`` encodes the shared input.txt
  (copied in first, so it downloads nothing), and its README's CPU command trains for 2,000 iterations with
  ``--always_save_checkpoint=True`` so that the step-2000 model is kept. A tiny launcher runs train.py with
  ``torch.manual_seed``'s argument offset by the seed (nanoGPT seeds with ``1337 + seed_offset``) and the
  thread count pinned. The checkpoint is loaded with ``weights_only=True`` into nanoGPT's own ``GPT`` class;
  its own 20-batch estimate at step 2000 is read from its log.
- seqlab: bench/lm_quality.py's ``cpu`` run (the same configuration) with the same seed numbers and threads. Each
  run's row is printed as bench/lm_quality.py prints it, so ``lm_quality.py cpu --rows LOG --threads N`` writes
  that section from the same runs.

The two sides use different random streams, so rows pair by seed number only; the medians are the comparison.
Nothing of nanoGPT is stored in this repository.

    .venv/bin/python bench/lm_quality_nanogpt.py [--seeds 1,2,3] [--max-iters 2000] [--threads 2] [--nanogpt DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_line, verdict, write_section
from lm_quality import RUNS, SHARED, run_once

MIRROR = Path("/work/.mirror/karpathy+nanoGPT/repo")
README_CPU = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
              "--log_interval=1", "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4",
              "--n_embd=128", "--max_iters=2000", "--lr_decay_iters=2000", "--dropout=0.0"]  # nanoGPT README
EVAL_INTERVAL = 250  # config/train_shakespeare_char.py's; a step count it does not divide is never checkpointed
# python -c LAUNCHER SEED THREADS ARGS...: train.py unchanged, its torch.manual_seed(1337 + 0) offset by SEED
LAUNCHER = ("import runpy, sys, torch; seed, threads = int(sys.argv[1]), int(sys.argv[2]); "
            "torch.set_num_threads(threads); manual_seed = torch.manual_seed; "
            "torch.manual_seed = lambda s: manual_seed(s + seed); sys.argv = ['train.py', *sys.argv[3:]]; "
            "runpy.run_path('train.py', run_name='__main__')")
PEER = "nanoGPT train.py (README CPU command: fp32, compile=False)"


# ------------------------------------------------------------------------------------------------------
# nanoGPT's side


def git_commit(source: Path) -> str:
    """The commit of ``source`` (a git directory or a checkout), marked when a checkout has local changes."""
    head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=False)
    if head.returncode:
        return "not a git checkout"
    bare = subprocess.run(["git", "-C", str(source), "rev-parse", "--is-bare-repository"], capture_output=True,
                          text=True, check=False).stdout.strip() == "true"
    dirty = not bare and subprocess.run(["git", "--no-optional-locks", "-C", str(source), "status",
                                         "--porcelain"], capture_output=True,
                                        text=True, check=True).stdout.strip()
    return head.stdout.strip() + (" (with local changes)" if dirty else "")


def extract(source: Path, into: Path) -> Path:
    """A private copy of nanoGPT in ``into``/nanoGPT: ``git archive HEAD`` of a bare git directory, a copy of a
    checkout's files otherwise (its .git left out)."""
    target = into / "nanoGPT"
    if (source / "HEAD").is_file() and (source / "objects").is_dir():  # a bare git directory
        target.mkdir()
        archive = subprocess.run(["git", "-C", str(source), "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    else:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".git"))
    if not (target / "train.py").is_file():
        raise SystemExit(f"{source} holds no nanoGPT train.py")
    return target


def prepare_data(checkout: Path) -> None:
    """nanoGPT's own prepare.py on the shared input.txt (present, so prepare.py downloads nothing)."""
    folder = checkout / "data" / "shakespeare_char"
    shutil.copyfile(SHARED, folder / "input.txt")
    subprocess.run([sys.executable, "data/shakespeare_char/prepare.py"], cwd=checkout, check=True,
                   stdout=subprocess.DEVNULL)


def train_args(max_iters: int, out_dir: str) -> list[str]:
    """The README's CPU command with ``max_iters`` (and its decay) and the checkpoint kept at the last step."""
    args = [a for a in README_CPU if not a.startswith(("--max_iters=", "--lr_decay_iters="))]
    args += [f"--max_iters={max_iters}", f"--lr_decay_iters={max_iters}"]
    if max_iters % EVAL_INTERVAL:  # smoke runs only: evaluate (and save) at the last step too
        args.append(f"--eval_interval={max_iters}")
    return args + ["--always_save_checkpoint=True", f"--out_dir={out_dir}"]


def train_nanogpt(checkout: Path, seed: int, threads: int, max_iters: int) -> dict:
    """One nanoGPT run: its checkpoint at ``max_iters``, its own validation estimate there, the wall time."""
    out_dir = f"out-seed-{seed}"
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCHER, str(seed), str(threads), *train_args(max_iters, out_dir)],
                          cwd=checkout, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t
    log = done.stdout + done.stderr
    (checkout / f"train-seed-{seed}.log").write_text(log)
    if done.returncode:
        raise SystemExit(f"nanoGPT train.py failed (seed {seed}):\n{log[-3000:]}")
    found = re.search(rf"^step {max_iters}: train loss ([\d.]+), val loss ([\d.]+)$", log, re.MULTILINE)
    if not found:
        raise SystemExit(f"no 'step {max_iters}' evaluation in nanoGPT's log:\n{log[-3000:]}")
    return {"checkpoint": checkout / out_dir / "ckpt.pt", "estimate": float(found.group(2)),
            "minutes": round(seconds / 60, 2)}


def load_gpt(checkout: Path, checkpoint: Path):
    """nanoGPT's own GPT class (its model.py) with the checkpoint's weights (tensors and plain dicts only)."""
    import torch

    spec = importlib.util.spec_from_file_location("nanogpt_model", checkout / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    gpt = module.GPT(module.GPTConfig(**state["model_args"]))
    gpt.load_state_dict(state["model"])
    return gpt.eval(), state["iter_num"]


class AllLogits:
    """nanoGPT's GPT as score_stream calls a model: ``model(x)`` -> logits at every position. nanoGPT returns
    every position's logits only when given targets (the last position's otherwise), so x stands in for them;
    its loss is discarded."""

    def __init__(self, gpt):
        self.gpt = gpt

    def __call__(self, x):
        logits, _ = self.gpt(x, x)
        return logits


def score_nanogpt(checkout: Path, checkpoint: Path, max_len: int, valid: str) -> dict:
    """The validation loss of a nanoGPT checkpoint on seqlab's validation text ``valid``, by seqlab's
    score_stream on nanoGPT's own encoding (val.bin). nanoGPT's prepare.py cuts the split at int(0.9 n), seqlab
    at round(0.9 n), so val.bin may start a character earlier: that lead is dropped, and both sides score the
    same characters in the same windows."""
    import numpy as np
    import torch

    from seqlab.metrics.lm import score_stream

    gpt, step = load_gpt(checkout, checkpoint)
    if gpt.config.block_size != max_len:
        raise SystemExit(f"nanoGPT's block_size {gpt.config.block_size} is not seqlab's max_len {max_len}")
    text = (checkout / "data" / "shakespeare_char" / "input.txt").read_text(encoding="utf-8")
    theirs = text[int(len(text) * 0.9):]  # what prepare.py encodes into val.bin
    tokens = np.fromfile(checkout / "data" / "shakespeare_char" / "val.bin", dtype=np.uint16).astype(np.int64)
    lead = len(theirs) - len(valid)
    if len(tokens) != len(theirs) or lead < 0 or theirs[lead:] != valid:
        raise SystemExit("seqlab's validation text is not the end of nanoGPT's val.bin")
    total, count = score_stream(AllLogits(gpt), tokens[lead:], max_len, 64, torch.device("cpu"))
    return {"step": step, "valid_loss": round(total / count, 4), "tokens": count, "lead": lead}


# ------------------------------------------------------------------------------------------------------
# seqlab's side


def seqlab_valid_text(run_dir: Path) -> str:
    """The text of a seqlab run's validation split (its token stream decoded)."""
    import seqlab
    from seqlab.data.lm_tokens import load_splits

    return seqlab.load(run_dir, last=True).tokenizer.decode(load_splits(run_dir)["valid"])


def run_seqlab(seed: int, threads: int, max_iters: int, out: Path) -> dict:
    """bench/lm_quality.py's ``cpu`` run for ``seed``; ``valid_loss`` there is the best checkpoint's."""
    return run_once("cpu", 0.0, out, seed, seqlab_extra(threads, max_iters), resume=False)


def seqlab_extra(threads: int, max_iters: int) -> list[str]:
    """The overrides on top of lm_quality.py's ``cpu`` run: the threads, and the steps of a smoke run."""
    return [f"train.threads={threads}"] + ([f"train.max_steps={max_iters}"] if max_iters != 2000 else [])


# ------------------------------------------------------------------------------------------------------
# the section


def report(rows: list[dict], commit: str, command: str, threads: int, max_iters: int) -> str:
    table = "\n".join(
        f"| {r['seed']} | {r['nanogpt']['estimate']:.4f} | {r['nanogpt']['valid_loss']:.4f} | "
        f"{r['seqlab']['final_valid_loss']:.4f} | {r['seqlab']['valid_loss']:.4f} (step {r['seqlab']['best_step']}) | "
        f"{r['nanogpt']['minutes']} | {r['seqlab']['minutes']} |" for r in rows)
    med = {k: statistics.median(values) for k, values in columns(rows).items()}
    counts = sorted({r["nanogpt"]["tokens"] for r in rows})
    lead = max(r["nanogpt"]["lead"] for r in rows)
    return f"""## nanoGPT itself beside seqlab, nanoGPT's CPU configuration (bench/lm_quality_nanogpt.py)

CPU: {cpu_line()}; {threads} threads on both sides (`torch.set_num_threads({threads})`, `OMP_NUM_THREADS={threads}`),
fp32 on both sides. karpathy/nanoGPT at commit `{commit}`, extracted into a temporary folder and run unchanged
(nothing of nanoGPT is in this repository): its `data/shakespeare_char/prepare.py` on the shared
tinyshakespeare input.txt (90/10 split), then its README's CPU command (bias=False, its default), with
`--always_save_checkpoint=True` so that the step-{max_iters} model is kept:

`{command}`

launched as `python -c LAUNCHER SEED {threads} ARGS...`, which runs train.py through `runpy` after pinning the
threads and offsetting `torch.manual_seed`'s argument by SEED (train.py seeds with `1337 + seed_offset`):
`{LAUNCHER}`.
seqlab: bench/lm_quality.py's `cpu` run, `{' '.join(RUNS['cpu'] + seqlab_extra(threads, max_iters))}`
with `train.seed=SEED` (90/10 split, character level).

Both step-{max_iters} models are scored on the whole validation split the same way, by seqlab's `score_stream`
(non-overlapping windows of 64, every character after the first scored once: {', '.join(f'{c:,}' for c in counts)}
characters; nanoGPT's checkpoint loaded with `weights_only=True` into its own `GPT` class, its logits at every
position, on its own encoding, val.bin). {f"nanoGPT's prepare.py cuts the split at int(0.9 n), seqlab at round(0.9 n): val.bin's first {lead} character{'s' if lead > 1 else ''} {'are' if lead > 1 else 'is'} left out, so that both sides score the same text in the same windows (checked equal to seqlab's validation split)." if lead else "val.bin holds the same text as seqlab's validation split (checked)."}
The two sides draw different random streams, so rows pair by seed number only; compare the medians.

| seed | nanoGPT's own estimate (20 batches, step {max_iters}) | nanoGPT, whole split | seqlab, whole split (step {max_iters}) | seqlab's best checkpoint, whole split | nanoGPT wall min | seqlab wall min |
|---|---|---|---|---|---|---|
{table}
| **median** | **{med['estimate']:.4f}** | **{med['nanogpt']:.4f}** | **{med['seqlab']:.4f}** | **{med['seqlab_best']:.4f}** | {med['nanogpt_minutes']} | {med['seqlab_minutes']} |

Target: none. nanoGPT's README gives "about 1.88" for its 20-batch estimate of one run; this section is its
figure under seqlab's whole-split measure, which bench/lm_quality.py's `cpu` section refers to. Here the median
whole-split loss is {med['seqlab']:.4f} for seqlab and {med['nanogpt']:.4f} for nanoGPT (lower is better;
ratio nanoGPT / seqlab {med['nanogpt'] / med['seqlab']:.3f}, above 1: seqlab better). Wall minutes: nanoGPT's
train.py process (start-up and its periodic evaluations included; prepare.py ran once before), seqlab's
`seqlab.train` (its data preparation and periodic evaluations included); neither includes the whole-split
scoring. The schedules are in steps, so the losses do not depend on the machine's load."""


def columns(rows: list[dict]) -> dict[str, list[float]]:
    """Each table column's figures over the seeds."""
    return {"estimate": [r["nanogpt"]["estimate"] for r in rows],
            "nanogpt": [r["nanogpt"]["valid_loss"] for r in rows],
            "seqlab": [r["seqlab"]["final_valid_loss"] for r in rows],
            "seqlab_best": [r["seqlab"]["valid_loss"] for r in rows],
            "nanogpt_minutes": [r["nanogpt"]["minutes"] for r in rows],
            "seqlab_minutes": [r["seqlab"]["minutes"] for r in rows]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nanogpt", type=Path, default=MIRROR, help="a nanoGPT checkout or git directory (never modified)")
    ap.add_argument("--seeds", default="1,2,3", help="comma-separated seeds, one run of each side per seed")
    ap.add_argument("--max-iters", type=int, default=2000, help="training steps on both sides (2000; less for smoke runs)")
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads on both sides")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    max_len = next(int(o.split("=")[1]) for o in RUNS["cpu"] if o.startswith("model.max_len="))
    seeds = [int(s) for s in args.seeds.split(",")]
    commit = git_commit(args.nanogpt)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lm-quality-nanogpt-") as scratch:
        checkout = extract(args.nanogpt, Path(scratch))
        prepare_data(checkout)
        for seed in seeds:  # the two sides alternate, so that a change in the machine's load touches both
            nanogpt = train_nanogpt(checkout, seed, args.threads, args.max_iters)
            run_dir = Path(scratch) / f"seqlab-seed-{seed}"
            seqlab_row = run_seqlab(seed, args.threads, args.max_iters, run_dir)
            print(json.dumps(seqlab_row), file=sys.stderr)  # lm_quality.py's row: `lm_quality.py cpu --rows LOG`
            nanogpt.update(score_nanogpt(checkout, nanogpt.pop("checkpoint"), max_len, seqlab_valid_text(run_dir)))
            if nanogpt["step"] != args.max_iters or seqlab_row["steps"] != args.max_iters:
                raise SystemExit(f"the models are not both at step {args.max_iters}: {nanogpt}, {seqlab_row}")
            rows.append({"seed": seed, "nanogpt": nanogpt, "seqlab": {k: v for k, v in seqlab_row.items() if k != "curve"}})
            print(json.dumps(rows[-1]), file=sys.stderr)
    command = shlex.join(["python", "train.py", *train_args(args.max_iters, "out-seed-SEED")])
    write_section("lm_quality_nanogpt", report(rows, commit, command, args.threads, args.max_iters))
    cols = columns(rows)
    seqlab_name = f"seqlab lm_quality cpu (fp32, {args.threads} threads)"
    peer_name = f"{PEER}, {args.threads} threads"
    result = verdict({seqlab_name: statistics.median(cols["seqlab"])}, {peer_name: statistics.median(cols["nanogpt"])},
                     higher_is_better=False)
    print(json.dumps({"bench": "lm_quality_nanogpt", **result, "seeds": seeds, "max_iters": args.max_iters,
                      "threads": args.threads, "nanogpt_commit": commit,
                      "medians": {k: statistics.median(v) for k, v in cols.items()}, "cpu": cpu_line(), "runs": rows}))


if __name__ == "__main__":
    main()
