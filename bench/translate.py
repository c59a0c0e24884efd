"""Translation quality: train a preset on Multi30k, report detokenised test2016 BLEU against a reference figure.

    .venv/bin/python bench/translate.py --arch transformer --minutes 60            # the full benchmark
    .venv/bin/python bench/translate.py --arch seq2seq-attention --steps 200 --test-lines 200 --beam 1   # short

Trains ``mt-transformer`` or ``mt-gru-attention`` (German -> English by default, ``--direction en-de`` for
the reverse) on ../shared/data/multi30k (train / val / test = test2016) for ``--steps`` optimiser steps or
``--minutes`` of training, whichever comes first, then translates the first ``--test-lines`` test sentences
(all 1,000 by default) with beam search and scores them with seqlab's sacreBLEU-identical corpus BLEU
(13a, detokenised hypotheses against the raw references; signature printed).

Reference figure: ``--reference`` (default 30.0, issue 5's target for the Transformer on Multi30k de->en
test2016, sacreBLEU-compatible and detokenised). The last line is JSON with ``ratio`` = our BLEU / the
reference (above 1: the target is met). A short run (few steps, part of the test set) measures the pipeline,
not the model's quality: its BLEU is not comparable to the reference. A run cut off mid-training (a killed
process, the end of a session) resumes from its last checkpoint when the same command runs again
(bench/common.py ``train_resumable``), its minutes adding up the tries.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_line, device_name, note_line, train_resumable, write_section  # noqa: E402

PRESETS = {"transformer": "mt-transformer", "seq2seq-attention": "mt-gru-attention"}
DATA = ROOT.parent / "shared" / "data" / "multi30k"


def sacrebleu_score(hyps: list[str], refs: list[str]) -> dict | None:
    """sacreBLEU's own corpus BLEU of the same hypotheses (a cross-check), when the package is installed."""
    try:
        import sacrebleu
    except ImportError:
        return None
    bleu = sacrebleu.BLEU()
    return {"score": bleu.corpus_score(hyps, [refs]).score, "signature": str(bleu.get_signature())}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=list(PRESETS), default="transformer")
    parser.add_argument("--direction", choices=["de-en", "en-de"], default="de-en")
    parser.add_argument("--steps", type=int, default=0, help="optimiser steps (0 = the preset's max_steps)")
    parser.add_argument("--minutes", type=float, default=60.0, help="training time budget")
    parser.add_argument("--batch-size", type=int, default=0, help="0 = the preset's batch size")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--test-lines", type=int, default=0, help="translate only the first N test sentences (0 = all)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = PyTorch's default)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with {train,val,test}.{de,en}")
    parser.add_argument("--reference", type=float, default=30.0, help="reference BLEU for the ratio")
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/bench-mt-ARCH-DIR)")
    parser.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    parser.add_argument("--note", default="", help="a sentence added to the section (how the run went)")
    args = parser.parse_args(argv)

    from seqlab import api
    from seqlab.tasks import resolve
    from seqlab.data.parallel import read_splits
    from seqlab.metrics.bleu import corpus_bleu
    src, tgt = args.direction.split("-")
    overrides = [f"data.train={args.data / 'train'}", f"data.valid={args.data / 'val'}",
                 f"data.test={args.data / 'test'}", f"data.src={src}", f"data.tgt={tgt}",
                 f"train.max_minutes={args.minutes}", f"train.threads={args.threads}", f"train.device={args.device}"]
    if args.steps:
        overrides.append(f"train.max_steps={args.steps}")
    if args.batch_size:
        overrides.append(f"train.batch_size={args.batch_size}")
    cfg = resolve(PRESETS[args.arch], overrides)
    run_dir = args.out or ROOT / "runs" / f"bench-mt-{args.arch}-{args.direction}"

    train_minutes, _ = train_resumable(cfg, run_dir, overrides + [f"arch={args.arch}"])  # a cut-off run resumes
    steps = json.loads((run_dir / "state.json").read_text())["step"]

    model = api.load(run_dir, device=None if args.device == "auto" else args.device)
    test = read_splits(cfg.data, ("test",))["test"]
    n = args.test_lines or len(test)
    started = time.perf_counter()
    hyps = [r["translation"] for r in model.predict(test.src[:n], beam=args.beam)]
    decode_seconds = time.perf_counter() - started
    score = corpus_bleu(hyps, [test.tgt[:n]])
    (run_dir / "test.hyp").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")  # for error analysis
    peer = sacrebleu_score(hyps, test.tgt[:n])

    row = {"arch": args.arch, "direction": args.direction, "steps": steps, "train_minutes": round(train_minutes, 2),
           "test_sentences": n, "beam": args.beam, "bleu": score.score, "signature": score.signature,
           "decode_seconds": round(decode_seconds, 1), "reference": args.reference, "sacrebleu": peer,
           "ratio": score.score / args.reference}
    if not args.no_results:
        full = "full test2016" if n == len(test) else f"first {n} of {len(test)} test2016 sentences"
        write_section(f"translate-{args.arch}-{args.direction}", "\n".join([
            f"## Translation: {args.arch} ({PRESETS[args.arch]}), Multi30k {args.direction}",
            "",
            "| steps | training (min) | test | beam | BLEU | reference | decoding (s) |",
            "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
            f"| {steps} | {train_minutes:.1f} | {full} | {args.beam} | {score.score:.2f} | {args.reference:g} | "
            f"{decode_seconds:.0f} |",
            "",
            f"BLEU signature: `{score.signature}` (detokenised hypotheses vs raw references). Reference: issue 5's "
            "target for the Transformer on de->en test2016"
            + (". " if args.direction == "de-en" else " (the issue sets none for en->de). ")
            + (f"sacreBLEU itself on the same hypotheses (kept in the run directory as test.hyp): {peer['score']:.2f}, "
               f"`{peer['signature']}`. " if peer else "")
            + ("" if n == len(test) and steps >= cfg.train.max_steps else
               "This is a short run (fewer steps or sentences than the full benchmark): it checks the pipeline, "
               "its BLEU is not comparable to the reference. ")
            + f"Trained on: {device_name()}. CPU: {cpu_line()}." + note_line(args.note),
        ]))
    print(json.dumps(row))
    return row


if __name__ == "__main__":
    main()
