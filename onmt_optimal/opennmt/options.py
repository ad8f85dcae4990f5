"""The new ``onmt_translate`` flags on OpenNMT-py's command line.

``add_options`` adds one argument group to any OpenNMT-py translate parser (CLI and YAML alike, since
OpenNMT-py's configargparse reads YAML keys through the same parser). What the flags mean (their validation,
``OptionError``, and the search they select, ``Options.from_opt``) is toolkit-free and lives in
``onmt_optimal.options``, the Ray flags' in ``onmt_optimal.distributed.options``. ``validate_parsed`` is every
check of parsed translate options as ``onmt_translate`` runs them: the command's own (``check_command``: its
files, sizes, device), then OpenNMT-py's validation sequence, ours included (``patch`` adds the value checks of
our flags to ``validate_translate_opts``).
"""
from __future__ import annotations

from onmt_optimal.options import OptionError, Options, n_best_warning, scoring_rule, validate  # noqa: F401
from onmt_optimal.search.registry import STOPPING_RULES
from onmt_optimal.search.scoring import BOUNDS

GROUP_TITLE = "Optimal stopping (onmt-optimal)"
RAY_GROUP_TITLE = "Many workers (onmt-optimal, Ray)"


def check_command(opt) -> None:
    """What ``onmt_translate`` refuses before OpenNMT-py's own validation and before the model loads, with or
    without our flags: sizes OpenNMT-py crashes on (``validate_sizes``), an unreadable -src, an unwritable
    output, a file the run writes that is one it reads or another it writes (``run_files``), a missing -gpu
    device (``check_run``). Not part of ``validate_translate_opts``, which OpenNMT-py's server and training
    call with placeholder files."""
    from onmt_optimal import options
    from onmt_optimal.opennmt import run_files

    options.validate_sizes(opt)
    options.check_run(opt, reads=run_files.reads(opt), writes=run_files.writes(opt))


def validate_stock_sequence(opt) -> None:
    """OpenNMT-py's checks of parsed translate options, in ``onmt_translate``'s order (``onmt.bin.translate``):
    its own and our flags' (``validate_translate_opts``, patched), then the transforms'."""
    from onmt.utils.parse import ArgumentParser

    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)
    ArgumentParser._validate_transforms_opts(opt)
    ArgumentParser.validate_translate_opts_dynamic(opt)


def validate_parsed(opt) -> None:
    """Every check ``onmt_translate`` makes of parsed translate options, as it makes them: ``check_command``,
    then ``validate_stock_sequence``."""
    check_command(opt)
    validate_stock_sequence(opt)


def add_options(parser) -> None:
    """Register the flags on an OpenNMT-py ``ArgumentParser`` (idempotent)."""
    if any(getattr(a, "dest", None) == "stopping" for a in parser._actions):
        return
    group = parser.add_argument_group(
        GROUP_TITLE,
        "Huang, Zhao & Ma (2017), 'When to Finish? Optimal Beam Search for Neural Text Generation'. "
        "With none of these flags onmt_translate is stock OpenNMT-py.",
    )
    group.add(
        "--stopping",
        "-stopping",
        default="default",
        metavar="{" + ",".join(STOPPING_RULES) + "}",
        help="When beam search stops. 'default': OpenNMT-py's rule (the top item of the beam is finished). "
        "'optimal': the optimality certificate (Sec. 3 and 4): stop once the n_best-th best completed "
        "hypothesis scores at least the best bound any live item could still reach; returns the best "
        "hypotheses the beam could ever complete. 'exhaustive': never stop early (to max_length or until "
        "no live item is left); the reference the certificate is checked against. 'shrinking': RNNsearch's "
        "shrinking beam (each completed hypothesis removes one beam slot; stop when none is left). "
        "'opennmt2017': historical, OpenNMT-py's search of early 2017 that the paper compared against (stop when "
        "the top item of the beam completes and return that item, keeping no earlier completion).",
    )
    group.add(
        "--length_reward",
        "-length_reward",
        type=float,
        default=0.0,
        metavar="R",
        help="Length reward r. With -length_ratio: the bounded reward of Sec. 4, score(y) = log p(y|x) + "
        "r * min(l, |y|), l = length_ratio * |x|; without: He et al.'s unbounded reward, log p(y|x) + r * |y|. "
        "|y| counts output tokens without EOS, |x| source tokens as the model sees them (after transforms). "
        "Needs -length_penalty none.",
    )
    group.add(
        "--length_ratio",
        "-length_ratio",
        type=float,
        default=None,
        metavar="RHO",
        help="Estimated output/source length ratio rho (e.g. 1.27 in the paper; estimate it on a dev set "
        "with 'python -m onmt_optimal ratio'). Sets l = rho * |x| for -length_reward.",
    )
    group.add(
        "--bp_norm",
        "-bp_norm",
        action="store_true",
        help="Score with Yang et al. (2018)'s BP-norm: min(0, 1 - l/|y|) + log p(y|x)/|y|. Needs "
        "-length_ratio and -length_penalty none.",
    )
    group.add(
        "--bound",
        "-bound",
        default="exact",
        metavar="{" + ",".join(BOUNDS) + "}",
        help="Bound of a normalized score (-length_penalty avg|wu, -bp_norm) under -stopping optimal. 'exact': "
        "the best any continuation up to max_length could reach (sound, stops late). 'predicted': assume no "
        "continuation outgrows l = length_ratio * |x| (Yang et al. 2018; a heuristic, reported as "
        "stop_reason 'predicted_bound').",
    )
    group.add(
        "--stats_file",
        "-stats_file",
        default=None,
        metavar="PATH",
        help="Write one JSON line per input sentence, in input order: decoding steps, stop reason, "
        "final score, raw log-probability, output length |y|, l, source length, completed hypotheses.",
    )
    group.add(
        "--progress",
        "-progress",
        action="store_true",
        help="Show a progress bar on stderr (tqdm): sentences translated out of the lines of -src. Changes "
        "nothing else (stock search stays stock).",
    )
    ray = parser.add_argument_group(
        RAY_GROUP_TITLE,
        "Spread -src over several processes, GPUs or machines with Ray (pip install ray==2.60.0). The "
        "output and -stats_file are those of one process, byte for byte: each worker decodes exactly the batches "
        "one process would (onmt_optimal/distributed).",
    )
    ray.add(
        "--ray_workers",
        "-ray_workers",
        type=int,
        default=0,
        metavar="N",
        help="Decode with N Ray actors, each loading the model once (on its own GPU with -gpu); 0: in this "
        "process. Without -ray_address a local Ray is started on this machine for the run: it listens on "
        "loopback only (127.0.0.1), starts no dashboard, keeps its files in a temporary directory removed at "
        "the end, and is refused (saying the most this machine can run) when N exceeds the cores or the memory "
        "N copies of the model need. Each worker runs torch's thread count (OMP_NUM_THREADS, else the cores).",
    )
    ray.add(
        "--ray_address",
        "-ray_address",
        default=None,
        metavar="ADDR",
        help="Join this Ray cluster (e.g. 10.0.0.1:6379, or 'auto') instead of starting a local one. -model, "
        "and the files its config names, must be readable at the same paths on every node (relative paths from "
        "this directory); -src is read here and sent to the workers.",
    )
    ray.add(
        "--ray_gpus_per_worker",
        "-ray_gpus_per_worker",
        type=float,
        default=None,
        metavar="G",
        help="GPUs each worker reserves with -gpu (default 1; 0.5 puts two workers on one GPU). Ray picks the "
        "GPU; the worker decodes on it whatever -gpu says.",
    )
    ray.add(
        "--ray_timeout",
        "-ray_timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="With -ray_address: how long to wait for the cluster to answer before giving up with an error "
        "(default 30). An address where nothing listens is refused at once.",
    )
