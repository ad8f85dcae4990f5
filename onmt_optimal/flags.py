"""What the search's options mean and which values they take, for every toolkit: ``Flags``, the one frozen record
of their values (one field per option of ``option_table.TABLE``: ``read`` from a toolkit's parsed options, ``of``
from a Python call's keyword arguments; ``active``: are our options on; ``rules``: the (scoring, stopping) rules
they select, ``search.registry.rules``), and ``check_search``, the one validation of the search's values and
combinations, with one wording of each error (the option spelled as the toolkit's user writes it:
``option_table.spell``). A toolkit run's own options and files are ``options``'s; nothing here touches a file
or the process.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import field, make_dataclass

from onmt_optimal.errors import OptionError, OptionTypeError
from onmt_optimal.option_table import BY_NAME, OPENNMT, TABLE, Placeholder, spell
from onmt_optimal.search import limits, registry, scoring
from onmt_optimal.search.scoring import ScoringRule
from onmt_optimal.search.stopping import StoppingRule


class _Flags:
    """What ``Flags`` does with its fields (one per option of ``option_table.TABLE``)."""

    @classmethod
    def read(cls, opt, toolkit: str = OPENNMT) -> "Flags":
        """The values in a toolkit's parsed options; an option it does not register (OpenNMT-py's server and
        training take its translate options without ours) reads as the toolkit's default."""
        return cls(**{o.name: getattr(opt, o.name, o.default_for(toolkit)) for o in TABLE})

    @classmethod
    def of(cls, toolkit: str, **values) -> "Flags":
        """The values of a Python call's keyword arguments, the others at ``toolkit``'s defaults."""
        return cls(**{**{o.name: o.default_for(toolkit) for o in TABLE}, **values})

    def values(self) -> dict:
        """The values by the options' names (what the registry of scoring rules reads: ``search.scoring``)."""
        return {o.name: getattr(self, o.name) for o in TABLE}

    @property
    def scores(self) -> list:
        """The registered scoring rules these values select in place of the toolkit's own score, in order of
        precedence (``search.scoring.select``; none: the toolkit's own)."""
        return scoring.select(self.values())

    @property
    def active(self) -> bool:
        """Whether the flags ask for our search (else decoding is the toolkit's own): the one definition."""
        return self.stopping != "default" or bool(self.scores) or bool(self.stats_file)

    def rules(self, own_score: Callable[[], ScoringRule],
              own_stopping: Mapping[str, Callable[[], StoppingRule]] | None = None) -> tuple:
        """The (scoring, stopping) rules these (validated) values ask for, on the toolkit's own score and
        stopping rules where no option replaces them (``search.registry.rules``)."""
        return registry.rules(self.stopping, own_score, own_stopping=own_stopping, **self.values())


#: the values of the options (``option_table.TABLE``), read in one place (``read``, ``of``)
Flags = make_dataclass("Flags", [(o.name, o.annotation, field(default=o.default)) for o in TABLE],
                       bases=(_Flags,), frozen=True)
Flags.__module__ = __name__


def score_switches() -> tuple[str, ...]:
    """The options that select a registered scoring rule (``search.scoring.switches``), in the table's order."""
    switches = scoring.switches()
    return tuple(o.name for o in TABLE if o.name in switches)


def _raise(problem: str | None, value=None, kind=None) -> None:
    """``problem`` (if any) as an ``OptionError``: an ``OptionTypeError`` where ``value`` is not of ``kind``."""
    if problem is None:
        return
    if kind is not None and not (isinstance(value, kind) and (kind is bool or not isinstance(value, bool))):
        raise OptionTypeError(problem)
    raise OptionError(problem)


def check_search(flags: Flags, toolkit: str = OPENNMT, max_length: int | None = None,
                 own_numbers: Iterable[str | None] = (), length_penalty: str | None = None,
                 normalized: bool = False, normalized_as: str = "") -> None:
    """Raise ``OptionError`` (one line, the options spelled as ``toolkit``'s user writes them) for a value of the
    search's options ``toolkit`` cannot take or a combination the search cannot honour, in this order: the
    ``stopping`` rule (one of the toolkit's, or a list of distinct ones where it takes a list, with
    ``shrinking`` alone: it runs a beam of its own); the rules' numbers (``scoring.option_checks``: the reward)
    and the length ratio (finite float32-safe numbers, ``search.limits``; ``max_length`` bounds the reward); the
    toolkit's own numbers of the score (``own_numbers``: its complaints, or None); a switch that is not True or
    False; the ``bound``; then the combinations, each declared by the registered scoring rule the options select
    (``search.scoring``): a score that replaces the toolkit's length normalization where it must be off
    (``length_penalty``, a command line's: ``none``); a rule without an option it ``needs`` (BP-norm without a
    ratio), or with another rule (BP-norm with a reward); ``bound predicted`` on a score that is not normalized
    (``normalized``, described as ``normalized_as``), or without a ratio. A value of the wrong kind raises
    ``OptionTypeError``."""
    def s(name, value=None):
        return spell(toolkit, name, value)

    stopping = BY_NAME["stopping"]
    choices, many = stopping.choices_for(toolkit), toolkit in stopping.many
    names = ([flags.stopping] if isinstance(flags.stopping, str)
             else list(flags.stopping) if many and isinstance(flags.stopping, (list, tuple)) else [])
    if not names or any(not isinstance(n, str) or n not in choices for n in names):
        got = f"(or a list of them), got {flags.stopping!r}" if many else f"(got {flags.stopping!r})"
        _raise(f"{s('stopping')} must be one of {', '.join(choices)} {got}", flags.stopping,
               (str, list, tuple) if many else str)
    if len(set(names)) != len(names):
        raise OptionError(f"{s('stopping')} names a rule twice (got {flags.stopping!r})")
    if "shrinking" in names and len(names) > 1:
        raise OptionError(f"{s('stopping', 'shrinking')} runs a beam of its own: it cannot share a decode with "
                          f"other rules")
    for option, check in scoring.option_checks():  # the numbers the registered scoring rules read
        _raise(check(s(option), getattr(flags, option), max_length), getattr(flags, option), (int, float))
    _raise(limits.ratio_error(s("length_ratio"), flags.length_ratio), flags.length_ratio, (int, float))
    for problem in own_numbers:
        _raise(problem)
    for option in TABLE:
        value = getattr(flags, option.name)
        if option.type is bool and toolkit in option.toolkits and not isinstance(value, bool):
            raise OptionTypeError(f"{s(option.name)} must be True or False (got {value!r})")
    bound = BY_NAME["bound"]
    if toolkit in bound.toolkits and flags.bound not in bound.choices_for(toolkit):
        _raise(f"{s('bound')} must be one of {', '.join(bound.choices_for(toolkit))} (got {flags.bound!r})",
               flags.bound, str)
    ratio = flags.length_ratio
    chosen = flags.scores  # the registered scores the options select, in order of precedence
    if length_penalty is not None and chosen and length_penalty != "none":
        raise OptionError(f"{s(chosen[0].switch())} replaces length normalization: add "
                          f"{s('length_penalty', 'none')} (got {s('length_penalty', length_penalty)})")
    if chosen:
        values = flags.values()
        for name, why in chosen[0].needs:
            if values.get(name) is None:
                needed = s(name, Placeholder(BY_NAME[name].metavar))
                raise OptionError(f"{s(chosen[0].switch(), True)} needs {needed} {why}")
        other = next((rule for rule in chosen[1:] if rule.switch() != chosen[0].switch()), None)
        if other is not None:
            raise OptionError(f"{s(chosen[0].switch())} and {s(other.switch())} are two different scores: "
                              f"choose one")
    if flags.bound == "predicted":
        predicted = s("bound", "predicted")
        if not (chosen[0].normalized if chosen else normalized):
            normalizing = {rule.switch() for rule in scoring.SCORING_RULES.values() if rule.normalized}
            normalizing = " or ".join(s(name) for name in score_switches() if name in normalizing)
            raise OptionError(f"{predicted} applies to normalized scores ({normalized_as} or {normalizing})")
        if ratio is None:
            raise OptionError(f"{predicted} needs {s('length_ratio', Placeholder('RHO'))} (> 0): it assumes outputs "
                              f"end by RHO * |x|")
