#!/usr/bin/env bash
# bench/quality_rows.sh: the quality ablations of issue #39, every row at once, then their two tables.
#
#   bench/ner.py --ablation random,crf,chars,w2v,glove   (CoNLL-2003; headline rows chars and glove at the papers'
#                                                         training length, the others at 10,000 steps)
#   bench/sentiment.py --ablation random,w2v,glove,glove-phrases   (SST-2; sentence rows at 3,000 steps, the
#                                                         phrase-trained GloVe row at up to 20,000)
#
# One process a row, one thread each (9 processes: a machine with that many cores, or one GPU they share); each
# row stores its result beside its run, and a last invocation of each bench writes its section from the stored
# rows (none is retrained). With QUALITY_ROW_MINUTES each row's steps are fitted to that budget by a calibration
# run (never above its step count; the table states the steps and passes reached).
#
# Environment (defaults in brackets): QUALITY_DATA, the folder holding conll2003/eng.* and sst2/ [../shared/data];
# QUALITY_W2V, the w2v-sgns run of the w2v rows [runs/w2v-shakespeare]; QUALITY_GLOVE, the GloVe 6B 50-d vectors,
# named or a file [glove-6b-50d]; QUALITY_RUNS, the run folders [runs/quality]; QUALITY_ROW_MINUTES [0: the steps
# as given]; QUALITY_DEVICE [auto]; PYTHON [.venv/bin/python, else python3]. Logs, each run's metrics.jsonl and
# stored row: QUALITY_LOGS [$QUALITY_RUNS].
# Sections go to bench/RESULTS.md, or to SEQLAB_BENCH_RESULTS (bench/gpu.sh sets it). Exit status: that of the
# two table-writing invocations.
set -uo pipefail
cd "$(dirname "$0")/.."

DATA=${QUALITY_DATA:-../shared/data}
W2V=${QUALITY_W2V:-runs/w2v-shakespeare}
GLOVE=${QUALITY_GLOVE:-glove-6b-50d}
RUNS=${QUALITY_RUNS:-runs/quality}
LOGS=${QUALITY_LOGS:-$RUNS}
MINUTES=${QUALITY_ROW_MINUTES:-0}
DEVICE=${QUALITY_DEVICE:-auto}
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3; fi
mkdir -p "$RUNS" "$LOGS"

NER_ROWS=(random crf chars w2v glove)
SST_ROWS=(random w2v glove glove-phrases)
concurrent=$(( ${#NER_ROWS[@]} + ${#SST_ROWS[@]} ))
common=(--threads 1 --device "$DEVICE" --w2v "$W2V" --glove "$GLOVE" --row-minutes "$MINUTES"
        --concurrent "$concurrent")
ner=("$PY" bench/ner.py --steps 10000 --headline-steps 22000 --data "$DATA/conll2003" --out "$RUNS/ner" "${common[@]}")
sst=("$PY" bench/sentiment.py --steps 3000 --phrase-steps 20000 --data "$DATA" --out "$RUNS/sst" "${common[@]}")

echo "== quality rows: ${concurrent} at once, $(date -u '+%H:%M:%S UTC'); logs in $LOGS"
for row in "${NER_ROWS[@]}"; do "${ner[@]}" --ablation "$row" --no-results >"$LOGS/ner-$row.log" 2>&1 & done
for row in "${SST_ROWS[@]}"; do "${sst[@]}" --ablation "$row" --no-results >"$LOGS/sst-$row.log" 2>&1 & done
wait
echo "== rows done, $(date -u '+%H:%M:%S UTC'); the tables from the stored rows"
for log in "$LOGS"/ner-*.log "$LOGS"/sst-*.log; do echo "-- $log"; tail -n 3 "$log"; done
for run in "$RUNS"/ner/* "$RUNS"/sst/*; do  # each run's validation curve and stored row, beside the logs
  for f in metrics.jsonl bench-row.json; do
    [ -f "$run/$f" ] && cp "$run/$f" "$LOGS/$(basename "$(dirname "$run")")-$(basename "$run")-$f"
  done
done
rc=0
"${ner[@]}" --ablation "$(IFS=,; echo "${NER_ROWS[*]}")" || rc=$?
"${sst[@]}" --ablation "$(IFS=,; echo "${SST_ROWS[*]}")" || rc=$?
exit "$rc"
