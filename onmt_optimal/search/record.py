"""One sentence's record: what the search answers for it under one rule, defined once.

Every path that answers a sentence builds a ``Record``: the core as an example leaves the beam
(``answers.answer``), the toolkit's own beam of one scored afterwards (``beam_of_one.records``), an empty source
line answered without a search (``Record.empty``) and the Ray driver, which gets each worker's records as plain
data (``Record.plain``/``Record.from_plain``). The statistics file holds one ``Record.json`` per line, and the
closing ``PRED`` lines are sums over the decoded records, whoever decoded them (``adapter.totals``).

The statistics (``STATS``, the JSON form, in this order) are the first eight fields, then, only in a run that asked
for the dead rows to be skipped (``-prune_dead``: ``search.dead``), ``rows_skipped`` (``OPTIONAL_STATS``): how many
of the decoder's rows the sentence's decode did not compute, against the unpruned decode's ``beam`` rows a step
(0 where pruning did not apply); a record without it (None) writes no such key, so a run without the option
writes what it always wrote. The others travel with the
record where an adapter needs them and are never written: the 1-best ``tokens`` (ids, without the end token),
its ``text`` (added by the tools), and, as the core hands an example over, its ``n_best`` ``hypotheses``
(``(score, token ids)``, best first, each keeping its end token) and how many of them were ``kept`` distinct
(the last one is repeated up to ``n_best``); those two take no part in equality.

Invariant: a record's JSON is ``{"line": n, "steps": ..., ..., "completed": ...}`` (then ``"rows_skipped": ...``
where it has one), its values as the search
computed them (Python ints and floats, ``json.dumps``'s own float form; ``stop_reason`` a ``StopReason``, which
serializes as its name; ``target_length`` a float, or null for a rule without a target length), and strict
JSON: a score or log-probability of ``-inf`` (the degenerate answer of an example none of whose hypotheses
scored a finite number: ``answers.records``) is written as null, as JSON has no infinity.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace

from onmt_optimal.search.stopping import StopReason

__all__ = ["OPTIONAL_STATS", "STATS", "Record", "StopReason", "with_rows_skipped"]


@dataclass(frozen=True)
class Record:
    """One rule's answer for one sentence; see the module docstring."""

    steps: int  # decoding steps until the rule stopped (tokens generated, EOS included)
    stop_reason: StopReason  # why it stopped
    score: float  # the 1-best's score under the rule
    log_prob: float  # the 1-best's log p(y|x)
    length: int  # |y|, output tokens without EOS
    target_length: float | None  # the rule's l = ratio * |x|, None without one
    src_length: int  # |x|, source tokens as the model reads them
    completed: int  # completed hypotheses seen until the rule stopped
    tokens: list | None = None  # the 1-best's token ids, without the end token
    text: str | None = None  # the 1-best as words (the tools')
    hypotheses: tuple = field(default=(), compare=False)  # the core's n-best: ((score, token ids), ...)
    kept: int = field(default=0, compare=False)  # how many of ``hypotheses`` are distinct
    rows_skipped: int | None = None  # decoder rows not computed (``-prune_dead``); None: not asked for

    def __getitem__(self, name: str):
        """A field by name, as the records read back from the statistics file are read."""
        if name not in _NAMES:
            raise KeyError(name)
        return getattr(self, name)

    def stats(self) -> dict:
        """The statistics, ``STATS`` in order, then those of ``OPTIONAL_STATS`` the record has (not None)."""
        out = {name: getattr(self, name) for name in STATS}
        for name in OPTIONAL_STATS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def json(self, line: int) -> str:
        """The statistics file's line for this record, ``line`` numbered from 1 (no newline)."""
        return json.dumps({"line": line, **self.json_stats()}, allow_nan=False)

    def json_stats(self) -> dict:
        """``stats()`` as plain JSON values (``search_stats``): ``stop_reason`` a ``str``, a non-finite float None."""
        return {k: str(v) if k == "stop_reason" else None if isinstance(v, float) and not math.isfinite(v) else v
                for k, v in self.stats().items()}

    def plain(self) -> tuple:
        """The statistics as a tuple of Python numbers and strings (to cross a process boundary): ``STATS``, then
        ``rows_skipped`` where the record has it."""
        return tuple(str(value) if name == "stop_reason" else value for name, value in self.stats().items())

    @classmethod
    def from_plain(cls, values: tuple) -> "Record":
        """The record of ``plain``'s tuple."""
        record = cls(*values[:len(STATS)])
        extra = dict(zip(OPTIONAL_STATS, values[len(STATS):]))
        return replace(record, stop_reason=StopReason(record.stop_reason), **extra)

    def with_tokens(self, tokens: list) -> "Record":
        return replace(self, tokens=tokens)

    def with_text(self, text: str) -> "Record":
        return replace(self, text=text)

    def handed_over(self) -> "Record":
        """The record without the n-best it was handed over with (what is kept per line)."""
        return replace(self, hypotheses=(), kept=0) if self.hypotheses else self

    @classmethod
    def empty(cls, target_length: float | None = None) -> "Record":
        """An empty source line, answered with nothing (stop reason ``empty_source``, no tokens); ``target_length``
        as the rule reports it on other lines (0.0 for a rule with a length ratio, else None)."""
        return cls(steps=0, stop_reason=StopReason.EMPTY_SOURCE, score=0.0, log_prob=0.0, length=0,
                   target_length=target_length, src_length=0, completed=0, tokens=[])


def with_rows_skipped(records: list, asked: bool) -> list:
    """``records`` (a list of ``Record`` or None, or of lists of them, one per rule) where ``asked`` (the run's
    ``-prune_dead``): each without ``rows_skipped`` given 0 (its decode skipped none: a beam of one, an empty line,
    a search pruning does not apply to); else ``records`` as they are."""
    if not asked or records is None:
        return records
    def fixed(record):
        if isinstance(record, list):
            return [fixed(r) for r in record]
        return record if record is None or record.rows_skipped is not None else replace(record, rows_skipped=0)
    return [fixed(record) for record in records]


#: the statistics' names, in the statistics file's order
STATS = tuple(f.name for f in fields(Record))[:8]
#: the statistics a record has only in a run that asks for them, in order, after ``STATS``
OPTIONAL_STATS = ("rows_skipped",)
_NAMES = frozenset(f.name for f in fields(Record))
