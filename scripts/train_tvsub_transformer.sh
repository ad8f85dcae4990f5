#!/usr/bin/env bash
# Train models/tvsub-zh-en-transformer (configs/tvsub-zh-en-transformer/train.yaml) for a wall-clock budget
# from the folder scripts/pack_tvsub_transformer.sh wrote:
#   scripts/train_tvsub_transformer.sh PACK_DIR [BUDGET_SECONDS (default 480)] [-- onmt_train arguments]
# It unpacks PACK_DIR into work/tvsub-zh-en-transformer/{data,run}, trains through scripts/train_wallclock.py
# (CUDA: fp16 mixed precision; else CPU, fp32), and writes the model folder: model.pt (the last complete
# checkpoint, no optimizer state, fp16 weights), the SentencePiece models, vocabularies, train.yaml,
# prep.json and train.log. Environment: PYTHON (the interpreter, default python3), RUN_DIR (where work/ and
# models/ are written; default the repository root).
set -euo pipefail
PACK="${1:?usage: scripts/train_tvsub_transformer.sh PACK_DIR [BUDGET_SECONDS] [-- onmt_train arguments]}"
shift
BUDGET=480
if [ $# -gt 0 ] && [ "$1" != "--" ]; then BUDGET="$1"; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
PACK="$(cd "$PACK" && pwd)"
cd "${RUN_DIR:-$ROOT}"
WORK=work/tvsub-zh-en-transformer
MODEL=models/tvsub-zh-en-transformer
mkdir -p "$WORK/data" "$WORK/run" "$MODEL"
# (Python's bz2: no bzip2 program needed; both sides at once)
pids=()
for side in src tgt; do
  "$PYTHON" -c "import bz2, shutil, sys; shutil.copyfileobj(bz2.open(sys.argv[1]), open(sys.argv[2], 'wb'), 1 << 20)" \
    "$PACK/train.$side.bz2" "$WORK/data/train.$side" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
cp "$PACK/dev.src" "$PACK/dev.ref0" "$PACK/src.spm.model" "$PACK/tgt.spm.model" "$WORK/data/"
cp "$PACK/vocab.src" "$PACK/vocab.tgt" "$WORK/run/"
cp "$PACK/src.spm.model" "$PACK/tgt.spm.model" "$PACK/vocab.src" "$PACK/vocab.tgt" "$PACK/prep.json" "$MODEL/"
cp "$ROOT/configs/tvsub-zh-en-transformer/train.yaml" "$MODEL/train.yaml"
exec "$PYTHON" "$ROOT/scripts/train_wallclock.py" --config "$ROOT/configs/tvsub-zh-en-transformer/train.yaml" \
  --budget "$BUDGET" --out "$MODEL/model.pt" -- "$@"
