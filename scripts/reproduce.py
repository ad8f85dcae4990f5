#!/usr/bin/env python3
"""Reproduce the paper's experiments (Tables 2-3, Figures 1-2) on one corpus with a shipped model.

    python scripts/reproduce.py --name tvsub-zh-en --config configs/tvsub-zh-en/translate.yaml \\
        --dev-src DEV.zh --dev-refs DEV.en --test-src TEST.zh --test-refs REF0 REF1 REF2 --out results/tvsub-zh-en

Any corpus and any number of references work (e.g. the LDC NIST sets of the paper). Steps:

1. clean the raw dev/test files as the training data was (``onmt_optimal.tools.text.normalize``: whitespace collapsed,
   Moses escapes undone with --unescape-moses) into work/reproduce/NAME/;
2. estimate the length ratio rho on dev, in model tokens (``onmt_optimal.tools.length_ratio``);
3. the sweep on dev: every decoder x beam sizes x rewards, one decode per beam size for all decoders that share
   the ordinary beam and one for the shrinking ones (``onmt_optimal.tools.sweep``) -> OUT/dev_sweep.json;
4. tune each decoder family's (beam, reward) on dev BLEU, the historical ``opennmt2017`` rule (the paper's
   baseline) included, decode test with it, and decode test at the fixed settings too (stock default and
   ``opennmt2017`` at b = 5 and the paper's b = 16; default, optimal stopping and ``opennmt2017`` at b = 10 and
   16 for the steps saved: ``onmt_optimal_lab.paper.reproduce``) -> OUT/test_eval.json, every test output as OUT/hyps/test.KEY.txt and
   per-sentence steps, lengths and log-probabilities in OUT/test_sentences.json (so the paired-bootstrap
   p-values can be recomputed from committed files);
5. tables with paired-bootstrap statistics, figures and OUT/README.md (``onmt_optimal_lab.paper.report``, as
   ``scripts/make_report.py`` writes them).

Progress bars (tqdm) go to stderr: one over the dev sweep's beam sizes, one over the test decodes.

Decoding runs with a fixed number of torch threads (--threads) so reruns give the same numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

from onmt_optimal_lab.paper import reproduce
from onmt_optimal.__main__ import parse_beams
from onmt_optimal.tools.length_ratio import estimate_with_model
from onmt_optimal_lab.paper.report.write import write_report
from onmt_optimal.opennmt.session import Session
from onmt_optimal.tools.sweep import run_sweep
from onmt_optimal.tools.text import clean_file

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv=None):
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
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = ROOT / "work" / "reproduce" / args.name
    work.mkdir(parents=True, exist_ok=True)
    un = args.unescape_moses
    dev_src = clean_file(args.dev_src, work / "dev.src", un)
    dev_refs = [clean_file(r, work / f"dev.ref{i}", un).read_text(encoding="utf-8").splitlines()
                for i, r in enumerate(args.dev_refs)]
    test_src = clean_file(args.test_src, work / "test.src", un)
    test_refs = [clean_file(r, work / f"test.ref{i}", un).read_text(encoding="utf-8").splitlines()
                 for i, r in enumerate(args.test_refs)]

    start = time.time()
    session = Session(["-config", args.config])
    ratio = estimate_with_model(session, dev_src.read_text(encoding="utf-8").splitlines(), dev_refs)
    print(f"length ratio on dev: {ratio}", flush=True)
    beams = parse_beams(args.beams)
    rewards = [float(r) for r in args.rewards.split(",")]
    decoders = reproduce.decoders(rewards)
    fixed_beams, steps_beams = parse_beams(args.fixed_beams), parse_beams(args.steps_beams)
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

    test_start = time.time()
    tuned, settings = reproduce.tuned_and_fixed(decoders, sweep["rows"], fixed_beams, steps_beams)
    decoded, test_signature, n_decodes = reproduce.decode_test(session, test_src, test_refs, settings,
                                                               ratio.corpus, out / "hyps")
    rows = reproduce.eval_rows(decoders, settings, tuned, sweep["rows"], decoded)
    sentences = reproduce.sentences(test_src.read_text(encoding="utf-8").splitlines(), decoded)
    (out / "test_sentences.json").write_text(json.dumps(sentences, separators=(",", ":")) + "\n")
    test_meta = dict(meta, test_src=args.test_src, test_refs=args.test_refs, unescape_moses=un,
                     fixed_beams=fixed_beams, steps_beams=steps_beams,
                     clean_test_refs=[str((work / f"test.ref{i}").relative_to(ROOT)) for i in range(len(test_refs))],
                     seconds=round(time.time() - test_start, 1), decodes=n_decodes, bleu_signature=test_signature)
    (out / "test_eval.json").write_text(json.dumps({"meta": test_meta, "rows": rows}, indent=1) + "\n")
    print(f"sweep + test: {time.time() - start:.0f} s", flush=True)
    written, why = write_report(out)
    if why:
        print(f"make_report: no paired statistics: {why}", file=sys.stderr)
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
