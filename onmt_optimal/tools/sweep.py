"""The r x b sweep: one decode per beam size answers for every decoder that shares that beam.

A decoder is a scoring rule and a stopping rule. The beam's contents depend only on the beam size and on
whether completed hypotheses shrink it, never on where a rule stops or what it returns; so for each beam
size b the sweep runs two decodes, one ordinary beam (OpenNMT-py's default rule, optimal stopping, optimal
stopping with the bounded reward for every r) and one shrinking beam (shrinking + normalization, shrinking +
per-word reward for every r), and reads every decoder's answer from them. Results match separate runs of
``onmt_translate`` with the same flags (see ``tests/e2e/test_sweep.py``): the same translations, steps and stop
reasons. One caveat of floating point: examples leave the batch at other steps in a separate run, so the model's
forward pass sees other batch sizes, and float32 scores can differ in their last digits (the benchmark reports
the largest gap in a mean model score, ``benchmarks/``); a near-tie decided by such a digit could in principle
change a beam.
"""
from __future__ import annotations

import collections
import time

from onmt_optimal.tools.evaluate import corpus_score
from onmt_optimal.progress import count_lines, sentence_bar
from onmt_optimal.search.registry import Decoder, paper_decoders

__all__ = ["Decoder", "paper_decoders", "sweep_decoders", "decode_all", "run_sweep", "run_sweep_ray", "summarize"]


def sweep_decoders(rewards: list[float]) -> list[Decoder]:
    """``paper_decoders`` with the paper's baseline, ``opennmt2017`` (OpenNMT-py's search of early 2017), after
    OpenNMT-py 3.5.1's rule: it shares the ordinary beam, so its rows cost no decode."""
    out = paper_decoders(rewards)
    return out[:1] + [Decoder("opennmt2017", "opennmt2017", "logprob")] + out[1:]


def summarize(decoder: Decoder, beam: int, records: list, refs: list[list[str]]) -> dict:
    hyps = [r.text for r in records]
    score = corpus_score(hyps, refs)
    n = len(records)
    return {
        "family": decoder.family, "beam": beam, "reward": decoder.reward,
        "bleu": round(score.bleu, 4), "length_ratio": round(score.length_ratio, 5),
        "mean_log_prob": sum(r.log_prob for r in records) / n,
        "mean_score": sum(r.score for r in records) / n,
        "mean_steps": sum(r.steps for r in records) / n,
        "mean_length": sum(r.length for r in records) / n,
        "sentences": n,
        "stop_reasons": dict(collections.Counter(r.stop_reason for r in records).most_common()),
        "signature": score.signature,
    }


def decode_all(session, src, beam: int, decoders: list[Decoder], ratio: float, progress: bool = False) -> dict:
    """Decode ``src`` at beam size ``beam`` for every decoder, grouping decoders that share a beam; with
    ``progress``, a tqdm bar on stderr per decode (sentences done / lines of ``src``).

    Returns ``{decoder: [record per line]}``."""
    out = {}
    total = count_lines(src) if progress else None
    for shrinking in (False, True):
        group = [d for d in decoders if d.shrinks == shrinking]
        if not group:
            continue
        desc = f"b={beam}" + (" shrinking beam" if shrinking else "")
        with sentence_bar(total, desc, leave=False, disable=not progress) as bar:
            lines = session.decode(src, beam, [d.rule(ratio) for d in group], progress=bar.update)
        for k, decoder in enumerate(group):
            out[decoder] = [line[k] for line in lines]
    return out


def run_sweep_ray(translate_args: list[str], src_lines: list[str], refs: list[list[str]], beams: list[int],
                  decoders: list[Decoder], ratio: float | None, workers: int, address: str | None = None,
                  gpus_per_worker: float = 0.0, progress: bool = True) -> tuple[dict, float]:
    """``run_sweep`` with its decodes spread over ``workers`` Ray actors (``distributed.sweep``): the same rows
    in the same order, ``seconds`` aside. ``ratio`` None: estimated on ``src_lines``/``refs`` by a worker.
    Returns ``(result, ratio)``."""
    from tqdm import tqdm

    from onmt_optimal.distributed.sweep import decode_many

    groups = _groups(decoders)
    jobs = [((beam, shrinks), beam, group) for beam in beams for shrinks, group in groups]
    start = time.time()
    with tqdm(total=len(jobs), desc="decodes", disable=not progress) as bar:
        answers, ratio = decode_many(translate_args, src_lines, refs, jobs, ratio, workers, address,
                                     gpus_per_worker, progress=bar.update)
    rows = []
    for beam in beams:
        for shrinks, group in groups:
            lines = answers[(beam, shrinks)]
            for k, decoder in enumerate(group):
                rows.append(summarize(decoder, beam, [line[k] for line in lines], refs))
    return {"rows": rows, "seconds": time.time() - start, "decodes": len(jobs)}, ratio


def _groups(decoders: list[Decoder]) -> list[tuple[bool, list[Decoder]]]:
    """The decoders by beam kind, in ``decode_all``'s order: the ordinary beam first, then the shrinking one."""
    return [(shrinks, group) for shrinks in (False, True)
            for group in [[d for d in decoders if d.shrinks == shrinks]] if group]


def run_sweep(session, src, refs: list[list[str]], beams: list[int], decoders: list[Decoder], ratio: float,
              progress: bool = True) -> dict:
    """Every decoder at every beam size; rows of BLEU, length ratio, mean model score and mean steps."""
    from tqdm import tqdm

    rows, start = [], time.time()
    for beam in tqdm(beams, desc="beam sizes", disable=not progress):
        for decoder, records in decode_all(session, src, beam, decoders, ratio, progress).items():
            rows.append(summarize(decoder, beam, records, refs))
    return {"rows": rows, "seconds": time.time() - start,
            "decodes": len(beams) * len({d.shrinks for d in decoders})}
