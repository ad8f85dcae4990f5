"""The new ``onmt_translate`` flags, their validation, and the search they select.

``add_options`` adds one argument group to any OpenNMT-py translate parser (CLI and YAML alike, since
OpenNMT-py's configargparse reads YAML keys through the same parser). ``SearchConfig.from_opt`` turns the
parsed options into a scoring rule and a stopping rule, or says that stock OpenNMT-py search is asked for.
Every impossible combination raises ``OptionError`` with a one-line message.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass

from onmt_optimal.search import registry
from onmt_optimal.search.registry import STOPPING_RULES
from onmt_optimal.search.scoring import BOUNDS, ScoringRule
from onmt_optimal.search.stopping import StoppingRule

GROUP_TITLE = "Optimal stopping (onmt-optimal)"
RAY_GROUP_TITLE = "Many workers (onmt-optimal, Ray)"


class OptionError(ValueError):
    """A flag value or combination that cannot be honoured; the message is one line, fit for the user."""


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
        "Spread -src over several processes, GPUs or machines with Ray (pip install 'onmt-optimal[ray]'). The "
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
        "process. Without -ray_address a local Ray is started on this machine.",
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


@dataclass
class SearchConfig:
    """What to run: (scoring, stopping) rules sharing one beam, or stock OpenNMT-py search when ``stock``.

    The first rule answers on the output; the others (the sweep's) only in ``rule_results``."""

    stock: bool
    rules: list
    stats_file: str | None = None
    #: keep every rule's per-line answer (``CertifiedTranslator._rule_results``), for the tools
    collect: bool = False
    #: where the search's bookkeeping lives (``search.Beam``): None, on the model's device; "cpu", on the host
    #: with one packed transfer a step (the benchmark's ``optimal-host`` variant on an accelerator)
    host: str | None = None
    #: a beam of one item is the toolkit's own beam search, scored afterwards (``search.beam_of_one``, where
    #: ``lineage.beam_of_one`` allows); False runs the core there too (the tests compare the two)
    beam_of_one: bool = True

    @property
    def scoring(self) -> ScoringRule | None:
        return self.rules[0][0] if self.rules else None

    @property
    def stopping(self) -> StoppingRule | None:
        return self.rules[0][1] if self.rules else None

    @classmethod
    def from_opt(cls, opt, global_scorer) -> "SearchConfig":
        validate(opt)
        stopping_name = getattr(opt, "stopping", "default")
        reward = getattr(opt, "length_reward", 0.0)
        bp_norm = getattr(opt, "bp_norm", False)
        stats_file = getattr(opt, "stats_file", None)
        if stopping_name == "default" and reward == 0 and not bp_norm and not stats_file:
            return cls(stock=True, rules=[])
        warning = n_best_warning(opt)
        if warning:
            sys.stderr.write(f"onmt_translate: warning: {warning}\n")
        rule = (scoring_rule(opt, global_scorer), STOPPING_RULES[stopping_name]())
        return cls(stock=False, rules=[rule], stats_file=stats_file)


def n_best_warning(opt) -> str | None:
    """One line when -n_best asks for more hypotheses than the chosen beam can complete, else None.

    A beam of one item completes exactly one hypothesis (every rule stops when its one item completes), and a
    shrinking beam of b items at most b; the n-best list is then padded with repeats of the last hypothesis,
    since OpenNMT-py expects exactly n_best answers (README, "Known limits")."""
    n_best = getattr(opt, "n_best", 1)
    beam = getattr(opt, "beam_size", 1)
    if beam == 1 and n_best > 1:
        holds = "a beam of one item completes one hypothesis"
    elif getattr(opt, "stopping", "default") == "shrinking" and n_best > beam:
        holds = f"a shrinking beam of {beam} items completes at most {beam}"
    else:
        return None
    return (f"-n_best {n_best} exceeds what the beam can hold ({holds}): each n-best list is padded with "
            f"repeats of its last hypothesis")


def scoring_rule(opt, global_scorer) -> ScoringRule:
    """The scoring rule the (validated) options ask for (``search.registry.scoring_rule``)."""
    return registry.scoring_rule(
        length_penalty=getattr(opt, "length_penalty", "none") if global_scorer.has_len_pen else "none",
        alpha=global_scorer.alpha, coverage=global_scorer.has_cov_pen, reward=getattr(opt, "length_reward", 0.0),
        ratio=getattr(opt, "length_ratio", None), bp_norm=getattr(opt, "bp_norm", False),
        bound=getattr(opt, "bound", "exact"))


def _check_writable(flag: str, path: str | None) -> None:
    """A file we will write at the end must have a directory to go to: say so before the model loads."""
    if not path or path in (os.devnull, "-"):
        return
    if os.path.isdir(path):
        raise OptionError(f"{flag} {path} is a directory, not a file")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise OptionError(f"{flag} {path} is not writable")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OptionError(f"{flag} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OptionError(f"{flag} {path}: directory {parent} is not writable")


def _check_readable(flag: str, path: str | None) -> None:
    if not path or path in (os.devnull, "-"):
        return
    if not os.path.exists(path):
        raise OptionError(f"{flag} {path}: no such file")
    if os.path.isdir(path):
        raise OptionError(f"{flag} {path} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise OptionError(f"{flag} {path} is not readable")


def validate(opt) -> None:
    """Raise ``OptionError`` for any value or combination the search cannot honour, for a -src that cannot be
    read and for a -stats_file or -output that could not be written (checked here, before the model loads,
    rather than after the decode)."""
    _check_readable("-src", getattr(opt, "src", None))
    _check_writable("-stats_file", getattr(opt, "stats_file", None))
    _check_writable("-output", getattr(opt, "output", None))
    validate_workers(opt)
    stopping = getattr(opt, "stopping", "default")
    reward = getattr(opt, "length_reward", 0.0)
    ratio = getattr(opt, "length_ratio", None)
    if stopping not in STOPPING_RULES:
        raise OptionError(
            f"-stopping must be one of {', '.join(STOPPING_RULES)} (got {stopping!r})"
        )
    if reward is None or math.isnan(reward) or math.isinf(reward) or reward < 0:
        raise OptionError(f"-length_reward must be a finite number >= 0 (got {reward})")
    if ratio is not None and (math.isnan(ratio) or math.isinf(ratio) or ratio <= 0):
        raise OptionError(f"-length_ratio must be a finite number > 0 (got {ratio})")
    bp_norm = getattr(opt, "bp_norm", False)
    bound = getattr(opt, "bound", "exact")
    length_penalty = getattr(opt, "length_penalty", "none")
    if bound not in BOUNDS:
        raise OptionError(f"-bound must be one of {', '.join(BOUNDS)} (got {bound!r})")
    if (reward > 0 or bp_norm) and length_penalty != "none":
        what = "-bp_norm" if bp_norm else "-length_reward"
        raise OptionError(f"{what} replaces length normalization: add -length_penalty none "
                          f"(got -length_penalty {length_penalty})")
    if bp_norm and ratio is None:
        raise OptionError("-bp_norm needs -length_ratio RHO (> 0): its brevity penalty aims at l = RHO * |x|")
    if bp_norm and reward > 0:
        raise OptionError("-bp_norm and -length_reward are two different scores: choose one")
    if bound == "predicted":
        if not (bp_norm or length_penalty in ("avg", "wu")) or reward > 0:
            raise OptionError("-bound predicted applies to normalized scores (-length_penalty avg|wu or -bp_norm)")
        if ratio is None:
            raise OptionError("-bound predicted needs -length_ratio RHO (> 0): it assumes outputs end by RHO * |x|")
    sampling = getattr(opt, "random_sampling_topk", 0) != 0 or getattr(opt, "random_sampling_topp", 0.0) != 0
    if sampling and (stopping != "default" or reward > 0 or bp_norm):
        raise OptionError("-stopping/-length_reward/-bp_norm apply to beam search, not to random sampling "
                          "(-random_sampling_topk/-random_sampling_topp)")
    ours = stopping != "default" or reward > 0 or bp_norm or getattr(opt, "stats_file", None)
    if ours and getattr(opt, "ratio", 0.0) > 0:
        raise OptionError("OpenNMT-py's -ratio stopping rule cannot be combined with onmt-optimal's flags; "
                          "drop -ratio")
    if stopping == "optimal" and (getattr(opt, "coverage_penalty", "none") != "none"
                                  or getattr(opt, "stepwise_penalty", False)):
        raise OptionError("-stopping optimal needs a score that never rises as a hypothesis grows; "
                          "a coverage penalty can, so use -coverage_penalty none")


RAY_INSTALL = "pip install 'onmt-optimal[ray]' (or pip install ray==2.60.0)"


def uses_new_flags(opt) -> bool:
    """True when any onmt-optimal flag other than -progress is set."""
    return (getattr(opt, "stopping", "default") != "default" or getattr(opt, "length_reward", 0.0) != 0
            or getattr(opt, "bp_norm", False) or bool(getattr(opt, "stats_file", None))
            or getattr(opt, "ray_workers", 0) != 0)


def validate_workers(opt) -> None:
    """-ray_workers and its companions, and OpenNMT-py's own -world_size, which onmt-optimal's flags refuse.

    OpenNMT-py 3.5.1's ``-world_size N`` inference (``InferenceEnginePY``, ``spawned_infer``) starts N processes
    that each initialise a torch.distributed group (NCCL by default) and each decode the *whole* input with the
    whole model (or, under ``-parallel_mode tensor_parallel``, a slice of it), every one writing ``-output``
    and, with our flags, ``-stats_file``: it does not split a corpus. So with our flags it is refused, and
    ``-ray_workers`` is what splits one."""
    workers = getattr(opt, "ray_workers", 0) or 0
    world_size = getattr(opt, "world_size", 1) or 1
    if world_size > 1 and uses_new_flags(opt):
        raise OptionError(
            f"-world_size {world_size} is not supported with onmt-optimal's flags (OpenNMT-py 3.5.1 runs every "
            f"process over the whole input, each writing -output): use -ray_workers {world_size} instead "
            f"(with -gpu 0 for one GPU per worker)")
    if workers < 0:
        raise OptionError(f"-ray_workers must be a number >= 0 (got {workers})")
    gpus = getattr(opt, "ray_gpus_per_worker", None)
    if workers == 0:
        if getattr(opt, "ray_address", None) or gpus is not None:
            flag = "-ray_address" if getattr(opt, "ray_address", None) else "-ray_gpus_per_worker"
            raise OptionError(f"{flag} needs -ray_workers N (N >= 1)")
        return
    if gpus is not None and (math.isnan(gpus) or gpus < 0):
        raise OptionError(f"-ray_gpus_per_worker must be a number >= 0 (got {gpus})")
    on_gpu = getattr(opt, "gpu", -1) >= 0
    if gpus is not None and gpus > 0 and not on_gpu:
        raise OptionError("-ray_gpus_per_worker needs -gpu 0 (each worker decodes on the GPU Ray gives it)")
    if on_gpu and gpus == 0:
        raise OptionError("-gpu with -ray_gpus_per_worker 0: drop -gpu to decode on CPU workers")
    refused = [(getattr(opt, "random_sampling_topk", 0) != 0 or getattr(opt, "random_sampling_topp", 0.0) != 0,
                "random sampling (-random_sampling_topk/-random_sampling_topp) draws from one random stream "
                "across the whole input, which workers cannot share"),
               (bool(getattr(opt, "tgt", None)), "-tgt (gold scores)"),
               (getattr(opt, "attn_debug", False), "-attn_debug (printed per sentence, by each worker)"),
               (getattr(opt, "align_debug", False), "-align_debug (printed per sentence, by each worker)"),
               (getattr(opt, "verbose", False), "-verbose (printed per sentence, by each worker)")]
    for refused_here, what in refused:
        if refused_here:
            raise OptionError(f"-ray_workers does not take {what}: run it in one process (drop -ray_workers)")
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise OptionError(f"-ray_workers needs Ray, which is not installed: {RAY_INSTALL}")
