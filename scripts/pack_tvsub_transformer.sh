#!/usr/bin/env bash
# Prepare, here, the data that scripts/train_tvsub_transformer.sh trains on, as one folder to carry to the
# training machine:
#   scripts/pack_tvsub_transformer.sh PACK_DIR
# 1. scripts/prepare_data.py: every TVsub training pair less those whose source occurs among the dev or test
#    sources, Moses escapes undone, at most 50 words a side, shuffled (seed 1234); the SentencePiece models
#    of models/tvsub-zh-en (8k per side), not new ones (--spm-from) -> work/tvsub-zh-en-transformer/data;
# 2. onmt_build_vocab -config configs/tvsub-zh-en-transformer/train.yaml on all of it, each vocabulary cut
#    to the 7996 pieces the model keeps;
# 3. PACK_DIR: train.src.bz2, train.tgt.bz2 (bzip2: a quarter smaller than gzip on this text), dev.src,
#    dev.ref0, {src,tgt}.spm.model, vocab.{src,tgt}, prep.json (about 40 MB in all).
# Environment: DATA (the corpus folder, default ../shared/data/tvsub-zh-en beside the repository), VENV
# (default .venv), MAX_TRAIN (subsample this many pairs; default 0 = all; a dry run takes a few thousand),
# RUN_DIR (where work/ and models/tvsub-zh-en are; default the repository root).
set -euo pipefail
PACK="${1:?usage: scripts/pack_tvsub_transformer.sh PACK_DIR}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="${DATA:-$ROOT/../shared/data/tvsub-zh-en}"
PYTHON="${VENV:-$ROOT/.venv}/bin/python"
mkdir -p "$PACK"
PACK="$(cd "$PACK" && pwd)"
cd "${RUN_DIR:-$ROOT}"
WORK=work/tvsub-zh-en-transformer
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONWARNINGS="ignore::FutureWarning"
"$PYTHON" "$ROOT/scripts/prepare_data.py" --train-src "$DATA/train.zh.gz" --train-tgt "$DATA/train.en.gz" \
  --dev-src "$DATA/dev.zh" --dev-ref "$DATA/dev.en" \
  --test-src "$DATA/test.zh" --test-ref "$DATA/test.ref0.en" "$DATA/test.ref1.en" "$DATA/test.ref2.en" \
  --out "$WORK/data" --max-train "${MAX_TRAIN:-0}" --max-len 50 --unescape-moses --seed 1234 \
  --spm-from models/tvsub-zh-en
mkdir -p "$WORK/run"
"$PYTHON" -c "from onmt.bin.build_vocab import main; main()" \
  -config "$ROOT/configs/tvsub-zh-en-transformer/train.yaml" -n_sample -1 -num_threads 1 2>&1 | grep -v INFO || true
test -s "$WORK/run/vocab.src" && test -s "$WORK/run/vocab.tgt"
# Each vocabulary cut to what the model keeps (src_vocab_size/tgt_vocab_size 8000 = OpenNMT-py's 4 specials and
# the 7996 most frequent pieces, in the file's order), so that the model's vocabulary is the file's whatever
# pyonmttok build (or stand-in) the training machine has.
for side in src tgt; do
  grep -qx "${side}_vocab_size: 8000" "$ROOT/configs/tvsub-zh-en-transformer/train.yaml"
  head -n 7996 "$WORK/run/vocab.$side" > "$WORK/run/vocab.$side.kept"
  mv "$WORK/run/vocab.$side.kept" "$WORK/run/vocab.$side"
done
for side in src tgt; do bzip2 -9 -c "$WORK/data/train.$side" > "$PACK/train.$side.bz2"; done
cp "$WORK/data/dev.src" "$WORK/data/dev.ref0" "$WORK/data/src.spm.model" "$WORK/data/tgt.spm.model" \
  "$WORK/data/prep.json" "$WORK/run/vocab.src" "$WORK/run/vocab.tgt" "$PACK/"
du -sh "$PACK"
