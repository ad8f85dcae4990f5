#!/usr/bin/env python3
"""Reproduce the paper's experiments (Tables 2-3, Figures 1-2) on one corpus with a shipped model.

    python scripts/reproduce.py --name tvsub-zh-en --config configs/tvsub-zh-en/translate.yaml \\
        --dev-src DEV.zh --dev-refs DEV.en --test-src TEST.zh --test-refs REF0 REF1 REF2 --out results/tvsub-zh-en

Any corpus and any number of references work (e.g. the LDC NIST sets of the paper). Steps:

1. clean the raw dev/test files as the training data was (``prepare_data.normalize``: whitespace collapsed,
   Moses escapes undone with --unescape-moses) into work/reproduce/NAME/;
2. estimate the length ratio rho on dev, in model tokens (``onmt_optimal.length_ratio``);
3. the sweep on dev: every decoder x beam sizes x rewards, one decode per beam size for all decoders that share
   the ordinary beam and one for the shrinking ones (``onmt_optimal.sweep``) -> OUT/dev_sweep.json;
4. tune each decoder family's (beam, reward) on dev BLEU, decode test with it, and decode test at the fixed
   settings too (stock default at b = 5 and the paper's b = 16; default and optimal stopping at b = 10 and 16
   for the steps saved; the historical ``opennmt2017`` rule where the search core has it) -> OUT/test_eval.json,
   every test output as OUT/hyps/test.KEY.txt and per-sentence steps, lengths and log-probabilities in
   OUT/test_sentences.json (so the paired-bootstrap p-values can be recomputed from committed files);
5. tables with paired-bootstrap statistics, figures and OUT/README.md (``scripts/make_report.py``).

Progress bars (tqdm) go to stderr: one over the dev sweep's beam sizes, one over the test decodes.

Decoding runs with a fixed number of torch threads (--threads) so reruns give the same numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def clean_copy(src: str, dst: Path, unescape: bool) -> Path:
    from prepare_data import normalize

    lines = Path(src).read_text(encoding="utf-8").splitlines()
    dst.write_text("".join(normalize(line, unescape) + "\n" for line in lines), encoding="utf-8")
    return dst


HISTORICAL = "opennmt2017"  # OpenNMT-py's search of early 2017 (the paper's Fig. 1 baseline), where the core has it


def output_key(decoder, beam: int) -> str:
    """File-name key of one test output: family, reward where it has one, beam size (``optimal_reward.r1.2.b19``)."""
    return decoder.family + (f".r{decoder.reward:g}" if decoder.reward is not None else "") + f".b{beam}"


def fixed_settings(by_family: dict, fixed_beams: list[int], steps_beams: list[int]) -> list[tuple[str, int]]:
    """(family, beam) decoded on test besides the tuned settings: the stock default (and the historical rule
    where present) at ``fixed_beams`` (OpenNMT-py's b = 5, the paper's b = 16); default, optimal and historical
    at ``steps_beams`` for the steps saved per sentence."""
    out = []
    for beam in fixed_beams:
        out += [(f, beam) for f in ("default", HISTORICAL) if f in by_family]
    for beam in steps_beams:
        out += [(f, beam) for f in ("default", "optimal", HISTORICAL) if f in by_family]
    return list(dict.fromkeys(out))


def best_setting(rows: list[dict]) -> dict:
    """Highest dev BLEU; ties go to the smaller beam, then the smaller reward."""
    return max(rows, key=lambda r: (r["bleu"], -r["beam"], -(r["reward"] or 0.0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="corpus name, e.g. tvsub-zh-en")
    parser.add_argument("--config", required=True, help="onmt_translate YAML of the model (model, transforms)")
    parser.add_argument("--dev-src", required=True)
    parser.add_argument("--dev-refs", nargs="+", required=True)
    parser.add_argument("--test-src", required=True)
    parser.add_argument("--test-refs", nargs="+", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--beams", default="1-20")
    parser.add_argument("--rewards", default="0,0.5,1,1.1,1.2,1.3,1.4,1.5")
    parser.add_argument("--fixed-beams", default="5,16",
                        help="beam sizes at which the stock default is decoded on test beside the tuned settings "
                             "(OpenNMT-py's default 5, the paper's 16)")
    parser.add_argument("--steps-beams", default="10,16",
                        help="beam sizes at which default and optimal stopping are decoded on test for the steps "
                             "saved per sentence (the paper reports b = 10)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: the same numbers on any machine, and no slowdown when a core is busy)")
    parser.add_argument("--unescape-moses", action="store_true",
                        help="undo Moses escapes in sources and references (as prepare_data.py did for training)")
    parser.add_argument("--notes", action="append", default=[],
                        help="free text copied into the report (repeat for several lines)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from onmt_optimal.__main__ import parse_beams
    from onmt_optimal.length_ratio import estimate_with_model
    from onmt_optimal.session import Session
    from tqdm import tqdm

    from onmt_optimal.sweep import Decoder, decode_all, paper_decoders, run_sweep, summarize
    try:  # the search core's registry (onmt_optimal/search/), or its earlier place
        from onmt_optimal.search.registry import STOPPING_RULES
    except ImportError:
        from onmt_optimal.stopping import STOPPING_RULES

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = ROOT / "work" / "reproduce" / args.name
    work.mkdir(parents=True, exist_ok=True)
    un = args.unescape_moses
    dev_src = clean_copy(args.dev_src, work / "dev.src", un)
    dev_refs = [clean_copy(r, work / f"dev.ref{i}", un).read_text(encoding="utf-8").splitlines()
                for i, r in enumerate(args.dev_refs)]
    test_src = clean_copy(args.test_src, work / "test.src", un)
    test_refs = [clean_copy(r, work / f"test.ref{i}", un).read_text(encoding="utf-8").splitlines()
                 for i, r in enumerate(args.test_refs)]

    start = time.time()
    session = Session(["-config", args.config])
    ratio = estimate_with_model(session, dev_src.read_text(encoding="utf-8").splitlines(), dev_refs)
    print(f"length ratio on dev: {ratio}", flush=True)
    beams = parse_beams(args.beams)
    rewards = [float(r) for r in args.rewards.split(",")]
    decoders = paper_decoders(rewards)
    if HISTORICAL in STOPPING_RULES:
        decoders.append(Decoder(HISTORICAL, HISTORICAL, "logprob"))
    args.fixed_beams = parse_beams(args.fixed_beams)
    args.steps_beams = parse_beams(args.steps_beams)
    sweep = run_sweep(session, dev_src, dev_refs, beams, decoders, ratio.corpus)
    signature = sweep["rows"][0].pop("signature")
    for row in sweep["rows"]:
        row.pop("signature", None)
    machine = (f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__} "
               f"({args.threads} threads), Python {platform.python_version()}")
    meta = {
        "model": session.opt.models[0], "config": args.config, "dataset": args.name,
        "src": args.dev_src, "refs": args.dev_refs, "ratio": round(ratio.corpus, 4),
        "ratio_per_sentence_mean": round(ratio.sentence, 4), "beams": beams, "rewards": rewards,
        "bleu_signature": signature, "seconds": round(sweep["seconds"], 1), "decodes": sweep["decodes"],
        "machine": machine, "notes": args.notes, "unescape_moses": un,
    }
    (out / "dev_sweep.json").write_text(json.dumps({"meta": meta, "rows": sweep["rows"]}, indent=1) + "\n")

    # tune each family on dev; decode test at the tuned settings and at the fixed ones (decoders sharing a beam
    # decode together); every output goes to OUT/hyps/ (one line per sentence) for recomputing the statistics
    test_start = time.time()
    tuned = {}
    for decoder in decoders:
        if decoder.family == HISTORICAL:  # a baseline at fixed beams (Fig. 1, steps), not a tuned decoder
            continue
        rows = [r for r in sweep["rows"] if r["family"] == decoder.family]
        tuned[decoder.family] = best_setting(rows)
    settings = []  # (decoder, beam, setting)
    for family, row in tuned.items():
        decoder = next(d for d in decoders if d.family == family and d.reward == row["reward"])
        settings.append((decoder, row["beam"], "tuned"))
    by_family = {d.family: d for d in decoders if d.reward is None}
    for family, beam in fixed_settings(by_family, args.fixed_beams, args.steps_beams):
        settings.append((by_family[family], beam, "fixed"))
    wanted = {}
    for decoder, beam, _ in settings:
        if decoder not in wanted.setdefault(beam, []):
            wanted[beam].append(decoder)
    hyp_dir = out / "hyps"
    hyp_dir.mkdir(exist_ok=True)
    for stale in hyp_dir.glob("test.*.txt"):
        stale.unlink()
    decoded, test_signature, n_decodes = {}, "", 0
    for beam, group in tqdm(sorted(wanted.items()), desc="test decodes (beam sizes)"):
        results = decode_all(session, test_src, beam, group, ratio.corpus)
        n_decodes += len({d.shrinks for d in group})
        for decoder, records in results.items():
            summary = summarize(decoder, beam, records, test_refs)
            test_signature = summary["signature"]
            key = output_key(decoder, beam)
            decoded[key] = (summary, records)
            (hyp_dir / f"test.{key}.txt").write_text("".join(r["text"] + "\n" for r in records), encoding="utf-8")
    test_rows = []
    for decoder, beam, setting in settings:
        summary, _ = decoded[output_key(decoder, beam)]
        dev = tuned[decoder.family] if setting == "tuned" else next(
            (r for r in sweep["rows"] if r["family"] == decoder.family and r["beam"] == beam), None)
        test_rows.append({
            "family": decoder.family, "beam": beam, "reward": decoder.reward, "setting": setting,
            "dev_bleu": dev["bleu"] if dev else None, "dev_length_ratio": dev["length_ratio"] if dev else None,
            "test_bleu": summary["bleu"], "test_length_ratio": summary["length_ratio"],
            "test_mean_steps": summary["mean_steps"], "test_mean_log_prob": summary["mean_log_prob"],
            "hyp": f"hyps/test.{output_key(decoder, beam)}.txt",
        })
    order = [d.family for d in decoders]
    test_rows.sort(key=lambda r: (r["setting"] != "tuned", order.index(r["family"]), r["beam"]))
    src_lines = test_src.read_text(encoding="utf-8").splitlines()
    sentences = {
        "src_tokens": [len(line.split()) for line in src_lines],
        "outputs": {key: {"steps": [r["steps"] for r in records], "length": [r["length"] for r in records],
                          "log_prob": [round(float(r["log_prob"]), 4) for r in records]}
                    for key, (_, records) in sorted(decoded.items())},
    }
    (out / "test_sentences.json").write_text(json.dumps(sentences, separators=(",", ":")) + "\n")
    test_meta = dict(meta, test_src=args.test_src, test_refs=args.test_refs, unescape_moses=un,
                     fixed_beams=args.fixed_beams, steps_beams=args.steps_beams,
                     clean_test_refs=[str((work / f"test.ref{i}").relative_to(ROOT)) for i in range(len(test_refs))],
                     seconds=round(time.time() - test_start, 1), decodes=n_decodes, bleu_signature=test_signature)
    (out / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": test_rows}, indent=1) + "\n")
    print(f"sweep + test: {time.time() - start:.0f} s", flush=True)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_report.py"), "--results", str(out)], check=True)


if __name__ == "__main__":
    main()
