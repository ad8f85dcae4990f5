#!/usr/bin/env bash
# Reproduce models/tvsub-zh-en (~1 min prep, ~1 min vocab, ~105 min training on one CPU thread):
#   nohup scripts/train_tvsub.sh > work/tvsub-train.log 2>&1 &
# DATA: the corpus folder (default ../shared/data/tvsub-zh-en beside the repository).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="${DATA:-$ROOT/../shared/data/tvsub-zh-en}"
export TRAIN_LOG="${TRAIN_LOG:-work/tvsub-train.log}"
exec "$ROOT/scripts/train_model.sh" tvsub-zh-en \
  --train-src "$DATA/train.zh.gz" --train-tgt "$DATA/train.en.gz" \
  --dev-src "$DATA/dev.zh" --dev-ref "$DATA/dev.en" \
  --test-src "$DATA/test.zh" --test-ref "$DATA/test.ref0.en" "$DATA/test.ref1.en" "$DATA/test.ref2.en" \
  --max-train 1000000 --max-len 50 --vocab-size 8000 --unescape-moses --seed 1234
