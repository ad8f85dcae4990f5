"""Speed and BLEU by precision: stock OpenNMT-py against onmt-optimal in the same precision, and what each precision
costs in BLEU, written to benchmarks/RESULTS-precision.md and a JSON file beside it.

    python scripts/bench_precision.py [--data DATA] [--lines 100] [--rounds 3] [--test-lines 0]

1. Speed: ``scripts/bench.py --precision P`` for each model of ``--models`` (default: the TVsub LSTM and the
   Multi30k transformer) and each precision of ``--precisions`` (fp32, int8: dynamic quantization, which
   OpenNMT-py 3.5.1's ``-precision int8`` does not apply; fp16: ``-precision fp16``, which runs on the CPU too),
   ``--lines`` dev sentences, beams and batches as given, without the sweep and the work counts. Ratios are
   against stock in the same precision and round (``onmt_optimal_lab.bench``).
2. BLEU: TVsub test (the first ``--test-lines``, 0: all), decoded with the shipped config
   (``configs/tvsub-zh-en/translate.yaml``, beam 5) and ``-stopping optimal`` in each precision, scored with
   sacrebleu against its references (``onmt_optimal.tools.evaluate``), with the mean steps and how many translations
   differ from fp32's.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from onmt_optimal_lab.bench.models import DATA
from onmt_optimal_lab.bench.precision import PRECISIONS, quantize, session_args

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "configs/tvsub-zh-en/translate.yaml"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=DATA, help="the shared data folder")
    parser.add_argument("--models", default="tvsub,transformer", help="scripts/bench.py --config names")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--lines", type=int, default=100, help="dev sentences a speed run decodes")
    parser.add_argument("--beams", default="5,10")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--test-lines", type=int, default=0, help="TVsub test sentences for BLEU (0: all)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "RESULTS-precision.md"))
    return parser.parse_args(argv)


def speed(args, precision: str, model: str, work: Path) -> tuple[dict, str]:
    out = work / f"{model}-{precision}.md"
    argv = [sys.executable, str(ROOT / "scripts" / "bench.py"), "--config", model, "--data", args.data,
            "--lines", str(args.lines), "--beams", args.beams, "--batches", args.batches, "--rounds",
            str(args.rounds), "--min-seconds", "0", "--sweep-lines", "0", "--no-count", "--precision", precision,
            "--out", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:  # e.g. bench.py's check that stock and ours answer alike: a finding, reported
        last = [line for line in done.stdout.splitlines() if line.startswith("batch")][-1:]
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        text = (f"# Benchmark: {model}, {precision}: the run stopped\n\n`scripts/bench.py --config {model} "
                f"--precision {precision}` stopped with `{why}`"
                + (f" after `{last[0]}`" if last else "") + ".\n")
        return {"failed": why, "last_row": last[0] if last else None}, text
    return json.loads(out.with_suffix(".json").read_text()), out.read_text()


def bleu(args, precisions: list[str], work: Path) -> list[dict]:
    import torch

    from onmt_optimal.tools.evaluate import corpus_score
    from onmt_optimal.opennmt.session import Session
    from onmt_optimal.search.scoring import StockScore
    from onmt_optimal.search.stopping import OptimalityCertificate
    from onmt_optimal.tools.text import clean_file

    torch.set_num_threads(1)
    folder = Path(args.data) / "tvsub-zh-en"
    src = clean_file(folder / "test.zh", work / "test.src", True)
    lines = src.read_text(encoding="utf-8").splitlines()
    if args.test_lines:
        lines = lines[: args.test_lines]
        src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    refs = [clean_file(r, work / r.name, True).read_text(encoding="utf-8").splitlines()[: len(lines)]
            for r in sorted(folder.glob("test.ref*.en"))]
    rows, first = [], None
    for precision in precisions:
        session = Session(["-config", CONFIG, *session_args(precision)])
        quantize(session, precision)
        records = [per_rule[0] for per_rule in session.decode(src, 5, [(StockScore("none"), OptimalityCertificate())])]
        texts = [r["text"] for r in records]
        first = texts if first is None else first
        score = corpus_score(texts, refs)
        rows.append({"precision": precision, "sentences": len(texts), "bleu": round(score.bleu, 2),
                     "length_ratio": round(score.length_ratio, 4),
                     "mean_steps": round(sum(r["steps"] for r in records) / len(records), 3),
                     "differ_from_first": sum(a != b for a, b in zip(texts, first)), "signature": score.signature})
        del session
    return rows


def main(argv=None) -> None:
    args = parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    models = [m for m in args.models.split(",") if m]
    runs, reports = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for model in models:
            for precision in precisions:
                run, text = speed(args, precision, model, work)
                runs.append({"model": model, "precision": precision, **run})
                reports.append(text.replace("\n## ", "\n### ").replace("# Benchmark:", "## Speed:", 1))
        scores = bleu(args, precisions, work)
    command = "python scripts/bench_precision.py " + " ".join(argv if argv is not None else sys.argv[1:])
    head = [f"# Benchmark: precisions on the CPU (`{command.strip()}`)", "",
            "Each speed section is `scripts/bench.py --precision P` (its command and settings in the section); its "
            "ratios are against stock OpenNMT-py decoding the same model in the same precision, in the same "
            "rounds. int8 is torch's dynamic quantization of the linear and LSTM layers, applied by the benchmark "
            "(OpenNMT-py 3.5.1's `-precision int8` decodes in float32); fp16 is `-precision fp16` on the CPU. "
            "Taken on a 2-core machine shared with other jobs: differences of a few percent are noise.", "",
            "## BLEU on TVsub test by precision", "",
            f"`{CONFIG}` (beam 5, `-length_penalty none`) with `-stopping optimal`, the first "
            f"{scores[0]['sentences']} test sentences, sacrebleu against {len(list((Path(args.data) / 'tvsub-zh-en').glob('test.ref*.en')))} "
            f"references ({scores[0]['signature']}). differ: translations other than {precisions[0]}'s.", "",
            "| precision | BLEU | length ratio | mean steps | differ |", "|---|---|---|---|---|"]
    head += [f"| {r['precision']} | {r['bleu']:.2f} | {r['length_ratio']:.3f} | {r['mean_steps']:.2f} | "
             f"{r['differ_from_first']} |" for r in scores]
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"command": command.strip(), "bleu": scores, "speed": runs},
                                                   indent=1) + "\n")
    out.write_text("\n".join(head) + "\n\n" + "\n".join(reports))


if __name__ == "__main__":
    main()
