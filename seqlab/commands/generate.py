"""`seqlab generate RUN --prompt TEXT`: the prompt followed by its continuation."""

from seqlab.commands import add_last, add_parser


def add(sub):
    p = add_parser(sub, "generate", "continue a prompt with a trained language model",
                   'seqlab generate runs/demo --prompt "The " --max-new-tokens 200 --temperature 0.8 --top-p 0.95',
                   description="Greedy when --temperature is 0, sampling otherwise, beam search with --beam K "
                               "(which takes no sampling option); stops at <eos> where the tokenizer has one; uses "
                               "the KV cache. Prints the prompt and its continuation.")
    p.add_argument("run_dir", metavar="RUN")
    p.add_argument("--prompt", required=True)
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--temperature", type=float, default=None, help="0 = greedy (default 1.0)")
    p.add_argument("--top-k", type=int, default=None, help="keep the k most likely tokens (default 0 = off)")
    p.add_argument("--top-p", type=float, default=None, help="nucleus sampling threshold (default 1 = off)")
    p.add_argument("--beam", type=int, default=None, metavar="K",
                   help="beam search with K beams (K rows of the batched decode step; 1 = greedy) instead of sampling")
    p.add_argument("--alpha", type=float, default=None,
                   help="beam search's GNMT length penalty ((5 + |Y|) / 6) ** alpha (default 0.6, as translation)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the decode step (2-4x faster per token, by CPU, after a 10-40 s compile)")
    p.add_argument("--dtype", choices=("fp32", "bf16", "int8"), default="fp32",
                   help="weights of the linear layers: fp32 (default), bf16, or int8 with a scale per row; "
                        "fewer bytes per token to read, faster with --compile (seqlab.nn.weight_only)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--threads", type=int, default=0, metavar="N",
                   help="CPU threads (default 0: torch's default, every core). On cores that other jobs keep busy, "
                        "1 can be far faster: a decode op is ~0.1 ms, and a descheduled second thread costs a "
                        "time slice")
    add_last(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from seqlab.api import load

    lm = load(args.run_dir, device=args.device, last=args.last)
    if not hasattr(lm, "generate"):
        from seqlab.base.errors import SeqlabError

        raise SeqlabError(f"{args.run_dir} is a {lm.config.task.kind} run; `seqlab generate` needs a language model")
    lm.use_weight_dtype(args.dtype)
    text = lm.generate(args.prompt, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                       top_k=args.top_k, top_p=args.top_p, seed=args.seed, compile=args.compile, beam=args.beam,
                       alpha=args.alpha)
    print(args.prompt + text)
    return 0
