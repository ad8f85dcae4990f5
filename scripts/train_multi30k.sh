#!/usr/bin/env bash
# Reproduce models/multi30k-de-en: prepare data -> build vocab -> train -> strip optimizer -> package.
#
# Usage (from anywhere; ~10 s prep and vocab, ~45 min training on one CPU thread):
#   nohup scripts/train_multi30k.sh > work/multi30k-train.log 2>&1 &
# Environment: DATA (corpus dir, default /work/shared/data/multi30k-de-en), VENV (default .venv).
# Derived data and checkpoints go to work/multi30k-de-en/ (gitignored); the packaged model to
# models/multi30k-de-en/.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
DATA="${DATA:-$ROOT/../shared/data/multi30k-de-en}"
VENV="${VENV:-$ROOT/.venv}"
CONFIG=configs/multi30k-de-en/train.yaml
WORK=work/multi30k-de-en
MODEL_DIR=models/multi30k-de-en

# shellcheck disable=SC1091
. "$VENV/bin/activate"
# One thread only: the machine is shared.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONWARNINGS="ignore::FutureWarning"
stamp() { echo "[$(date '+%F %T')] $*"; }

stamp "prepare data"
python scripts/prepare_data.py \
  --train-src "$DATA/train.de.gz" --train-tgt "$DATA/train.en.gz" \
  --dev-src "$DATA/val.de" --dev-ref "$DATA/val.en" \
  --test-src "$DATA/test_2016_flickr.de" --test-ref "$DATA/test_2016_flickr.en" \
  --out "$WORK/data" --max-len 80 --vocab-size 6000 \
  --src-coverage 1.0 --tgt-coverage 1.0 --seed 1234

stamp "build vocab"
mkdir -p "$WORK/run"
onmt_build_vocab -config "$CONFIG" -n_sample -1 -num_threads 1

stamp "train"
T0=$(date +%s)
onmt_train -config "$CONFIG"
T1=$(date +%s)
stamp "training wall-clock: $(( (T1 - T0) / 60 )) min $(( (T1 - T0) % 60 )) s"

stamp "pick checkpoint (best validation perplexity among those kept) and strip optimizer"
LOG="${TRAIN_LOG:-work/multi30k-train.log}"
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
