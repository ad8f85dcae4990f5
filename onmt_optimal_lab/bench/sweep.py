"""The sweep's saving: the r x b grid as one decode per beam size against one decode per configuration, with
a check that both give the same numbers."""
from __future__ import annotations

import time

from onmt_optimal.tools.sweep import Decoder, run_sweep


def bench_sweep(session, src, refs, beams, rewards, ratio, progress=False, clock=time.perf_counter):
    decoders = [Decoder("optimal" if r == 0 else "optimal_reward", "optimal",
                        "logprob" if r == 0 else "bounded_reward", None if r == 0 else r) for r in rewards]
    start = clock()
    joint = run_sweep(session, src, refs, beams, decoders, ratio, progress=progress)["rows"]
    joint_s = clock() - start
    start = clock()
    separate = []
    for decoder in decoders:
        separate += run_sweep(session, src, refs, beams, [decoder], ratio, progress=progress)["rows"]
    separate_s = clock() - start
    key = lambda r: (r["family"], r["reward"] or 0.0, r["beam"])  # noqa: E731
    exact = ("bleu", "length_ratio", "mean_steps", "mean_length", "stop_reasons")
    pairs = list(zip(sorted(joint, key=key), sorted(separate, key=key)))
    identical = all(a[k] == b[k] for a, b in pairs for k in exact)
    # model scores: the forward pass sees other batch sizes once examples leave at other steps, so float32
    # sums of the same hypotheses can differ in the last digits
    score_gap = max(abs(a[k] - b[k]) for a, b in pairs for k in ("mean_log_prob", "mean_score"))
    return {"configurations": len(decoders) * len(beams), "joint_seconds": joint_s,
            "separate_seconds": separate_s, "speedup": separate_s / joint_s, "identical": identical,
            "max_mean_score_gap": score_gap}

