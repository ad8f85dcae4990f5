"""``python -m onmt_optimal COMMAND`` (also ``onmt-optimal COMMAND``): the package's own entry points.

    translate ARGS    onmt_translate with the onmt-optimal flags (works even without the import hook)
    ratio ...         estimate the length ratio rho on a dev set, in model tokens (--help)
    sweep ...         decode a dev set for beam sizes x rewards, one decode per beam (--help)
    install-hook      (re)write onmt_optimal.pth into site-packages so stock onmt_translate gets the flags
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def translate(argv: list[str]) -> None:
    from onmt_optimal import patch

    patch.apply()
    import onmt.bin.translate

    patch.apply_cli()
    sys.argv = ["onmt_translate", *argv]
    onmt.bin.translate.main()


def _read(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def ratio(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="onmt-optimal ratio",
        description="Estimate rho = |reference| / |source| on a dev set, in the tokens the model sees (after "
        "its transforms). Pass the model's translate options after '--', e.g. -- -config translate.yaml.")
    parser.add_argument("--src", required=True)
    parser.add_argument("--refs", nargs="+", required=True)
    parser.add_argument("translate_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    from onmt_optimal.length_ratio import estimate_with_model
    from onmt_optimal.session import Session

    session = Session([a for a in args.translate_args if a != "--"])
    print(estimate_with_model(session, _read(args.src), [_read(r) for r in args.refs]))


def sweep(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="onmt-optimal sweep",
        description="Every decoder of the paper's comparison at every beam size and reward, on a dev set: one "
        "decode per beam size (two with the shrinking beam). Writes JSON rows (BLEU, length ratio, mean model "
        "score, mean steps). Pass the model's translate options after '--'.")
    parser.add_argument("--src", required=True)
    parser.add_argument("--refs", nargs="+", required=True)
    parser.add_argument("--beams", default="1-20", help="e.g. 1-20 or 1,5,10")
    parser.add_argument("--rewards", default="0,0.5,1,1.1,1.2,1.3,1.4,1.5")
    parser.add_argument("--ratio", type=float, default=None, help="rho (default: estimated on --src/--refs)")
    parser.add_argument("--out", required=True, help="JSON file")
    parser.add_argument("translate_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    from onmt_optimal.length_ratio import estimate_with_model
    from onmt_optimal.session import Session
    from onmt_optimal.sweep import paper_decoders, run_sweep

    session = Session([a for a in args.translate_args if a != "--"])
    refs = [_read(r) for r in args.refs]
    rho = args.ratio or estimate_with_model(session, _read(args.src), refs).corpus
    result = run_sweep(session, args.src, refs, parse_beams(args.beams),
                       paper_decoders([float(r) for r in args.rewards.split(",")]), rho)
    result["meta"] = {"src": args.src, "refs": args.refs, "ratio": rho}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(result['rows'])} rows, {result['decodes']} decodes, {result['seconds']:.0f} s -> {args.out}")


def parse_beams(spec: str) -> list[int]:
    beams = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        beams += list(range(int(lo), int(hi or lo) + 1))
    return beams


def install_hook(argv: list[str]) -> None:
    from onmt_optimal.install import install_pth

    print(install_pth())


COMMANDS = {"translate": translate, "ratio": ratio, "sweep": sweep, "install-hook": install_hook}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        sys.stderr.write(__doc__)
        raise SystemExit(2)
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
