#!/usr/bin/env bash
# Reproduce models/multi30k-de-en-transformer (~10 s prep and vocab, 30-60 min training on one CPU thread):
#   nohup scripts/train_multi30k_transformer.sh > work/multi30k-transformer-train.log 2>&1 &
# DATA: the corpus folder (default ../shared/data/multi30k-de-en beside the repository).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="${DATA:-$ROOT/../shared/data/multi30k-de-en}"
export TRAIN_LOG="${TRAIN_LOG:-work/multi30k-transformer-train.log}"
exec "$ROOT/scripts/train_model.sh" multi30k-de-en-transformer \
  --train-src "$DATA/train.de.gz" --train-tgt "$DATA/train.en.gz" \
  --dev-src "$DATA/val.de" --dev-ref "$DATA/val.en" \
  --test-src "$DATA/test_2016_flickr.de" --test-ref "$DATA/test_2016_flickr.en" \
  --max-len 80 --vocab-size 6000 --src-coverage 1.0 --tgt-coverage 1.0 --seed 1234
