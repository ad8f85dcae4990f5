#!/usr/bin/env python3
"""The main job: translate a test set with optimal stopping + bounded length reward on the shipped model.

Default: the shipped TVsub Chinese-English model (models/tvsub-zh-en, settings in
configs/tvsub-zh-en/optimal.yaml) on the TVsub test set in ../shared/data (3 references), through the stock
``onmt_translate`` console script (with a progress bar on stderr); prints BLEU (sacrebleu, on Moses-detokenized
text, as sacrebleu expects), length ratio and the search statistics, and writes everything under
work/main_job/. The shipped model comes with the repository; without it the job says so in one line.

    python scripts/main_job.py [--src FILE --refs FILE [FILE ...]] [--config YAML] [-- extra onmt_translate flags]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

from onmt_optimal.tools.evaluate import corpus_score
from onmt_optimal.tools.text import detokenize, normalize

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OUT = ROOT / "work" / "main_job"
SHARED = Path(os.environ.get("ONMT_OPTIMAL_DATA", ROOT.parent / "shared" / "data"))
TVSUB = SHARED / "tvsub-zh-en"


def summarize(hyp_path: Path, stats_path: Path, refs: list[Path] | None, clean, detok=None) -> None:
    """``clean`` cleans a reference line as the source was cleaned; ``detok`` (if any) turns a tokenized line
    into plain text, applied to hypotheses and references alike before sacrebleu sees them."""
    hyps = hyp_path.read_text(encoding="utf-8").splitlines()
    stats = [json.loads(line) for line in stats_path.read_text().splitlines()]
    reasons = collections.Counter(s["stop_reason"] for s in stats)
    print(f"sentences: {len(hyps)}   mean decoding steps: {sum(s['steps'] for s in stats) / len(stats):.2f}"
          f"   mean output length: {sum(s['length'] for s in stats) / len(stats):.2f}")
    print("stop reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    if refs:
        streams = [[clean(line) for line in r.read_text(encoding="utf-8").splitlines()] for r in refs]
        if detok is None:
            print(corpus_score(hyps, streams))
        else:
            plain = corpus_score([detok(h) for h in hyps], [[detok(line) for line in s] for s in streams])
            print(f"{plain}\n  (sacrebleu on Moses-detokenized hypotheses and references, as it expects)")
            tok = corpus_score(hyps, streams, tokenized=True)
            print(f"BLEU {tok.bleu:.2f}  length ratio {tok.length_ratio:.3f}  on the tokenized text, as results/ and "
                  "the paper (multi-bleu) score it")
    print(f"output: {hyp_path}\nstatistics: {stats_path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "tvsub-zh-en" / "optimal.yaml"))
    parser.add_argument("--src", default=str(TVSUB / "test.zh"))
    parser.add_argument("--refs", nargs="*", default=[str(TVSUB / f"test.ref{i}.en") for i in range(3)])
    parser.add_argument("extra", nargs="*", help="more onmt_translate flags (after --)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    model = ROOT / "models" / "tvsub-zh-en" / "model.pt"

    if not model.exists():
        sys.exit(f"main_job: {model.relative_to(ROOT)} is missing (it comes with the repository)")
    if not Path(args.src).is_file():
        sys.exit(f"main_job: no such source file: {args.src}")

    def clean(line: str) -> str:  # the same clean-up the training data had
        return normalize(line, unescape=True)

    src = OUT / "test.src"
    src.write_text("\n".join(clean(line) for line in Path(args.src).read_text(encoding="utf-8").splitlines())
                   + "\n", encoding="utf-8")
    cmd = [str(BIN / "onmt_translate"), "-config", args.config, "-src", str(src)]
    refs = [Path(r) for r in args.refs]
    print(f"model: {model.relative_to(ROOT)}   config: {args.config}\nsource: {args.src}")

    hyp, stats = OUT / "test.hyp", OUT / "test.stats.jsonl"
    cmd += ["-output", str(hyp), "-stats_file", str(stats), "-progress", *args.extra]
    print("$ " + " ".join(cmd), flush=True)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, env=env)
    if proc.returncode != 0:  # onmt_translate has said why, in one line
        sys.exit(proc.returncode)
    # TVsub's English is Moses-tokenized (references and so the model's output)
    summarize(hyp, stats, [r for r in refs if r.exists()], clean, detokenize)


if __name__ == "__main__":
    main()
