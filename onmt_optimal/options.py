"""What both toolkits' runs share beside the search's options: the options OpenNMT-py and eole both have, the
checks written against them, the files a run reads and writes, and the search a decode runs.

What the search's options mean and which values they take is ``flags``'s (``Flags``, the one record of their
values; ``check_search``, the one validation of the search's values and combinations, for every toolkit); the
errors are ``errors``'s (``OptionError``, ``OptionTypeError``); the checks of the files a run reads and writes
are ``file_checks``'s. Each name is imported from its own module, never from here.
``Settings`` is the typed record of the options both toolkits have, read in one place (``Settings.read``); each
toolkit's adapter extends it with the options only that toolkit has and checks them in its own words
(``opennmt.options``, ``eole.options``: their ``Settings``, ``read_parsed`` and ``validate``). A toolkit's
``validate`` runs the shared checks below (``check_run``, ``validate_sizes``, ``check_decoding``,
``check_our_sizes``, ``check_stopping``) with its own, in its own order, which fixes the one line a run with
several faults is refused with; every function here takes the records (``own``, ``flags``), never the parsed
options.
``Options`` (frozen) is what a decode runs, made from validated options by each toolkit's adapter
(``Options.from_opt``, ``Options.from_config``): (scoring, stopping) rules sharing one beam, or the toolkit's
own search, where the bookkeeping lives and where the statistics go. Registering the flags on a toolkit's
command line is the adapter's business (``opennmt.options.add_options``, ``eole.options.config_class``, from
the table); the Ray flags' combinations are ``distributed.options``'s.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from onmt_optimal import file_checks
from onmt_optimal.errors import OptionError
from onmt_optimal.flags import Flags, check_search, score_switches
from onmt_optimal.option_table import EOLE, OPENNMT, spell
from onmt_optimal.search import limits, registry
from onmt_optimal.search.transfer import AUTO
from onmt_optimal.search.scoring import ScoringRule
from onmt_optimal.search.state import Rule
from onmt_optimal.search.stopping import StoppingRule

if TYPE_CHECKING:
    from typing import Self  # an annotation only: typing has it from Python 3.11


@dataclass(frozen=True)
class Settings:
    """The options OpenNMT-py and eole both have, read by the plugin as one typed record (``read``): OpenNMT-py's
    ``opt`` and eole's config name them alike. An option the parsed options lack (a toolkit's other callers of its
    validation, a server, a training run's validation translator) reads as the default here. Each toolkit's
    adapter adds the options only it has (``opennmt.options.Settings``, ``eole.options.Settings``)."""

    n_best: int = 1
    beam_size: int = 1
    max_length: int | None = None
    length_penalty: str = "none"
    alpha: float = 0.0
    beta: float = 0.0
    coverage_penalty: str = "none"
    stepwise_penalty: bool = False
    dump_beam: str = ""
    tgt: str | None = None
    attn_debug: bool = False
    align_debug: bool = False
    verbose: bool = False
    report_time: bool = False
    batch_size: int = 30
    min_length: int = 0
    replace_unk: bool = False
    # the files a run reads and writes (``opennmt.run_files``, ``eole.files``): None, or "", where not given
    config: str | None = None  # the -config file (OpenNMT-py's parsed options; eole's command line)
    src: str | None = None
    output: str | None = None
    log_file: str = ""
    phrase_table: str | None = None
    src_subword_vocab: str | None = None

    @classmethod
    def read(cls, opt) -> Self:
        """The record of a toolkit's parsed options ``opt`` (OpenNMT-py's argparse namespace, eole's config), as
        ``cls``: this one, or a toolkit's, which has its fields too."""
        return cls(**{f.name: getattr(opt, f.name, f.default) for f in fields(cls)})


@dataclass(frozen=True)
class Options:
    """What a decode runs, made once from validated options by the toolkit's adapter (``from_opt`` for
    OpenNMT-py, ``from_config`` for eole) or by a tool: (scoring, stopping) ``rules`` sharing one beam, or none
    for the toolkit's own search (``stock``). The first rule answers on the output; the others (the sweep's)
    only in the per-line records."""

    rules: tuple = ()
    stats_file: str | None = None
    #: keep every rule's per-line record (the translators' ``_rule_results``), for the tools
    collect: bool = False
    #: where the search's bookkeeping lives (``search.transfer``): "auto", on the host when the model runs on a CUDA
    #: device, else next to it; None, on the model's device; "cpu", on the host with one packed transfer a step
    host: str | None = AUTO
    #: a beam of one item is the toolkit's own beam search, scored afterwards (``search.beam_of_one``, where
    #: ``adapter.batch_search.beam_of_one`` allows); False runs the core there too (the tests compare the two)
    beam_of_one: bool = True
    #: skip the dead rows where the search and the toolkit's decode loop allow (``-prune_dead``: ``search.dead``);
    #: every record then has ``rows_skipped`` (``search.record``). None (``onmt_translate`` and ``onmt_server``
    #: without ``-prune_dead``): where no record is shown (``opennmt.translator.CertifiedTranslator._prunes``,
    #: ``records_read``)
    prune_dead: bool | None = False

    def __post_init__(self):
        object.__setattr__(self, "rules", tuple(Rule(*rule) for rule in self.rules))  # (scoring, stopping) pairs

    def records_read(self) -> "Options":
        """This search where its records are read though it writes no statistics file (a server's answers, the
        file a Ray driver writes): unasked, it skips no dead row, so its records are the unpruned decode's."""
        return self if self.prune_dead is not None else replace(self, prune_dead=False)

    @property
    def stock(self) -> bool:
        """No rule: the toolkit's own search runs, untouched."""
        return not self.rules

    @property
    def active(self) -> bool:
        return bool(self.rules)

    @property
    def scoring(self) -> ScoringRule | None:
        return self.rules[0].scoring if self.rules else None

    @property
    def stopping(self) -> StoppingRule | None:
        return self.rules[0].stopping if self.rules else None

    @classmethod
    def from_opt(cls, opt, global_scorer, prog: str = "onmt_translate", toolkit: str = OPENNMT) -> "Options":
        """The search OpenNMT-py's parsed options select (validated already, with the command line:
        ``opennmt.options.validate``); ``-n_best`` beyond what the beam can complete is warned about on stderr,
        once."""
        return cls.from_records(Settings.read(opt), Flags.read(opt, toolkit), global_scorer, prog)

    @classmethod
    def from_records(cls, own: Settings, flags: Flags, global_scorer, prog: str = "onmt_translate") -> "Options":
        """``from_opt`` on the records of the parsed options (a toolkit's ``read_parsed``), read once by the
        caller."""
        if not flags.active:
            return cls()
        warning = n_best_warning(own, flags)
        if warning:
            sys.stderr.write(f"{prog}: warning: {warning}\n")
        return cls(rules=flags.rules(lambda: _own_score(own, flags, global_scorer)), stats_file=flags.stats_file,
                   prune_dead=flags.prune_dead or None)

    @classmethod
    def from_config(cls, config, global_scorer) -> "Options":
        """The search eole's config selects (validated already: ``eole.options.validate``)."""
        return cls.from_opt(config, global_scorer, prog="eole predict", toolkit=EOLE)


def n_best_warning(own: Settings, flags: Flags) -> str | None:
    """One line when -n_best asks for more hypotheses than the chosen beam can complete, else None.

    A beam of one item completes exactly one hypothesis (every rule stops when its one item completes), and a
    shrinking beam of b items at most b; the n-best list is then padded with repeats of the last hypothesis,
    since OpenNMT-py expects exactly n_best answers (README, "Known limits")."""
    n_best, beam = own.n_best, own.beam_size
    if beam == 1 and n_best > 1:
        holds = "a beam of one item completes one hypothesis"
    elif flags.stopping == "shrinking" and n_best > beam:
        holds = f"a shrinking beam of {beam} items completes at most {beam}"
    else:
        return None
    return (f"-n_best {n_best} exceeds what the beam can hold ({holds}): each n-best list is padded with "
            f"repeats of its last hypothesis")


def scoring_rule(own: Settings, flags: Flags, global_scorer) -> ScoringRule:
    """The scoring rule the (validated) options ask for (``Flags.rules``)."""
    return flags.rules(lambda: _own_score(own, flags, global_scorer))[0][0]


def _own_score(own: Settings, flags: Flags, global_scorer) -> ScoringRule:
    """OpenNMT-py's (and eole's) own score, as its ``GNMTGlobalScorer`` computes it (``registry.opennmt_score``)."""
    return registry.opennmt_score(
        length_penalty=own.length_penalty if global_scorer.has_len_pen else "none",
        alpha=global_scorer.alpha, coverage=global_scorer.has_cov_pen, ratio=flags.length_ratio, bound=flags.bound)


def _own_files(own: Settings, flags: Flags) -> tuple[tuple, tuple]:
    """The ``(flag, path)`` pairs ``file_checks.check_distinct`` compares by default: the run reads -src, and
    writes -output, -stats_file and -log_file."""
    return ((("-src", own.src),),
            (("-output", own.output), ("-stats_file", flags.stats_file), ("-log_file", own.log_file)))


def validate_sizes(own: Settings, max_length_zero: bool = False) -> None:
    """The search's sizes, which both toolkits take unchecked and then fail on with a traceback: -beam_size and
    -n_best >= 1, -max_length >= 1 (``max_length_zero``: a toolkit whose stock search answers -max_length 0 with
    empty lines, eole, keeps that where no new option asks for our search)."""
    for flag, value in (("beam_size", own.beam_size), ("n_best", own.n_best)):
        if value is not None and value < 1:
            raise OptionError(f"-{flag} must be at least 1 (got {value})")
    max_length = own.max_length
    if max_length is not None and max_length < (0 if max_length_zero else 1):
        raise OptionError(f"-max_length must be at least 1 (got {max_length})")


def check_our_sizes(own: Settings) -> None:
    """Sizes the toolkits take silently, refused under our options (stock keeps them: ``docs/differences.md``):
    a -batch_size below 1, a -min_length above -max_length (no hypothesis could end before -max_length)."""
    batch_size = own.batch_size
    if isinstance(batch_size, int) and batch_size < 1:
        raise OptionError(f"-batch_size must be at least 1 (got {batch_size})")
    min_length, max_length = own.min_length, own.max_length
    if isinstance(min_length, int) and isinstance(max_length, int) and min_length > max_length:
        raise OptionError(f"-min_length {min_length} exceeds -max_length {max_length}: no hypothesis could end "
                          f"(every output would be cut at -max_length)")


def _check_aligned(own: Settings) -> None:
    """-tgt (gold scoring) holds one line per -src line, under our options: both toolkits score the shorter
    file's lines and translate no further, so a short -tgt cut the output short with exit status 0 (stock keeps
    it: ``docs/differences.md``). Streams are read once, by the run, and are not counted."""
    from onmt_optimal.atomic import streamed

    src, tgt = own.src, own.tgt
    if not (isinstance(src, str) and isinstance(tgt, str) and src and tgt) or streamed(src) or streamed(tgt):
        return
    try:
        counts = [file_checks.count_lines(path) for path in (src, tgt)]
    except OSError:
        return  # an unreadable file is said elsewhere
    if counts[0] != counts[1]:
        raise OptionError(f"-tgt {tgt} has {counts[1]} lines, -src {src} has {counts[0]}: one target line a source "
                          f"line")


def option_warnings(own: Settings, flags: Flags) -> list[str]:
    """One line per option value that is legal but very likely not what the user meant.

    ``-length_ratio RHO`` sets ``l = RHO * |x|``, which bounds the reward (and BP-norm's brevity penalty) only if
    outputs can reach it. No output is longer than -max_length, and every non-empty source has ``|x| >= 1``: so
    with ``RHO >= max_length`` no line's ``l`` is ever reached, the bound never binds and the reward is He et al.'s
    unbounded one. (Whether ``RHO * |x|`` exceeds -max_length on some lines depends on the source; those lines are
    capped by -max_length, which the statistics' ``target_length`` shows.)"""
    out = []
    ratio = flags.length_ratio
    max_length = own.max_length
    uses_ratio = bool(flags.scores) or flags.bound == "predicted"
    if ratio is not None and max_length and uses_ratio and ratio >= max_length:
        out.append(f"-length_ratio {ratio:g} makes l = {ratio:g} * |x| at least -max_length {max_length} on every "
                   f"line, so no output ever reaches it and the length bound never applies (an estimate from "
                   f"'python -m onmt_optimal ratio' is typically near 1)")
    return out


def _max_length(own: Settings) -> int | None:
    max_length = own.max_length
    return max_length if isinstance(max_length, int) and max_length >= 1 else None


def check_run(own: Settings, flags: Flags, reads=None, writes=None) -> None:
    """Raise ``OptionError`` for what the command's own run cannot do with its files: a -src that cannot be read, a
    -stats_file, -output, -log_file or -dump_beam that could not be written, a file written over one the run reads
    or over another it writes (``file_checks.check_distinct``: ``reads``, ``writes``), a -tgt of another length
    than -src under our options. Checked before the model loads rather than after the decode, by the command only:
    a toolkit's other callers of its validation (a server, a training run's validation translator) pass
    placeholders for these. ``reads`` and ``writes``: by default -src, and -output, -stats_file, -log_file
    (``_own_files``)."""
    file_checks.check_readable("-src", own.src)
    file_checks.check_writable("-stats_file", flags.stats_file)
    file_checks.check_writable("-output", own.output)
    file_checks.check_writable("-log_file", own.log_file or None)
    file_checks.check_writable("-dump_beam", own.dump_beam or None)
    own_reads, own_writes = _own_files(own, flags)
    file_checks.check_distinct(own_reads if reads is None else reads, own_writes if writes is None else writes)
    if flags.active:
        _check_aligned(own)


def check_sampling(flags: Flags, toolkit: str, sampling: bool, spelled: str) -> None:
    """Random sampling (``sampling``: asked for by ``toolkit``'s options ``spelled``, e.g. ``-top_k/-top_p``)
    takes none of beam search's options, and -stats_file, which records beam search's decodes, would stay empty."""
    if not sampling:
        return
    if flags.stopping != "default" or flags.scores:
        raise OptionError(f"{beam_search_options(toolkit)} apply to beam search, not to random sampling ({spelled})")
    if flags.stats_file:
        raise OptionError(f"-stats_file {flags.stats_file} records beam search's decodes, not random sampling "
                          f"({spelled}): it would stay empty")


def beam_search_options(toolkit: str = OPENNMT, sep: str = "/") -> str:
    """The options that ask for beam search, as ``toolkit``'s user writes them: ``-stopping`` and the scoring
    rules' switches (``flags.score_switches``), joined by ``sep``."""
    return sep.join(spell(toolkit, name) for name in ("stopping", *score_switches()))


def check_decoding(own: Settings, flags: Flags, toolkit: str) -> None:
    """Raise ``OptionError`` for -dump_beam under our options, and for any value or combination of ours the search
    cannot honour (``check_search``, ``toolkit``'s spelling), with the score's own -alpha and -beta (a NaN, an
    exponent that overflows), which stock takes as they are (a NaN makes every hypothesis NaN)."""
    if flags.active and own.dump_beam:
        raise OptionError("-dump_beam is not supported with onmt-optimal's flags (the search keeps no beam "
                          "history to dump, and the toolkit's own beam search stops on an assertion with it): drop "
                          "-dump_beam")
    length_penalty = own.length_penalty
    own_numbers = []
    if flags.active:
        own_numbers = [limits.exponent_error("-alpha", own.alpha, length_penalty, _max_length(own)),
                       limits.finite_error("-beta", own.beta)]
    check_search(flags, toolkit, _max_length(own), own_numbers, length_penalty=length_penalty,
                 normalized=length_penalty in ("avg", "wu"), normalized_as="-length_penalty avg|wu")


def check_stopping(own: Settings, flags: Flags) -> None:
    """``-stopping optimal`` needs a score that never rises as a hypothesis grows: a coverage penalty can."""
    if flags.stopping == "optimal" and (own.coverage_penalty != "none" or own.stepwise_penalty):
        raise OptionError("-stopping optimal needs a score that never rises as a hypothesis grows; "
                          "a coverage penalty can, so use -coverage_penalty none")
