#!/usr/bin/env bash
# bench/gpu.sh: everything seqlab checks on a GPU, as one prepared script that fits in 12 minutes of device time.
#
#   1. the tests that need a CUDA device (`pytest -m device tests/test_device.py`),
#   2. `seqlab demo --minutes 2` (its run directory in /tmp; its printed output in $OUT/demo.txt),
#   3. bench/lm_throughput.py --device cuda (training step, seqlab vs HF GPT-2: SDPA, bf16, eager and compiled),
#   4. bench/generate.py --device cuda (greedy decoding, batch 1 and 8, vs HF static cache + CUDA graphs);
#   5. only when named (GPU_SH_PARTS=quality): bench/quality_rows.sh, the NER and SST-2 ablations of issue #39, nine
#      rows at once on the GPU, each fitted to GPU_SH_QUALITY_ROW_MIN minutes (default 6), from ./shared/data and
#      ./shared/vectors, which `bench/device_data.py` fills (the checkout's shared/: .git/info/exclude it, never
#      commit it); the row logs, metrics.jsonl files and stored rows go to $OUT/quality/. Seen: a 2-core CPU takes
#      0.49 s a step of ner-bilstm-crf (one thread), so the headline rows' 22,000 steps are for a GPU. Call it as
#      GPU_SH_PARTS=quality GPU_SH_BUDGET_S=585 GPU_SH_QUALITY_S=575 GPU_SH_QUALITY_ROW_MIN=6.5 bash bench/gpu.sh
#      and merge with `bench/gpu_merge.py --all` (the file holds only the two ablation sections).
#
# Run from the repository root: `bash bench/gpu.sh`. Writes to $OUT (default: a fresh temporary folder), at most
# 8 small files, none in a sub-folder: gpu.log (everything printed), RESULTS.gpu.md (the benches' sections, through
# SEQLAB_BENCH_RESULTS), tests.txt, lm_throughput.txt, generate.txt, demo.txt. Back here, merge the sections:
#   .venv/bin/python bench/gpu_merge.py PATH/RESULTS.gpu.md      (only the *-cuda sections; bench/RESULTS.md)
# Without a GPU (here, CI) it says so, runs the device tests (they skip), skips every GPU part, and exits 0.
#
# The device machine has no network: nothing is installed from an index. seqlab runs from this tree
# (PYTHONPATH=.), on the machine's own Python and CUDA torch; a missing package skips the parts that need it, with
# a line saying which. A wheelhouse, if the machine lacks a package, travels as ./wheels (named in the device
# call's `carry`; .git/info/exclude it, never commit it) and is installed first with --no-index. Build it here
# for the device's Python 3.12 on x86-64, e.g. for transformers (name every dependency the machine lacks too):
#   echo /wheels/ >> .git/info/exclude
#   .venv/bin/pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any -d wheels transformers==5.24.0
#
# Time: each part runs under `timeout` (seconds: GPU_SH_TESTS_S 180, GPU_SH_DEMO_S 160, GPU_SH_TRAIN_S 120,
# GPU_SH_GENERATE_S 240) and never past GPU_SH_BUDGET_S (700) from the start, so the last part gets what is left;
# a part that fails or times out is reported and the next one still runs. GPU_SH_PARTS (default
# tests,demo,train,generate) picks parts, e.g. to rerun one. Exit status: 0 when every part that ran passed (or
# there is no GPU).
# Seen on an H200 (2026-11-27, torch 2.11, transformers 5.17): the device tests' compiled-decoding case compiles for
# about 30 s a shape and ran past a 90 s cap; the generation bench's cold calls took 60 s (its timed rounds did not
# finish in 207 s); the demo 144 s and the training bench 67 s. Hence the caps above: start the call with at
# least 12 minutes of device time left, or name fewer parts (GPU_SH_PARTS).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$(mktemp -d -t seqlab-gpu-XXXXXX)}
mkdir -p "$OUT"
BUDGET=${GPU_SH_BUDGET_S:-700}
PARTS=${GPU_SH_PARTS:-tests,demo,train,generate}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export SEQLAB_BENCH_RESULTS="$OUT/RESULTS.gpu.md"
RUNS=${GPU_SH_RUNS:-/tmp/seqlab-gpu}  # run directories stay out of $OUT (it takes only a few files back)
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python  # this machine
else PY=python3; fi  # the device machine: its own Python, which holds its CUDA torch

failed=()
summary=()

# part NAME SECONDS LOGFILE COMMAND...: COMMAND under timeout (at most what is left of the budget), its output
# shown and kept in $OUT/LOGFILE; records pass / FAILED (rc) / TIMED OUT / skipped
part() {
  local name=$1 cap=$2 log=$3 left rc
  shift 3
  left=$((BUDGET - SECONDS))
  if [ "$left" -lt 20 ]; then
    echo "== $name: skipped, only ${left}s of the ${BUDGET}s budget left"
    summary+=("$name: skipped (budget spent)")
    return 0
  fi
  [ "$cap" -gt "$left" ] && cap=$left
  echo "== $name (at most ${cap}s): $*"
  local t0=$SECONDS
  set +e
  timeout --kill-after=10 "$cap" "$@" 2>&1 | tee "$OUT/$log"
  rc=${PIPESTATUS[0]}
  set -e
  local took=$((SECONDS - t0))
  if [ "$rc" -eq 0 ]; then
    summary+=("$name: passed (${took}s)")
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    summary+=("$name: TIMED OUT after ${took}s (cap ${cap}s)")
    failed+=("$name")
  else
    summary+=("$name: FAILED, exit ${rc} (${took}s)")
    failed+=("$name")
  fi
}

skip() {  # skip NAME WHY
  echo "== $1: skipped: $2"
  summary+=("$1: skipped ($2)")
}

main() {
  echo "== bench/gpu.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), output in $OUT, budget ${BUDGET}s"
  if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L || true; else echo "nvidia-smi: not found"; fi
  echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"

  if [ -d wheels ]; then
    echo "== installing the wheelhouse ./wheels (no index)"
    "$PY" -m pip install -q --no-index --find-links wheels --no-deps wheels/*.whl ||
      { echo "the wheelhouse did not install"; return 1; }
  fi

  # (errexit does not hold inside main, which runs in a `||` list: each check that must stop the script says so)
  local cuda
  cuda=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))') ||
    { echo "torch does not import with $PY: nothing can run"; return 1; }
  if [ "$cuda" = 1 ]; then
    "$PY" -c 'import torch; print(torch.__version__, torch.cuda.get_device_name())'
    "$PY" -c 'import torch; print("CUDA", torch.version.cuda, "| cuDNN", torch.backends.cudnn.version(), "| bf16",
      torch.cuda.is_bf16_supported())'
  else
    "$PY" -c 'import torch; print(torch.__version__, "(no CUDA device)")'
    echo "no GPU found: torch sees no CUDA device; the GPU parts are skipped"
  fi

  # which packages import: a part that needs a missing one is skipped, with its name
  local missing
  missing=$("$PY" - <<'EOF'
import importlib
need = ["numpy", "safetensors", "tokenizers", "regex", "tqdm", "matplotlib", "sklearn", "numba", "pytest",
        "transformers", "pydoc_data", "seqlab"]
missing = []
for name in need:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 (any failure to import counts as missing)
        missing.append(name)
print(" ".join(missing))
EOF
) || { echo "the package check failed"; return 1; }
  echo "packages missing: ${missing:-none}"
  has() { for m in "$@"; do case " $missing " in *" $m "*) return 1;; esac; done; return 0; }
  local seqlab_deps=(seqlab numpy safetensors tokenizers regex tqdm matplotlib sklearn numba)

  # which parts run (GPU_SH_PARTS, e.g. "generate" to rerun one part in what is left of a device lease)
  want() { case ",$PARTS," in *",$1,"*) return 0;; *) return 1;; esac; }

  # 1. the device tests (on a machine without CUDA they skip: shown here, cheaply)
  if ! want tests; then :
  elif has pytest "${seqlab_deps[@]}"; then
    part "device tests" "${GPU_SH_TESTS_S:-180}" tests.txt "$PY" -m pytest -m device tests/test_device.py -q -rs \
      -p no:cacheprovider
  else
    skip "device tests" "needs pytest and seqlab's dependencies"
  fi

  if [ "$cuda" != 1 ]; then
    skip "seqlab demo --minutes 2" "no GPU"
    skip "bench/lm_throughput.py --device cuda" "no GPU"
    skip "bench/generate.py --device cuda" "no GPU"
    return 0
  fi

  # 2. the demo on the GPU (train.device auto picks CUDA), the run directory outside $OUT; before the benches,
  # since its time is fixed (--minutes 2 of training, then its report), and the last part takes what is left
  if ! want demo; then :
  elif has pydoc_data "${seqlab_deps[@]}"; then
    mkdir -p "$RUNS"
    part "seqlab demo --minutes 2" "${GPU_SH_DEMO_S:-160}" demo.txt \
      "$PY" -m seqlab demo --minutes 2 --out "$RUNS/demo"
  else
    skip "seqlab demo --minutes 2" "a seqlab dependency or pydoc_data is missing"
  fi

  # 3. training throughput against HF on the GPU
  if ! want train; then :
  elif has transformers "${seqlab_deps[@]}"; then
    part "bench/lm_throughput.py --device cuda" "${GPU_SH_TRAIN_S:-120}" lm_throughput.txt \
      "$PY" bench/lm_throughput.py --device cuda --rounds 3 --steps 10
  else
    skip "bench/lm_throughput.py --device cuda" "transformers or a seqlab dependency is missing"
  fi

  # 4. generation against HF on the GPU, batch 1 and 8
  if ! want generate; then :
  elif has transformers "${seqlab_deps[@]}"; then
    part "bench/generate.py --device cuda" "${GPU_SH_GENERATE_S:-240}" generate.txt \
      "$PY" bench/generate.py --device cuda --rounds 3
  else
    skip "bench/generate.py --device cuda" "transformers or a seqlab dependency is missing"
  fi

  # 5. the quality ablations (issue #39), only when named
  if ! want quality; then :
  elif has "${seqlab_deps[@]}" && [ -d shared/data/conll2003 ]; then
    part "bench/quality_rows.sh" "${GPU_SH_QUALITY_S:-560}" quality.txt env QUALITY_DATA=shared/data \
      QUALITY_GLOVE=shared/vectors/glove-6b-50d-subset.bin QUALITY_W2V=shared/vectors/w2v-shakespeare \
      QUALITY_RUNS="$RUNS/quality" QUALITY_LOGS="$OUT/quality" QUALITY_ROW_MINUTES="${GPU_SH_QUALITY_ROW_MIN:-6}" \
      QUALITY_DEVICE=cuda PYTHON="$PY" bash bench/quality_rows.sh
  else
    skip "bench/quality_rows.sh" "a seqlab dependency or ./shared/data/conll2003 is missing"
  fi
}

finish() {
  echo
  echo "== bench/gpu.sh summary (${SECONDS}s of the ${BUDGET}s budget)"
  for line in "${summary[@]}"; do echo "- $line"; done
  if [ -f "$SEQLAB_BENCH_RESULTS" ]; then
    echo "sections in $SEQLAB_BENCH_RESULTS:" \
      "$(sed -n 's/^<!-- \([^ ]*\):start .*/\1/p' "$SEQLAB_BENCH_RESULTS" | tr '\n' ' ')"
  fi
  echo "files in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
  [ "${#failed[@]}" -eq 0 ]
}

run_all() {
  local rc=0
  main || rc=$?
  finish || rc=$?
  return "$rc"
}

run_all 2>&1 | tee "$OUT/gpu.log"
exit "${PIPESTATUS[0]}"
