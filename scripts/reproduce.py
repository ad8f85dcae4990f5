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
4. tune each decoder family's (beam, reward) on dev BLEU, decode test with it -> OUT/test_eval.json;
5. tables, figures and OUT/README.md (``scripts/make_report.py``).

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
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: the same numbers on any machine, and no slowdown when a core is busy)")
    parser.add_argument("--unescape-moses", action="store_true",
                        help="undo Moses escapes in sources and references (as prepare_data.py did for training)")
    parser.add_argument("--notes", default="", help="free text copied into the report")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from onmt_optimal.__main__ import parse_beams
    from onmt_optimal.length_ratio import estimate_with_model
    from onmt_optimal.session import Session
    from onmt_optimal.sweep import decode_all, paper_decoders, run_sweep, summarize

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
    print(ratio, flush=True)
    beams = parse_beams(args.beams)
    rewards = [float(r) for r in args.rewards.split(",")]
    decoders = paper_decoders(rewards)
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
        "machine": machine, "notes": args.notes,
    }
    (out / "dev_sweep.json").write_text(json.dumps({"meta": meta, "rows": sweep["rows"]}, indent=1) + "\n")

    # tune each family on dev, then decode test at the tuned settings (decoders sharing a beam decode together)
    test_start = time.time()
    tuned = {}
    for decoder in decoders:
        rows = [r for r in sweep["rows"] if r["family"] == decoder.family]
        tuned[decoder.family] = best_setting(rows)
    wanted = {}
    for family, row in tuned.items():
        decoder = next(d for d in decoders if d.family == family and d.reward == row["reward"])
        wanted.setdefault(row["beam"], []).append(decoder)
    test_rows, test_signature = [], ""
    for beam, group in sorted(wanted.items()):
        results = decode_all(session, test_src, beam, group, ratio.corpus)
        for decoder, records in results.items():
            summary = summarize(decoder, beam, records, test_refs)
            test_signature = summary["signature"]
            dev = tuned[decoder.family]
            test_rows.append({
                "family": decoder.family, "beam": beam, "reward": decoder.reward,
                "dev_bleu": dev["bleu"], "dev_length_ratio": dev["length_ratio"],
                "test_bleu": summary["bleu"], "test_length_ratio": summary["length_ratio"],
                "test_mean_steps": summary["mean_steps"], "test_mean_log_prob": summary["mean_log_prob"],
            })
            (work / f"test.{decoder.label().replace(' ', '_')}.b{beam}.hyp").write_text(
                "".join(r["text"] + "\n" for r in records), encoding="utf-8")
    test_rows.sort(key=lambda r: [d.family for d in decoders].index(r["family"]))
    test_meta = dict(meta, test_src=args.test_src, test_refs=args.test_refs,
                     seconds=round(time.time() - test_start, 1), decodes=len(wanted) * 2,
                     bleu_signature=test_signature)
    (out / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": test_rows}, indent=1) + "\n")
    print(f"sweep + test: {time.time() - start:.0f} s", flush=True)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_report.py"), "--results", str(out)], check=True)


if __name__ == "__main__":
    main()
