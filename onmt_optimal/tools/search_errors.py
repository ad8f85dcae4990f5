"""Search errors of beam search: the beam's answer against the exact search's global optimum, sentence by sentence.

The beam runs as ``python -m onmt_optimal translate`` (``run_beam``: ``-stopping optimal -with_score -stats_file``,
``-max_length T -max_length_ratio 0`` so that T does not depend on batching); the oracle is ``exact_search``
(depth-first branch and bound) on the same model and the same rule (``rule_of``), seeded with the beam's answer,
under a node and a time budget (``oracle``). Scores are compared on the oracle's own arithmetic: the beam's
answer is rescored with batch size 1 (``seed_score``). A fault (the translation fails, the beam and the oracle
read other tokens) raises ``SearchErrorsError`` with its one line.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import torch

from onmt_optimal import options
from onmt_optimal.opennmt import options as opennmt_options
from onmt_optimal.option_table import BY_NAME, TABLE
from onmt_optimal.search import scoring
from onmt_optimal.tools.exact_search import OpenNMTScorer, exact_search


class SearchErrorsError(Exception):
    """What stops the measurement, in one line."""


def search_options(args) -> Namespace:
    """The onmt_translate options of the beam, as a namespace OpenNMT-py's record reads (``opennmt.options``)."""
    return Namespace(stopping="optimal", length_penalty=args.length_penalty, alpha=args.alpha,
                     **{**_score_options(args), "bound": "exact"}, coverage_penalty="none", beta=0.0)


def _score_options(args) -> dict:
    """The values in ``args`` of the options the scoring rules read (``search.scoring.option_names``)."""
    return {name: getattr(args, name, BY_NAME[name].default) for name in scoring.option_names()}


def translate_flags(args) -> list[str]:
    flags = ["-beam_size", str(args.beam_size), "-stopping", "optimal", "-length_penalty", args.length_penalty,
             "-with_score", "-max_length", str(args.max_length), "-max_length_ratio", "0", "-gpu", str(args.gpu)]
    if args.length_penalty != "none":
        flags += ["-alpha", str(args.alpha)]
    values = {**_score_options(args), "bound": "exact"}
    for option in TABLE:  # the scores' options given, in the table's order (a switch without a value)
        value = values.get(option.name, option.default)
        if option.name in values and value != option.default:
            flags += [f"-{option.name}"] if value is True else [f"-{option.name}", str(value)]
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
        raise SearchErrorsError(f"onmt_translate failed:\n{proc.stderr[-3000:]}")
    outputs = out.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    if len(outputs) != len(lines) or len(records) != len(lines):
        raise SearchErrorsError(f"{len(lines)} sentences in, {len(outputs)} outputs and {len(records)} "
                 "statistics out")
    beams = []
    for output, record in zip(outputs, records):
        text, _, score = output.rpartition("\t")
        beams.append(dict(record, tokens=text.split(), output_score=float(score)))
    return beams


def rule_of(args):
    """The scoring rule of the beam's options, as ``onmt_translate`` would build it."""
    from onmt.translate.beam_search import GNMTGlobalScorer

    own, flags = opennmt_options.read_parsed(search_options(args))
    try:
        opennmt_options.validate(own, flags)
    except options.OptionError as err:
        raise SearchErrorsError(f"error: {err}") from None
    scorer = GNMTGlobalScorer(args.alpha, 0.0, args.length_penalty, "none")
    return options.scoring_rule(own, flags, scorer)


def oracle(args, rule, model, vocabs, selected: list[tuple[int, list[str]]], beams: list[dict],
           on_record=None) -> list[dict]:
    """One record per selected ``(line number, source tokens)``: the beam's answer and score against the
    oracle's, seeded with it; ``on_record(record)`` is called as each is done."""
    device = torch.device("cuda", args.gpu) if args.gpu >= 0 else torch.device("cpu")
    T = args.max_length
    records = []
    for (line_no, tokens), beam in zip(selected, beams):
        scorer = OpenNMTScorer(model, vocabs, tokens, device=device)
        if beam["src_length"] != scorer.src_len:
            raise SearchErrorsError(f"line {line_no}: the beam read {beam['src_length']} source tokens, the "
                     f"oracle {scorer.src_len} (a source transform?)")
        seed = scorer.token_ids(beam["tokens"])
        if len(seed) != beam["length"]:
            raise SearchErrorsError(f"line {line_no}: output has {len(seed)} tokens, statistics say "
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
        if on_record is not None:
            on_record(records[-1])

    return records


def row_text(r: dict) -> str:
    """One sentence's record as a line (``--verbose``)."""
    return (f"{r['line']:5d} |x|={r['src_length']:3d} beam {r['beam_score']:9.4f} ({r['beam_length']:2d}) "
            f"oracle {r['oracle_score']:9.4f} ({r['oracle_length']:2d}) {r['oracle_stop']:11s} "
            f"nodes {r['nodes']:7d}{'  SEARCH ERROR' if r['search_error'] else ''}"
            f"{'  EMPTY' if r['oracle_empty'] else ''}")


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
