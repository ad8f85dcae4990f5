#!/usr/bin/env bash
# Train and package models/NAME: prepare data -> build vocab -> train -> pick the kept checkpoint with the best
# validation perplexity -> strip the optimizer state -> copy model, subword models, vocab, config, log.
#
# Usage: scripts/train_model.sh NAME [scripts/prepare_data.py arguments, without --out]
#   (configs/NAME/train.yaml is the training config; train_tvsub.sh and train_multi30k.sh call this.)
# Environment: VENV (default .venv), TRAIN_LOG (this run's log, read to pick the checkpoint).
# Derived data and checkpoints go to work/NAME/ (gitignored); the packaged model to models/NAME/.
set -euo pipefail

NAME="$1"
shift
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
CONFIG=configs/$NAME/train.yaml
WORK=work/$NAME
MODEL_DIR=models/$NAME

# shellcheck disable=SC1091
. "$VENV/bin/activate"
# One thread only: the machine is shared.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONWARNINGS="ignore::FutureWarning"
stamp() { echo "[$(date '+%F %T')] $*"; }

stamp "prepare data"
python scripts/prepare_data.py "$@" --out "$WORK/data"

stamp "build vocab"
mkdir -p "$WORK/run"
onmt_build_vocab -config "$CONFIG" -n_sample -1 -num_threads 1

stamp "train"
T0=$(date +%s)
onmt_train -config "$CONFIG"
T1=$(date +%s)
stamp "training wall-clock: $(( (T1 - T0) / 60 )) min $(( (T1 - T0) % 60 )) s"

stamp "pick checkpoint (best validation perplexity among those kept) and strip optimizer"
LOG="${TRAIN_LOG:-work/$NAME-train.log}"
BEST=$(python - "$LOG" "$WORK/run/model" <<'EOF'
import os, re, sys
log, prefix = sys.argv[1], sys.argv[2]
ppl, best = None, None
for line in open(log, encoding="utf-8", errors="replace"):
    m = re.search(r"Validation perplexity: ([\d.]+)", line)
    if m:
        ppl = float(m.group(1))
    m = re.search(r"Saving checkpoint (\S+_step_(\d+)\.pt)", line)
    if m and ppl is not None and os.path.exists(m.group(1)):
        if best is None or ppl <= best[0]:
            best = (ppl, m.group(1))
        ppl = None
if best is None:  # no log to parse: take the last checkpoint
    steps = [f for f in os.listdir(os.path.dirname(prefix)) if re.match(r"model_step_\d+\.pt$", f)]
    best = (None, os.path.join(os.path.dirname(prefix),
                               max(steps, key=lambda f: int(re.findall(r"\d+", f)[0]))))
print(best[1])
EOF
)
stamp "chosen: $BEST"
mkdir -p "$MODEL_DIR"
python scripts/strip_checkpoint.py "$BEST" "$MODEL_DIR/model.pt"
cp "$WORK/data/src.spm.model" "$WORK/data/tgt.spm.model" "$MODEL_DIR/"
cp "$WORK/run/vocab.src" "$MODEL_DIR/vocab.src"
cp "$WORK/run/vocab.tgt" "$MODEL_DIR/vocab.tgt"
cp "$WORK/data/prep.json" "$MODEL_DIR/prep.json"
cp "$CONFIG" "$MODEL_DIR/train.yaml"
if [ -f "$LOG" ]; then
  grep -v -e 'FutureWarning' -e 'custom_fwd' -e 'custom_bwd' -e 'autocast' "$LOG" > "$MODEL_DIR/train.log" || true
fi
du -sh "$MODEL_DIR"
stamp "done"
