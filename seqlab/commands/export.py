"""`seqlab export RUN --format hf|onnx --out PATH [--force] [--last]`: a run in Hugging Face / ONNX formats."""

from seqlab.commands import add_parser


def add(sub):
    p = add_parser(sub, "export", "write a trained run in a format other tools load (Hugging Face, ONNX, word2vec)",
                   "seqlab export runs/char --format hf --out exports/char-hf",
                   description="--format hf: a language model as GPT2LMHeadModel (GPT-2-compatible runs), a "
                               "fine-tuned *-minilm tagger/classifier as BertForTokenClassification / "
                               "BertForSequenceClassification, each with tokenizer.json (a directory). "
                               "--format onnx: the model's forward pass as one .onnx file, checked with "
                               "onnxruntime (RUN may also be a BERT-style encoder directory or all-MiniLM-L6-v2: "
                               "sentence embeddings); needs pip install 'seqlab[export]'. Embedding runs: "
                               "--format word2vec (text) or word2vec-binary (gensim binary=True). Prints what "
                               "was written as one JSON object.")
    p.add_argument("run_dir", metavar="RUN")
    p.add_argument("--format", required=True, help="hf, onnx, word2vec or word2vec-binary")
    p.add_argument("--out", required=True, help="the directory (hf) or file (onnx, word2vec) to write")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out when it is a seqlab export (or another seqlab output); anything "
                        "else is refused")
    p.add_argument("--last", action="store_true", help="export the final checkpoint instead of the best one")
    p.set_defaults(run=run)


def run(args) -> int:
    import json

    from seqlab.exporters import export

    print(json.dumps(export(args.run_dir, args.format, args.out, force=args.force, last=args.last)))
    return 0
