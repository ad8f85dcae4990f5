#!/usr/bin/env bash
# What issue 14 asks of an accelerator, in two device calls that each end well inside the 10 minutes a command
# may run (the H100 baseline's settings: 200 TVsub dev sentences, at least 8 s of rounds per configuration,
# the sweep on 100; stock, default, optimal (the bookkeeping on the host, the default next to a CUDA model),
# optimal+r and optimal-device, the bookkeeping next to the model, and at b = 1 optimal-core, the core where
# optimal runs stock's search of one item: the special path's measure).
#
# Here, first:        bash scripts/device_tree.sh only tvsub-zh-en && bash ../shared/gpu/prepare
# Device run 1 (carry [".gpu"]):  bash .gpu/on-device.sh bash scripts/gpu_run.sh 1 "$OUT"
#   the property tests with their searches on the GPU (ONMT_OPTIMAL_TEST_DEVICE=cuda, the fast tier's
#   examples: tests/synthetic.py's plain-Python references, and the reads per step counted on the device's
#   own tensors), then the benchmark at batch 1
# Device run 2 (carry [".gpu"]):  bash .gpu/on-device.sh bash scripts/gpu_run.sh 2 "$OUT"
#   the benchmark at batches 32 and 128, and the sweep
# Device run 3, if device time is left (the transformer; one model travels at a time, so first, here:
#   bash scripts/device_tree.sh only multi30k-de-en-transformer):
#                     bash .gpu/on-device.sh bash scripts/gpu_run.sh 3 "$OUT"
#   the Multi30k transformer at batches 1 and 32, b = 1, 5, 10, on 100 dev sentences
# Here, afterwards:   bash scripts/device_tree.sh restore
#   python scripts/bench.py --render RUN1/RESULTS-gpu-1.json RUN2/RESULTS-gpu-2.json [RUN3/RESULTS-gpu-3.json] \
#     --out benchmarks/RESULTS-gpu.md
# (RUN1..3: the folders the runs' files were fetched to; the report has a section per model). LINES=N shortens a
# run that would not fit.
# The data comes from .gpu/data (../shared does not travel); each part's log lands in the output folder.
set -uo pipefail
part=${1:?usage: bash scripts/gpu_run.sh 1|2|3 OUT_DIR}
out=${2:?usage: bash scripts/gpu_run.sh 1|2|3 OUT_DIR}
lines=${LINES:-200}
mkdir -p "$out"
bench=(python3 scripts/bench.py --config tvsub --data .gpu/data --gpu 0 --lines "$lines" --min-seconds 8
       --no-progress --out "$out/RESULTS-gpu-$part.md")
case "$part" in
  1)
    ONMT_OPTIMAL_TEST_DEVICE=cuda ONMT_OPTIMAL_TESTS=fast timeout 120 python3 -m pytest -q -p no:cacheprovider \
      tests/test_certificate.py tests/test_device_reads.py 2>&1 | tee "$out/pytest-cuda.log" | tail -3
    timeout 450 "${bench[@]}" --batches 1 --sweep-lines 0 2>&1 | tee "$out/bench-1.log" | grep -v INFO | tail -40 ;;
  2)
    timeout 560 "${bench[@]}" --batches 32,128 --sweep-lines 100 2>&1 | tee "$out/bench-2.log" | grep -v INFO | tail -60 ;;
  3)
    timeout 560 python3 scripts/bench.py --config transformer --data .gpu/data --gpu 0 --lines "${LINES:-100}" \
      --min-seconds 4 --batches 1,32 --beams 1,5,10 --sweep-lines 0 --no-progress --out "$out/RESULTS-gpu-3.md" \
      2>&1 | tee "$out/bench-3.log" | grep -v INFO | tail -40 ;;
  *) echo "part must be 1, 2 or 3" >&2; exit 2 ;;
esac
