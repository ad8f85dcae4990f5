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
from onmt_optimal.search import limits, registry
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

    @property
    def active(self) -> bool:
        """Whether the flags ask for our search (else decoding is the toolkit's own): the one definition."""
        return (self.stopping != "default" or (self.length_reward or 0) > 0 or bool(self.bp_norm)
                or bool(self.stats_file))

    def rules(self, own_score: Callable[[], ScoringRule],
              own_stopping: Mapping[str, Callable[[], StoppingRule]] | None = None) -> tuple:
        """The (scoring, stopping) rules these (validated) values ask for, on the toolkit's own score and
        stopping rules where no option replaces them (``search.registry.rules``)."""
        return registry.rules(self.stopping, own_score, length_reward=self.length_reward,
                              length_ratio=self.length_ratio, bp_norm=self.bp_norm, bound=self.bound,
                              own_stopping=own_stopping)


#: the values of the options (``option_table.TABLE``), read in one place (``read``, ``of``)
Flags = make_dataclass("Flags", [(o.name, o.annotation, field(default=o.default)) for o in TABLE],
                       bases=(_Flags,), frozen=True)
Flags.__module__ = __name__


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
    ``shrinking`` alone: it runs a beam of its own); the length reward and ratio (finite float32-safe numbers,
    ``search.limits``; ``max_length`` bounds the reward); the toolkit's own numbers of the score
    (``own_numbers``: its complaints, or None); a switch that is not True or False; the ``bound``; then the
    combinations: a reward or BP-norm with the toolkit's length normalization where it must be off
    (``length_penalty``, a command line's: ``none``); BP-norm without a ratio or with a reward; ``bound
    predicted`` on a score that is not normalized (``normalized``, described as ``normalized_as``), or without
    a ratio. A value of the wrong kind raises ``OptionTypeError``."""
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
    _raise(limits.reward_error(s("length_reward"), flags.length_reward, max_length), flags.length_reward,
           (int, float))
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
    reward, ratio, bp_norm = flags.length_reward, flags.length_ratio, flags.bp_norm
    if length_penalty is not None and (reward > 0 or bp_norm) and length_penalty != "none":
        what = s("bp_norm") if bp_norm else s("length_reward")
        raise OptionError(f"{what} replaces length normalization: add {s('length_penalty', 'none')} "
                          f"(got {s('length_penalty', length_penalty)})")
    if bp_norm and ratio is None:
        raise OptionError(f"{s('bp_norm', True)} needs {s('length_ratio', Placeholder('RHO'))} (> 0): its brevity "
                          f"penalty aims at l = RHO * |x|")
    if bp_norm and reward > 0:
        raise OptionError(f"{s('bp_norm')} and {s('length_reward')} are two different scores: choose one")
    if flags.bound == "predicted":
        predicted = s("bound", "predicted")
        if not (bp_norm or normalized) or reward > 0:
            raise OptionError(f"{predicted} applies to normalized scores ({normalized_as} or {s('bp_norm')})")
        if ratio is None:
            raise OptionError(f"{predicted} needs {s('length_ratio', Placeholder('RHO'))} (> 0): it assumes outputs "
                              f"end by RHO * |x|")
