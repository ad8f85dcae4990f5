"""onmt-optimal: optimal beam search for OpenNMT-py (Huang, Zhao & Ma, 2017).

Usage: python -m onmt_optimal COMMAND [ARGS]   (also: onmt-optimal COMMAND [ARGS])

    translate ARGS    onmt_translate with the onmt-optimal flags (works even without the import hook)
    ratio ...         estimate the length ratio rho on a dev set, in model tokens (--help)
    sweep ...         decode a dev set for beam sizes x rewards, one decode per beam (--help); with
                      --tokenizer MODEL_DIR, a transformers checkpoint's (sweep --tokenizer X --help);
                      with --vllm MODEL, a vLLM model's (sweep --vllm X --help)
    install-hook      (re)write onmt_optimal.pth into site-packages so stock onmt_translate gets the flags
    uninstall-hook    remove that file (pip uninstall onmt-optimal removes the one the package ships)
    stock-translate ARGS  stock OpenNMT-py onmt_translate, for comparisons: no onmt-optimal, only the
                      fix that lets it load checkpoints on torch >= 2.6

COMMAND --help describes each command; -h/--help alone prints this text.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from onmt_optimal.option_table import BY_NAME, RAY, SWEEP, taken_by


def translate(argv: list[str]) -> None:
    from onmt_optimal.opennmt import patch

    patch.apply()
    import onmt.bin.translate

    patch.apply_cli()
    sys.argv = ["onmt_translate", *argv]
    onmt.bin.translate.main()


UNESCAPE_HELP = ("undo Moses escapes (&apos; &quot; &amp; @-@ ...) in the source and references first, as the "
                 "training data of the shipped TVsub model was cleaned (scripts/prepare_data.py --unescape-moses)")


def _session(translate_args: list[str], writes=()):
    """The model of ``translate_args``, loaded once: eole's (``-model_path``, or a ``-config`` YAML with
    ``model_path``: ``eole predict`` arguments) or OpenNMT-py's (``onmt_translate`` arguments); ``writes``: the
    files the tool writes, refused first where the run reads them (``session.load``)."""
    from onmt_optimal.tools import session

    return session.load(translate_args, writes)


def ratio(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="onmt-optimal ratio",
        description="Estimate rho = |reference| / |source| on a dev set, in the tokens the model sees (after "
        "its transforms). Prints one line starting '-length_ratio RHO' (OpenNMT-py, eole) or 'length_ratio=RHO' "
        "(--tokenizer: transformers, vLLM): pass that RHO (the corpus ratio). Pass the model's translate options "
        "after '--', e.g. -- -config translate.yaml (onmt_translate's; or eole predict's, e.g. -- -model_path "
        "MODEL_DIR); or, for a transformers or vLLM model, --tokenizer MODEL_DIR.")
    parser.add_argument("--src", required=True)
    parser.add_argument("--refs", nargs="+", required=True)
    parser.add_argument("--unescape-moses", action="store_true", help=UNESCAPE_HELP)
    parser.add_argument("--tokenizer", "--hf", metavar="MODEL_DIR", help="a transformers or vLLM checkpoint (or "
                        "its tokenizer's folder): count tokens with its tokenizer; no '--' options then")
    parser.add_argument("translate_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    from onmt_optimal import failures

    failures.run(f"{PROG} ratio", lambda: _ratio(args))


def _ratio(args) -> None:
    """The files read (and checked: UTF-8, one reference a source line) before the model loads."""
    from onmt_optimal.tools.length_ratio import estimate_with_model, read_corpus

    src, refs = read_corpus(args.src, args.refs, args.unescape_moses)
    _warn_text("ratio", args, src, refs)
    if args.tokenizer is not None:
        from onmt_optimal.errors import OptionError
        from onmt_optimal.tools.length_ratio import estimate_with_tokenizer

        if [a for a in args.translate_args if a != "--"]:
            raise OptionError("--tokenizer counts with a transformers or vLLM tokenizer: give no '--' translate "
                              "options with it")
        print(estimate_with_tokenizer(args.tokenizer, src, refs))
        return
    print(estimate_with_model(_session(args.translate_args), src, refs))


def _warn_text(command: str, args, src_lines: list[str], refs: list[list[str]]) -> None:
    """One line on stderr for each problem of the files read: Moses escapes left (without --unescape-moses),
    source and references split into tokens otherwise (``length_ratio.tokenization_warnings``)."""
    from onmt_optimal.tools.length_ratio import escape_warning, tokenization_warnings

    warnings = [] if args.unescape_moses else [escape_warning(args.src, args.refs, src_lines, refs)]
    warnings += tokenization_warnings(args.src, args.refs, src_lines, refs)
    for warning in filter(None, warnings):
        sys.stderr.write(f"{PROG} {command}: warning: {warning}\n")


#: the sweep's model options that pick its toolkit (before any '--'): a transformers checkpoint, a vLLM model
MODEL_FLAGS = {"--tokenizer": "hf", "--hf": "hf", "--vllm": "vllm"}


def _sweep_kind(argv: list[str]) -> str | None:
    """Which sweep ``argv`` (before any '--') asks for: "vllm", "hf", or None (OpenNMT-py and eole)."""
    head = argv[:argv.index("--")] if "--" in argv else argv
    named = {MODEL_FLAGS.get(a.split("=", 1)[0]) for a in head} - {None}
    return "vllm" if "vllm" in named else named.pop() if named else None


def _sweep_parser(description: str, beams: str, best_flags: tuple[str, ...], best_help: str,
                  out_required: bool = False) -> argparse.ArgumentParser:
    """The parser of a sweep with the arguments every sweep takes: the dev set, the grid, rho, the outputs (the
    best setting's file under ``best_flags``, dest ``best``), progress and the cleaning of the text."""
    parser = argparse.ArgumentParser(prog=f"{PROG} sweep", description=description)
    parser.add_argument("--src", required=True, help="the dev set's inputs, a line each, as the model gets them")
    parser.add_argument("--refs", nargs="+", required=True, help="reference files, a line per --src line")
    parser.add_argument("--beams", default=beams, help="e.g. 1-20 or 1,5,10 (default: %(default)s)")
    parser.add_argument("--rewards", default="0,0.5,1,1.1,1.2,1.3,1.4,1.5", metavar="R,R,...",
                        help="length rewards r, comma-separated numbers >= 0 (default: %(default)s): rows of optimal "
                        "stopping with the bounded reward r at each b (OpenNMT-py, eole: for each r > 0, and a "
                        "shrinking-beam row)")
    _table_argument(parser, BY_NAME["length_ratio"], "--length-ratio")
    parser.add_argument("--out", required=out_required, help="JSON file: the rows, the best one and its setting")
    parser.add_argument(*best_flags, dest="best", metavar="FILE", help=best_help)
    parser.add_argument("--plot", metavar="FILE.png", help="draw BLEU, length ratio and mean steps against b, a "
                        "line per decoder and r (needs matplotlib: requirements-plots.txt)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    parser.add_argument("--unescape-moses", action="store_true", help=UNESCAPE_HELP)
    return parser


def sweep(argv: list[str]) -> None:
    kind = _sweep_kind(argv)
    if kind is not None:
        {"hf": hf_sweep, "vllm": vllm_sweep}[kind](argv)
        return
    parser = _sweep_parser(
        "Every decoder of the paper's comparison at every beam size and reward, on a dev set: one decode per beam "
        "size (two with the shrinking beam), the paper's baseline (opennmt2017) included. Prints a table "
        "(decoder, b, r, BLEU, length ratio, mean steps) and the best setting as YAML options; writes JSON rows "
        "(--out), and optionally the YAML (--yaml) and a figure (--plot). Pass the model's translate options "
        "after '--'; for a transformers checkpoint, --tokenizer MODEL_DIR, for a vLLM model, --vllm MODEL "
        "(sweep --vllm X --help).", "1-20", ("--yaml",), "write the best setting's options as YAML for "
        "onmt_translate -config / eole predict -config", out_required=True)
    for option in taken_by(SWEEP, RAY):
        _table_argument(parser, option)
    parser.add_argument("translate_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    from onmt_optimal import failures

    failures.run(f"{PROG} sweep", lambda: _sweep_ray(args) if args.ray_workers else _sweep(args))


def _decodes_arguments(parser, max_flag: str, batch: int) -> None:
    """The transformers and vLLM sweeps' decode settings: the most tokens an answer takes, inputs a call."""
    parser.add_argument(max_flag, dest="max_tokens", type=int, default=128, metavar="N",
                        help="the most tokens an answer takes (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=batch, metavar="N",
                        help="inputs a decoding call (default: %(default)s)")


def hf_sweep(argv: list[str]) -> None:
    """``sweep --tokenizer MODEL_DIR``: the sweep of a transformers checkpoint (``tools.hf_sweep``)."""
    parser = _sweep_parser(
        "The sweep for a transformers checkpoint: the model loads once (on the CPU) and decodes the dev set at "
        "every beam size with transformers' own rule (stopping=\"default\", its default length_penalty) and with "
        "custom_generate=optimal_beam_search, stopping=\"optimal\" for every reward r. Prints the table and the "
        "best setting as keyword arguments of generate; writes JSON rows (--out), the keyword arguments "
        "(--kwargs) and a figure (--plot).", "1,5,10", ("--kwargs", "--yaml"),
        "write the best setting as keyword arguments of generate")
    parser.add_argument("--tokenizer", "--hf", metavar="MODEL_DIR", required=True,
                        help="the transformers checkpoint's folder (or a Hub name in the local cache)")
    _decodes_arguments(parser, "--max-new-tokens", 16)
    args = parser.parse_args(argv)
    from onmt_optimal import failures

    failures.run(f"{PROG} sweep", lambda: _hf_sweep(args))


def vllm_sweep(argv: list[str]) -> None:
    """``sweep --vllm MODEL``: the sweep of a vLLM model (``tools.vllm_sweep``)."""
    parser = _sweep_parser(
        "The sweep for a vLLM model: one vllm.LLM starts for the whole sweep and decodes the dev set at every "
        "beam size with vLLM's own beam search (stock BeamSearchParams) and with onmt_optimal.vllm's "
        "optimal_beam_search, length_penalty=0, stopping=\"optimal\" for every reward r. Prints the table and the "
        "best setting as the call that decodes with it (and a server request's fields); writes JSON rows "
        "(--out), that call (--kwargs) and a figure (--plot).", "1,5,10", ("--kwargs",),
        "write the best setting as the call (and the server request's fields) that decode with it")
    parser.add_argument("--vllm", metavar="MODEL", required=True, help="the model's folder (or a Hub name)")
    _decodes_arguments(parser, "--max-tokens", 256)
    parser.add_argument("--dtype", help="vLLM's dtype (default: vLLM's; float32 on its CPU build)")
    parser.add_argument("--max-model-len", type=int, metavar="N", help="vLLM's max_model_len: prompt and answer "
                        "tokens (default: the model's)")
    parser.add_argument("--enforce-eager", action="store_true", default=None, help="vLLM's enforce_eager (on its "
                        "CPU build)")
    parser.add_argument("--gpu-memory-utilization", type=float, metavar="F", help="vLLM's share of the device's "
                        "memory (on its CPU build, of the host's, e.g. 0.1)")
    args = parser.parse_args(argv)
    from onmt_optimal import failures

    failures.run(f"{PROG} sweep", lambda: _vllm_sweep(args))


def _model_sweep_inputs(args, model_flag: str, model: str):
    """The transformers and vLLM sweeps' arguments and files, checked before the model loads (``_sweep_inputs``),
    and ``model`` a folder where it looks like a path."""
    from onmt_optimal.errors import OptionError

    if os.sep in model and not os.path.isdir(model):
        raise OptionError(f"{model_flag} {model}: no such folder; give the checkpoint's folder")
    for flag, value in (("--max-new-tokens" if model_flag != "--vllm" else "--max-tokens", args.max_tokens),
                        ("--batch-size", args.batch_size)):
        if value < 1:
            raise OptionError(f"{flag} must be at least 1 (got {value})")
    return _sweep_inputs(args, [("--out", args.out), ("--kwargs", args.best), ("--plot", args.plot)])


def _hf_sweep(args) -> None:
    """Arguments and files checked before the model loads; outputs written whole, together (``_finish_sweep``)."""
    from onmt_optimal.tools import hf_sweep as hf
    from onmt_optimal.tools.length_ratio import estimate_with_tokenizer

    beams, rewards, src_lines, refs = _model_sweep_inputs(args, "--tokenizer", args.tokenizer)
    model, tok = hf.load(args.tokenizer)
    rho = args.ratio if args.ratio is not None else estimate_with_tokenizer(args.tokenizer, src_lines, refs).corpus
    result = hf.run_hf_sweep(model, tok, src_lines, refs, beams, rewards, rho, args.max_tokens,
                             args.batch_size, progress=not args.no_progress)
    _finish_sweep(args, result, rho, {"model": args.tokenizer, "max_new_tokens": args.max_tokens}, "--kwargs",
                  lambda row: hf.settings(row, rho, args.max_tokens),
                  lambda row: hf.snippet(row, rho, args.max_tokens),
                  "its keyword arguments of generate", lambda row: hf.kwargs_line(row, rho, args.max_tokens))


def _vllm_sweep(args) -> None:
    """As ``_hf_sweep``, on one ``vllm.LLM`` (stopped at the end, however the sweep ends)."""
    from onmt_optimal.tools import vllm_sweep as vs
    from onmt_optimal.tools.length_ratio import estimate_with_tokenizer

    beams, rewards, src_lines, refs = _model_sweep_inputs(args, "--vllm", args.vllm)
    rho = args.ratio if args.ratio is not None else estimate_with_tokenizer(args.vllm, src_lines, refs).corpus
    llm = vs.load(args.vllm, {key: getattr(args, key) for key in vs.ENGINE})
    try:
        result = vs.run_vllm_sweep(llm, src_lines, refs, beams, rewards, rho, args.max_tokens, args.batch_size,
                                   progress=not args.no_progress)
    finally:
        vs.close(llm)
    _finish_sweep(args, result, rho, {"model": args.vllm, "max_tokens": args.max_tokens}, "--kwargs",
                  lambda row: vs.settings(row, rho, args.max_tokens),
                  lambda row: vs.snippet(row, rho, args.max_tokens),
                  "the call that decodes with it", lambda row: vs.call_line(row, rho, args.max_tokens))


def _table_argument(parser, option, *aliases: str) -> None:
    """``option`` (``option_table``) as the sweep's ``--name`` argument (and ``aliases``)."""
    parser.add_argument(f"--{option.name_for(SWEEP).replace('_', '-')}", *aliases, type=option.type,
                        default=option.default_for(SWEEP), metavar=option.metavar_for(SWEEP),
                        help=option.help_for(SWEEP))


def _sweep_inputs(args, outs: list[tuple[str, str | None]], translate_args: list[str] = ()):
    """The beam sizes, rewards and files of a sweep's arguments, every one checked before a model loads
    (``tool_args``): ``outs`` (``(flag, path)``, None where not asked) writable, none a file the run reads, no two
    the same; a --src of no line is refused: no row could be written. Warnings on the text: ``_warn_text``."""
    from onmt_optimal.errors import OptionError
    from onmt_optimal.tools import args as tool_args
    from onmt_optimal.tools.length_ratio import RatioError, read_corpus

    beams, rewards = tool_args.parse_beams(args.beams), tool_args.parse_rewards(args.rewards)
    tool_args.check_ratio(args.ratio)
    if hasattr(args, "ray_workers"):
        tool_args.check_ray(args.ray_workers, args.ray_gpus_per_worker)
    outs = [(flag, path) for flag, path in outs if path is not None]
    for i, (flag, path) in enumerate(outs):
        try:
            tool_args.check_out(path, args.src, args.refs, list(translate_args))
        except OptionError as err:
            raise OptionError(str(err).replace("--out ", f"{flag} ", 1)) from None
        for other, target in outs[:i]:
            if os.path.abspath(target) == os.path.abspath(path):
                raise OptionError(f"{flag} {path} is also {other}: name another file")
    if args.plot is not None:
        from onmt_optimal.tools.sweep_report import check_plot

        check_plot()
    src_lines, refs = read_corpus(args.src, args.refs, args.unescape_moses)
    _warn_text("sweep", args, src_lines, refs)
    if not src_lines:
        raise RatioError(f"--src {args.src} has no line: there is nothing to sweep")
    return beams, rewards, src_lines, refs


def _onmt_sweep_inputs(args):
    return _sweep_inputs(args, [("--out", args.out), ("--yaml", args.best), ("--plot", args.plot)],
                         args.translate_args)


def _sweep(args) -> None:
    """The arguments and files read (and checked: UTF-8, one reference a source line) before the model loads."""
    import tempfile

    from onmt_optimal.tools import args as tool_args
    from onmt_optimal.tools.length_ratio import estimate_with_model
    from onmt_optimal.tools.sweep import run_sweep, sweep_decoders

    un = args.unescape_moses
    beams, rewards, src_lines, refs = _onmt_sweep_inputs(args)
    session = _session(args.translate_args, [("--out", args.out)])
    tool_args.parse_rewards(args.rewards, getattr(session.translator, "max_length", None))
    rho = args.ratio if args.ratio is not None else estimate_with_model(session, src_lines, refs).corpus
    with tempfile.TemporaryDirectory() as tmp:
        src = args.src
        if un:  # the model reads a file: decode a cleaned copy
            src = str(Path(tmp) / "src")
            Path(src).write_text("".join(line + "\n" for line in src_lines), encoding="utf-8")
        result = run_sweep(session, src, refs, beams, sweep_decoders(rewards), rho, progress=not args.no_progress)
    _write_sweep(args, result, rho)


def _sweep_ray(args) -> None:
    from onmt_optimal.distributed.cluster import WorkerError
    from onmt_optimal.opennmt.checkpoint import CheckpointError
    from onmt_optimal.errors import OptionError
    from onmt_optimal.tools.sweep import run_sweep_ray, sweep_decoders

    from onmt_optimal.tools import session

    beams, rewards, src_lines, refs = _onmt_sweep_inputs(args)
    session.check(args.translate_args, [("--out", args.out)])
    try:
        result, rho = run_sweep_ray([a for a in args.translate_args if a != "--"], src_lines, refs, beams,
                                    sweep_decoders(rewards), args.ratio, args.ray_workers, args.ray_address,
                                    args.ray_gpus_per_worker, progress=not args.no_progress)
    except OptionError as err:
        sys.stderr.write(f"{PROG} sweep: error: {err}\n")
        raise SystemExit(2)
    except (CheckpointError, WorkerError) as err:
        sys.stderr.write(f"{PROG} sweep: error: {err}\n")
        raise SystemExit(1)
    _write_sweep(args, result, rho)


def _write_sweep(args, result: dict, rho: float) -> None:
    """The OpenNMT-py and eole sweep's outputs (``_finish_sweep``): the best setting as YAML options."""
    from onmt_optimal.tools import sweep_report

    _finish_sweep(args, result, rho, {}, "--yaml", lambda row: sweep_report.settings(row, rho),
                  lambda row: sweep_report.yaml_snippet(row, rho), "its options", certified=("optimal",))


def _finish_sweep(args, result: dict, rho: float, meta: dict, best_flag: str, settings, snippet, what: str,
                  line=None, certified: tuple[str, ...] = ()) -> None:
    """Every sweep's end: ``result`` gets ``meta`` (``meta`` first, then the files and rho) and ``best`` (the row's
    index and ``settings(row)``); ``--out``, the best setting's file (``best_flag``: ``snippet(row)``) and
    ``--plot`` are written
    whole or not at all, together (``atomic``; a result of no row leaves every earlier file as it was, and
    ``--out`` is strict JSON); then the table, the best row and its setting (``what``), and, where that row stops
    otherwise than by the certificate, the best row of optimal stopping (``certified`` families besides
    ``optimal_reward``; ``line(row)`` its setting in a line)."""
    from onmt_optimal import atomic
    from onmt_optimal.failures import Fault
    from onmt_optimal.tools import sweep_report

    rows = result["rows"]
    files = [("--out", args.out), (best_flag, args.best), ("--plot", args.plot)]
    if not rows:
        asked = [f"{flag} {path}" for flag, path in files if path is not None]
        raise Fault(f"the sweep gave no row; {', '.join(asked)} {'was' if len(asked) == 1 else 'were'} left as "
                    f"{'it was' if len(asked) == 1 else 'they were'}")
    result["meta"] = dict(meta, src=args.src, refs=args.refs, ratio=rho, unescape_moses=args.unescape_moses)
    top = sweep_report.best(rows)
    result["best"] = {"row": rows.index(top), "settings": settings(top)}
    best_text = snippet(top)
    with atomic.Outputs() as outputs:
        for (flag, path), text in zip(files, (json.dumps(result, indent=1, allow_nan=False) + "\n", best_text)):
            if path is not None:
                out = atomic.TextFile(outputs, flag, path)
                out.write(text)
                out.close()
        if args.plot is not None:
            sweep_report.plot(rows, outputs.path("--plot", args.plot))
        outputs.commit()
    sys.stdout.write(sweep_report.table(rows))
    print(f"best: {sweep_report.label(top)} (BLEU {top['bleu']:.2f}); {what}:")
    sys.stdout.write(best_text)
    mine = [row for row in rows if row["family"] in certified + ("optimal_reward",)]
    if mine and top not in mine:
        best_mine = sweep_report.best(mine)
        print(f"best with optimal stopping: {sweep_report.label(best_mine)} (BLEU {best_mine['bleu']:.2f})"
              + (f": {line(best_mine)}" if line is not None else ""))
    written = " ".join(path for _, path in files if path is not None)
    print(f"{len(rows)} rows, {result['decodes']} decodes, {result['seconds']:.0f} s"
          + (f" -> {written}" if written else ""))


def parse_beams(spec: str) -> list[int]:
    """``--beams``' sizes (``tool_args.parse_beams``: an ``OptionError`` line for a bad one)."""
    from onmt_optimal.tools.args import parse_beams as parse

    return parse(spec)


def install_hook(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="onmt-optimal install-hook",
        description="(Re)write onmt_optimal.pth into this environment's site-packages. The file is one line that "
        "installs an import hook: every process that imports OpenNMT-py (or eole) gets it patched, so the stock "
        "onmt_translate (eole predict) and its YAML configs take the onmt-optimal flags. 'pip install' of "
        "onmt-optimal (editable or not) ships the file itself and 'pip uninstall' removes it; this command is "
        "for installs made otherwise. Set ONMT_OPTIMAL_DISABLE=1 in a process for the unpatched toolkit.")
    parser.add_argument("--site-packages", default=None, metavar="DIR",
                        help="where to write it (default: this interpreter's purelib directory)")
    args = parser.parse_args(argv)
    from onmt_optimal.opennmt.install import HookFileError, install_pth

    try:
        print(install_pth(args.site_packages))
    except HookFileError as err:
        sys.stderr.write(f"{PROG} install-hook: error: {err}\n")
        raise SystemExit(1)


def uninstall_hook(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="onmt-optimal uninstall-hook",
        description="Remove onmt_optimal.pth from this environment's site-packages: no process started afterwards "
        "gets the import hook. 'pip uninstall onmt-optimal' removes the file the package shipped; this command "
        "is for a file written by install-hook (or left by an older install).")
    parser.add_argument("--site-packages", default=None, metavar="DIR",
                        help="where to remove it from (default: this interpreter's purelib directory)")
    args = parser.parse_args(argv)
    from onmt_optimal.opennmt.install import PTH_NAME, HookFileError, remove_pth, site_packages

    try:
        removed = remove_pth(args.site_packages)
    except HookFileError as err:
        sys.stderr.write(f"{PROG} uninstall-hook: error: {err}\n")
        raise SystemExit(1)
    print(f"removed {removed}" if removed else f"no {PTH_NAME} in {site_packages(args.site_packages)}: nothing removed")


def stock_translate(argv: list[str]) -> None:
    if argv == ["--help"]:
        sys.stdout.write("usage: onmt-optimal stock-translate ONMT_TRANSLATE_ARGS\n\nStock OpenNMT-py 3.5.1 "
                         "onmt_translate, for comparisons: the import hook is withdrawn, so none of onmt-optimal "
                         "runs; only torch >= 2.6's checkpoint loading is fixed (argparse.Namespace allowed), without "
                         "which stock OpenNMT-py loads no checkpoint. onmt_translate's own options: "
                         "stock-translate -h.\n")
        return
    from onmt_optimal.opennmt.stock import AlreadyImported, main as stock_main

    try:
        stock_main(argv)
    except AlreadyImported as err:
        sys.stderr.write(f"{PROG} stock-translate: error: {err}\n")
        raise SystemExit(2)


COMMANDS = {"translate": translate, "ratio": ratio, "sweep": sweep, "install-hook": install_hook,
            "uninstall-hook": uninstall_hook, "stock-translate": stock_translate}
PROG = "onmt-optimal"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(__doc__.lstrip())
        return
    if not argv:
        sys.stderr.write(__doc__.lstrip())
        raise SystemExit(2)
    if argv[0] not in COMMANDS:
        sys.stderr.write(f"{PROG}: error: unknown command {argv[0]!r} (choose from {', '.join(COMMANDS)}; "
                         f"{PROG} --help describes them)\n")
        raise SystemExit(2)
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
