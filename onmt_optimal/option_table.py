"""The one table of the plugin's options: each declared once, with what every toolkit makes of it.

An ``Option`` is a name, a Python type, a default, its allowed values (``choices``, or ``allowed`` in words for a
range that ``flags.check_search`` and ``search.limits`` enforce), one help text and the toolkits that take it,
with a toolkit's own default or choices where they differ. From ``TABLE`` come OpenNMT-py's argparse flags
(``opennmt.options.add_options``), eole's config fields (``eole.options.FIELDS``), the keyword arguments of
transformers' and vLLM's ``optimal_beam_search`` (their defaults; ``tests/unit/test_option_table.py`` checks the
signatures), the Ray and ratio arguments of ``onmt-optimal sweep`` (``SWEEP``: ``--ray-workers``, its own help
and defaults where they differ) and ``flags.Flags``, the one frozen record of parsed values. A toolkit's command
line spells an option ``-name`` (both accept ``--name``), a Python call ``name=value`` (``spell``).

This module imports nothing beyond the standard library: the toolkits' import hooks read it.
"""
from __future__ import annotations

from dataclasses import dataclass

OPENNMT = "opennmt"
EOLE = "eole"
HF = "hf"
VLLM = "vllm"
#: ``onmt-optimal sweep`` (``__main__.sweep``): it takes the Ray options and the ratio as ``--ray-workers``, ...
SWEEP = "sweep"
#: each toolkit's name in help texts
TOOLKIT_NAMES = {OPENNMT: "OpenNMT-py", EOLE: "eole", HF: "transformers", VLLM: "vLLM", SWEEP: "the sweep"}
#: the toolkits whose options are command-line flags (``-name value``); the others take keyword arguments
COMMAND_LINES = (OPENNMT, EOLE)

SEARCH = "search"
RAY = "ray"


@dataclass(frozen=True)
class Option:
    """One option. ``type`` is ``str``, ``float``, ``int`` or ``bool`` (a bool is a switch on a command line);
    a default of None means "not given" (the value may be None). ``defaults`` and ``choices_by`` hold a toolkit's
    own default and allowed values, as ``(toolkit, value)`` pairs, where they differ from ``default`` and
    ``choices``; ``many`` the toolkits that also take a list of values (decoded at once on one beam); ``helps``,
    ``names`` and ``metavars`` a toolkit's own help, name and metavar (None: none) where they differ."""

    name: str
    type: type
    default: object
    help: str
    toolkits: tuple[str, ...]
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    allowed: str | None = None
    defaults: tuple[tuple[str, object], ...] = ()
    choices_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    many: tuple[str, ...] = ()
    group: str = SEARCH
    helps: tuple[tuple[str, str], ...] = ()
    names: tuple[tuple[str, str], ...] = ()
    metavars: tuple[tuple[str, str | None], ...] = ()
    #: whether a server's client may set it (a clone's ``"opt"``, a request's settings): a search option that
    #: changes the decode only; False for one that names a file or acts outside the decode
    client: bool = True

    def default_for(self, toolkit: str):
        return dict(self.defaults).get(toolkit, self.default)

    def choices_for(self, toolkit: str) -> tuple[str, ...] | None:
        return dict(self.choices_by).get(toolkit, self.choices)

    def help_for(self, toolkit: str) -> str:
        own = dict(self.helps).get(toolkit)
        return own if own is not None else self.help.format(toolkit=TOOLKIT_NAMES[toolkit])

    def name_for(self, toolkit: str) -> str:
        return dict(self.names).get(toolkit, self.name)

    def metavar_for(self, toolkit: str) -> str | None:
        return dict(self.metavars).get(toolkit, self.metavar)

    @property
    def annotation(self):
        """The type a value has (``type``, or None as well where the default is None)."""
        return self.type if self.default is not None else self.type | None


STOPPING = ("default", "optimal", "exhaustive", "shrinking", "opennmt2017")
BOUNDS = ("exact", "predicted")

#: ``-prune_dead``'s help, ``more``: the toolkit's own cases where it does not apply
PRUNE_DEAD_HELP = (
    "Skip the dead rows: under -stopping optimal, run the decoder, the generator and the log-softmax only for the "
    "live items whose bound still reaches the n_best-th best completed hypothesis kept (no descendant of the "
    "others can enter the answer). Translations, scores and steps stay the same; each line's statistics gain "
    "rows_skipped, and their completed (rarely stop_reason) may differ: a dead item's children are never made. "
    "Applies with one rule, -stopping optimal, on log p, -length_reward or -bp_norm (-length_penalty none, -bound "
    "exact); elsewhere (another -stopping, -length_penalty avg|wu, a coverage penalty, -bound predicted, "
    "-replace_unk, -attn_debug, a copy generator, a target prefix{more}) nothing is skipped (rows_skipped 0).{auto}")
AUTO_PRUNE = " Without it, onmt_translate skips them where its output shows nothing: no -stats_file, CPU, batch > 1."

TABLE: tuple[Option, ...] = (
    Option(
        "stopping", str, "default",
        "When beam search stops. 'default': {toolkit}'s rule (the top item of the beam is finished). "
        "'optimal': the optimality certificate (Sec. 3 and 4): stop once the n_best-th best completed "
        "hypothesis scores at least the best bound any live item could still reach; returns the best "
        "hypotheses the beam could ever complete. 'exhaustive': never stop early (to max_length or until "
        "no live item is left); the reference the certificate is checked against. 'shrinking': RNNsearch's "
        "shrinking beam (each completed hypothesis removes one beam slot; stop when none is left). "
        "'opennmt2017': historical, OpenNMT-py's search of early 2017 that the paper compared against (stop when "
        "the top item of the beam completes and return that item, keeping no earlier completion).",
        (OPENNMT, EOLE, HF, VLLM), choices=STOPPING,
        defaults=((HF, "optimal"), (VLLM, "optimal")),
        choices_by=((HF, ("optimal", "exhaustive", "shrinking", "default")), (VLLM, ("optimal", "exhaustive"))),
        many=(HF,)),
    Option(
        "length_reward", float, 0.0,
        "Length reward r. With -length_ratio: the bounded reward of Sec. 4, score(y) = log p(y|x) + "
        "r * min(l, |y|), l = length_ratio * |x|; without: He et al.'s unbounded reward, log p(y|x) + r * |y|. "
        "|y| counts output tokens without EOS, |x| source tokens as the model sees them (after transforms). "
        "Needs -length_penalty none.",
        (OPENNMT, EOLE, HF, VLLM), metavar="R", allowed=">= 0, finite in float32 scores up to max_length"),
    Option(
        "length_ratio", float, None,
        "Estimated output/source length ratio rho (e.g. 1.27 in the paper; estimate it on a dev set "
        "with 'python -m onmt_optimal ratio'). Sets l = rho * |x| for -length_reward.",
        (OPENNMT, EOLE, HF, VLLM, SWEEP), metavar="RHO", allowed="> 0, finite",
        helps=((SWEEP, "rho (default: estimated on --src/--refs)"),), names=((SWEEP, "ratio"),),
        metavars=((SWEEP, None),)),
    Option(
        "bp_norm", bool, False,
        "Score with Yang et al. (2018)'s BP-norm: min(0, 1 - l/|y|) + log p(y|x)/|y|. Needs "
        "-length_ratio and -length_penalty none.",
        (OPENNMT, EOLE, HF, VLLM)),
    Option(
        "bound", str, "exact",
        "Bound of a normalized score (-length_penalty avg|wu, -bp_norm) under -stopping optimal. 'exact': "
        "the best any continuation up to max_length could reach (sound, stops late). 'predicted': assume no "
        "continuation outgrows l = length_ratio * |x| (Yang et al. 2018; a heuristic, reported as "
        "stop_reason 'predicted_bound').",
        (OPENNMT, EOLE, HF), choices=BOUNDS),
    Option(
        "stats_file", str, None,
        "Write one JSON line per input sentence, in input order: decoding steps, stop reason, "
        "final score, raw log-probability, output length |y|, l, source length, completed hypotheses.",
        (OPENNMT, EOLE), metavar="PATH", client=False),
    Option(
        "prune_dead", bool, False, PRUNE_DEAD_HELP.format(more="", auto=AUTO_PRUNE), (OPENNMT, EOLE),
        helps=((EOLE, PRUNE_DEAD_HELP.format(more=", a transformer decoder: only eole's RNN encoder-decoder prunes, "
                                            "without torch.compile or tensor parallelism", auto="")),),
        client=False),
    Option(
        "progress", bool, False,
        "Show a progress bar on stderr (tqdm): sentences translated out of the lines of -src. Changes "
        "nothing else (stock search stays stock).",
        (OPENNMT,), client=False),
    Option(
        "drop_finished", bool, False,
        "Drop an input from the batch once it is done: the model runs on fewer rows (faster at large batches), "
        "with scores that may differ from a full batch's in the last bits.",
        (HF,)),
    Option(
        "ray_workers", int, 0,
        "Decode with N Ray actors, each loading the model once (on its own GPU with -gpu); 0: in this "
        "process. Without -ray_address a local Ray is started on this machine for the run: it listens on "
        "loopback only (127.0.0.1), starts no dashboard, keeps its files in a temporary directory removed at "
        "the end, and is refused (saying the most this machine can run) when N exceeds the cores or the memory "
        "N copies of the model need. Each worker runs torch's thread count (OMP_NUM_THREADS, else the cores).",
        (OPENNMT, SWEEP), metavar="N", allowed=">= 0", group=RAY,
        helps=((SWEEP, "spread the decodes over N Ray actors (pip install ray==2.60.0); same JSON rows"),)),
    Option(
        "ray_address", str, None,
        "Join this Ray cluster (e.g. 10.0.0.1:6379, or 'auto') instead of starting a local one. -model, "
        "and the files its config names, must be readable at the same paths on every node (relative paths from "
        "this directory); -src is read here and sent to the workers.",
        (OPENNMT, SWEEP), metavar="ADDR", group=RAY,
        helps=((SWEEP, "join this Ray cluster instead of starting a local one"),), metavars=((SWEEP, None),)),
    Option(
        "ray_gpus_per_worker", float, None,
        "GPUs each worker reserves with -gpu (default 1; 0.5 puts two workers on one GPU). Ray picks the "
        "GPU; the worker decodes on it whatever -gpu says.",
        (OPENNMT, SWEEP), metavar="G", allowed=">= 0", group=RAY, defaults=((SWEEP, 0.0),),
        helps=((SWEEP, "GPUs each actor reserves; it then decodes on the one Ray gives it"),)),
    Option(
        "ray_timeout", float, None,
        "With -ray_address: how long to wait for the cluster to answer before giving up with an error "
        "(default 30). An address where nothing listens is refused at once.",
        (OPENNMT,), metavar="SECONDS", allowed="> 0", group=RAY),
)

#: the options by name
BY_NAME = {option.name: option for option in TABLE}


#: the toolkit's own options a server's client may set (``client_options``), by their names on its command line:
#: the decode's settings only (sizes, lengths, penalties, blocking, sampling, batching), none that names a file,
#: loads a config, exits, logs, picks a device or a precision
CLIENT_OWN = {
    OPENNMT: ("beam_size", "n_best", "min_length", "max_length", "max_length_ratio", "length_penalty", "alpha",
              "beta", "coverage_penalty", "stepwise_penalty", "ratio", "block_ngram_repeat",
              "ignore_when_blocking", "ban_unk_token", "replace_unk", "random_sampling_topk",
              "random_sampling_topp", "random_sampling_temp", "seed", "batch_size", "batch_type"),
}


def client_options(toolkit: str) -> tuple[str, ...]:
    """The options a client of ``toolkit``'s server may set, each by its exact name: the toolkit's own decoding
    options (``CLIENT_OWN``), then the search's options of the table that a client may choose (``Option.client``).
    The allow-list of every request that carries options (``opennmt.server_files.client_problem``)."""
    return (*CLIENT_OWN.get(toolkit, ()),
            *(o.name_for(toolkit) for o in taken_by(toolkit, SEARCH) if o.client))


def taken_by(toolkit: str, group: str | None = None) -> tuple[Option, ...]:
    """The options ``toolkit`` takes (of ``group`` only, if given), in the table's order."""
    return tuple(o for o in TABLE if toolkit in o.toolkits and (group is None or o.group == group))


class Placeholder(str):
    """A value's name in a message (``RHO``): written as it is, never quoted."""

    def __repr__(self) -> str:
        return str(self)


def spell(toolkit: str, name: str, value=None) -> str:
    """How ``toolkit``'s user writes option ``name`` (with ``value``, if given) in a message: ``-bound predicted``
    on a command line, ``bound='predicted'`` in a Python call (a switch: ``-bp_norm``, ``bp_norm=True``)."""
    if toolkit in COMMAND_LINES:
        return f"-{name}" if value is None or value is True else f"-{name} {value}"
    return name if value is None else f"{name}={value!r}"
