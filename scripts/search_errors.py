#!/usr/bin/env python3
"""Search errors of beam search: how often does the beam return the global optimum of its own score?

For every source sentence (optionally only those with at most ``--max_src_tokens`` tokens):

1. the beam: ``python -m onmt_optimal translate`` (i.e. ``onmt_translate`` with this package's flags) with
   ``-stopping optimal -with_score -stats_file``, ``-beam_size B``, the chosen scoring rule, and
   ``-max_length T -max_length_ratio 0`` (so T does not depend on batching);
2. the oracle: ``onmt_optimal.exact_search.exact_search`` (depth-first branch and bound) on the same model
   and the same rule, seeded with the beam's answer, under a node and a time budget.

Reported (a JSON file and a table): how often the beam's answer is the proved global optimum; how often the
oracle found something strictly better (a *search error*); how often the proved optimum is the empty
translation (Stahlberg & Byrne 2019 found > 50% on WMT En-De under raw log-probability); how many searches
ran out of budget (their answer is only the best found, no proof); mean nodes expanded.

The source file is read as the tokens the model sees: no ``-transforms`` are passed to either search, so a
SentencePiece/BPE model needs its source already segmented (and a model trained with on-the-fly transforms
is run here without them). Scores are compared on the oracle's own arithmetic: the beam's answer is
rescored with batch size 1 (``seed_score``); ``max_rescore_diff`` reports how far the beam's own score was
from that (batching changes float32 results by a few ulps).

    python scripts/search_errors.py --model M.pt --src test.src --beam_size 5 \
        [--length_reward 1.0 --length_ratio 1.5] [--max_src_tokens 10] [--max_nodes 100000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from argparse import Namespace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--model", required=True, help="OpenNMT-py checkpoint (.pt)")
    p.add_argument("--src", required=True, help="source file, one sentence per line, in model tokens")
    p.add_argument("--beam_size", "-b", type=int, default=5)
    p.add_argument("--length_penalty", choices=["none", "avg", "wu"], default="none",
                   help="OpenNMT-py length normalization (avg/wu: bound is loose, search is slow)")
    p.add_argument("--alpha", type=float, default=1.0, help="alpha of --length_penalty avg|wu")
    p.add_argument("--length_reward", type=float, default=0.0,
                   help="r: with --length_ratio the bounded reward log p + r*min(l,|y|), else log p + r*|y|")
    p.add_argument("--length_ratio", type=float, default=None, help="rho: l = rho * |x|")
    p.add_argument("--bp_norm", action="store_true", help="Yang et al.'s BP-norm (needs --length_ratio)")
    p.add_argument("--max_length", type=int, default=50, help="T, for the beam and the oracle (default 50)")
    p.add_argument("--max_src_tokens", type=int, default=None, help="only sentences with at most N tokens")
    p.add_argument("--limit", type=int, default=None, help="only the first N selected sentences")
    p.add_argument("--max_nodes", type=int, default=100000, help="oracle node budget per sentence")
    p.add_argument("--max_seconds", type=float, default=60.0, help="oracle time budget per sentence")
    p.add_argument("--gpu", type=int, default=-1)
    p.add_argument("--json", default=None, help="write the summary and per-sentence records here")
    p.add_argument("--verbose", "-v", action="store_true", help="print one row per sentence")
    args = p.parse_args(argv)
    if args.beam_size < 1 or args.max_length < 1 or args.max_nodes < 1:
        p.error("--beam_size, --max_length and --max_nodes must be >= 1")
    return args


def search_options(args) -> Namespace:
    """The onmt_translate options of the beam, as a namespace ``onmt_optimal.options`` understands."""
    return Namespace(stopping="optimal", length_penalty=args.length_penalty, alpha=args.alpha,
                     length_reward=args.length_reward, length_ratio=args.length_ratio, bp_norm=args.bp_norm,
                     bound="exact", coverage_penalty="none", beta=0.0)


def translate_flags(args) -> list[str]:
    flags = ["-beam_size", str(args.beam_size), "-stopping", "optimal", "-length_penalty", args.length_penalty,
             "-with_score", "-max_length", str(args.max_length), "-max_length_ratio", "0", "-gpu", str(args.gpu)]
    if args.length_penalty != "none":
        flags += ["-alpha", str(args.alpha)]
    if args.length_reward:
        flags += ["-length_reward", str(args.length_reward)]
    if args.length_ratio is not None:
        flags += ["-length_ratio", str(args.length_ratio)]
    if args.bp_norm:
        flags += ["-bp_norm"]
    return flags


def run_beam(args, lines: list[str], workdir: Path) -> list[dict]:
    """Decode ``lines`` with the beam; per line: the output tokens and the statistics record."""
    src = workdir / "beam.src"
    src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    out, stats = workdir / "beam.out", workdir / "beam.stats.jsonl"
    cmd = [sys.executable, "-m", "onmt_optimal", "translate", "-model", str(args.model), "-src", str(src),
           "-output", str(out), "-stats_file", str(stats), *translate_flags(args)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"search_errors: onmt_translate failed:\n{proc.stderr[-3000:]}")
    outputs = out.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    if len(outputs) != len(lines) or len(records) != len(lines):
        sys.exit(f"search_errors: {len(lines)} sentences in, {len(outputs)} outputs and {len(records)} "
                 "statistics out")
    beams = []
    for output, record in zip(outputs, records):
        text, _, score = output.rpartition("\t")
        beams.append(dict(record, tokens=text.split(), output_score=float(score)))
    return beams


def rule_of(args):
    from onmt.translate.beam_search import GNMTGlobalScorer

    from onmt_optimal import options

    opt = search_options(args)
    try:
        options.validate(opt)
    except options.OptionError as err:
        sys.exit(f"search_errors: error: {err}")
    scorer = GNMTGlobalScorer(args.alpha, 0.0, args.length_penalty, "none")
    return options.scoring_rule(opt, scorer)


def summarize(records: list[dict]) -> dict:
    n = len(records)
    proved = [r for r in records if r["oracle_stop"] == "optimal"]

    def frac(k, d):
        return None if d == 0 else k / d

    beam_optimal = sum(r["beam_is_optimal"] for r in records)
    errors = sum(r["search_error"] for r in records)
    empty_proved = sum(r["oracle_empty"] for r in proved)
    return {
        "sentences": n,
        "proved": len(proved),
        "beam_optimal": beam_optimal,
        "beam_optimal_frac": frac(beam_optimal, n),
        "search_errors": errors,
        "search_error_frac": frac(errors, n),
        "unknown": sum(1 for r in records if r["oracle_stop"] != "optimal" and not r["search_error"]),
        "budget_hit": n - len(proved),
        "empty_optimum": empty_proved,
        "empty_optimum_frac_of_proved": frac(empty_proved, len(proved)),
        "empty_best_found": sum(r["oracle_empty"] for r in records),
        "beam_empty": sum(r["beam_length"] == 0 for r in records),
        "mean_nodes": frac(sum(r["nodes"] for r in records), n),
        "max_nodes": max((r["nodes"] for r in records), default=0),
        "mean_seconds": frac(sum(r["seconds"] for r in records), n),
        "mean_beam_length": frac(sum(r["beam_length"] for r in records), n),
        "mean_oracle_length": frac(sum(r["oracle_length"] for r in records), n),
        "mean_score_gain": frac(sum(r["oracle_score"] - r["seed_score"] for r in records), n),
        "max_rescore_diff": max((abs(r["beam_score"] - r["seed_score"]) for r in records), default=0.0),
    }


def main(argv=None) -> dict:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    import torch

    from onmt_optimal.exact_search import OpenNMTScorer, exact_search, load_model

    rule = rule_of(args)
    all_lines = Path(args.src).read_text(encoding="utf-8").splitlines()
    selected = [(i, line.split()) for i, line in enumerate(all_lines, 1)
                if line.split() and (args.max_src_tokens is None or len(line.split()) <= args.max_src_tokens)]
    if args.limit is not None:
        selected = selected[: args.limit]
    if not selected:
        sys.exit("search_errors: no sentence selected")

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        beams = run_beam(args, [" ".join(tokens) for _, tokens in selected], Path(tmp))
        beam_seconds = time.monotonic() - t0

    import logging

    logging.getLogger("onmt").setLevel(logging.WARNING)
    vocabs, model, _ = load_model(args.model, args.gpu)
    device = torch.device("cuda", args.gpu) if args.gpu >= 0 else torch.device("cpu")
    T = args.max_length
    records = []
    for (line_no, tokens), beam in zip(selected, beams):
        scorer = OpenNMTScorer(model, vocabs, tokens, device=device)
        if beam["src_length"] != scorer.src_len:
            sys.exit(f"search_errors: line {line_no}: the beam read {beam['src_length']} source tokens, the "
                     f"oracle {scorer.src_len} (a source transform?)")
        seed = scorer.token_ids(beam["tokens"])
        if len(seed) != beam["length"]:
            sys.exit(f"search_errors: line {line_no}: output has {len(seed)} tokens, statistics say "
                     f"{beam['length']} (a target transform?)")
        if len(seed) < T:
            seed.append(scorer.eos)
        res = exact_search(scorer, rule, src_len=scorer.src_len, max_length=T, eos=scorer.eos, seed=seed,
                           max_nodes=args.max_nodes, max_seconds=args.max_seconds)
        records.append({
            "line": line_no,
            "src_length": scorer.src_len,
            "beam_score": beam["score"],
            "beam_length": beam["length"],
            "beam_stop": beam["stop_reason"],
            "seed_score": res.seed_score,
            "oracle_score": res.score,
            "oracle_log_prob": res.log_prob,
            "oracle_length": res.length,
            "oracle_ended_with_eos": res.ended_with_eos,
            "oracle_empty": res.empty,
            "oracle_stop": res.stop_reason,
            "oracle_output": " ".join(scorer.token_strings(res.tokens)),
            "nodes": res.nodes,
            "seconds": round(res.seconds, 4),
            "search_error": res.improved,
            "beam_is_optimal": res.optimal and not res.improved,
        })
        if args.verbose:
            r = records[-1]
            print(f"{line_no:5d} |x|={r['src_length']:3d} beam {r['beam_score']:9.4f} ({r['beam_length']:2d}) "
                  f"oracle {r['oracle_score']:9.4f} ({r['oracle_length']:2d}) {r['oracle_stop']:11s} "
                  f"nodes {r['nodes']:7d}{'  SEARCH ERROR' if r['search_error'] else ''}"
                  f"{'  EMPTY' if r['oracle_empty'] else ''}", flush=True)

    summary = summarize(records)
    settings = {"model": str(args.model), "src": str(args.src), "beam_size": args.beam_size,
                "rule": rule.describe(), "max_length": T, "max_src_tokens": args.max_src_tokens,
                "max_nodes": args.max_nodes, "max_seconds": args.max_seconds,
                "beam_seconds": round(beam_seconds, 2)}
    report = {"settings": settings, "summary": summary, "sentences": records}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print_table(settings, summary)
    return report


def print_table(settings: dict, s: dict) -> None:
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    def num(x, fmt="{:.2f}"):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)

    n = s["sentences"]
    rows = [
        ("rule", settings["rule"]),
        ("beam size / T", f"{settings['beam_size']} / {settings['max_length']}"),
        ("sentences", str(n)),
        ("beam = proved global optimum", f"{s['beam_optimal']} ({pct(s['beam_optimal_frac'])})"),
        ("search errors (oracle strictly better)", f"{s['search_errors']} ({pct(s['search_error_frac'])})"),
        ("budget hit (no proof)", f"{s['budget_hit']}  (of which beam not beaten: {s['unknown']})"),
        ("proved optimum is empty", f"{s['empty_optimum']} of {s['proved']} "
                                    f"({pct(s['empty_optimum_frac_of_proved'])})"),
        ("beam answer is empty", str(s["beam_empty"])),
        ("mean |y| beam / oracle", f"{num(s['mean_beam_length'])} / {num(s['mean_oracle_length'])}"),
        ("mean score gain of oracle", num(s["mean_score_gain"], "{:.4f}")),
        ("nodes: mean / max", f"{num(s['mean_nodes'], '{:.1f}')} / {s['max_nodes']}"),
        ("oracle seconds per sentence", num(s["mean_seconds"], "{:.3f}")),
        ("max |beam score - rescored|", num(s["max_rescore_diff"], "{:.2e}")),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
