"""Per-line results, the same in every adapter: their keys and input order, the statistics file, the closing report.

OpenNMT-py and eole batch sentences sorted by length, so results come back out of order; each keeps, per
example of a batch, the corpus it came from (``batch["cid"]``) and its line number there
(``batch["cid_line_number"]``). A line's results are kept under ``key(batch, i)`` and written back in input order
(``ordered``): one JSON record per line in the statistics file (``write_stats``), and, under the new flags,
the two closing lines of ``report`` in place of stock's ``PRED SCORE`` / ``PRED PPL`` (which would take a
reward-augmented score for a log-probability, a "perplexity" below 1).
"""
from __future__ import annotations

import torch

from onmt_optimal import atomic
from onmt_optimal.adapter.totals import Totals
from onmt_optimal.search.record import Record


def key(batch, i: int) -> tuple:
    """The key of example ``i`` of ``batch``: (corpus id, line number in it)."""
    return (batch["cid"][i], int(batch["cid_line_number"][i]))


def order(line_key: tuple) -> tuple:
    """Sort key: input order (corpus ids compared as text)."""
    return (str(line_key[0]), line_key[1])


def ordered(records: dict) -> list:
    """Per-line records (keyed by ``key``) in input order."""
    return [records[k] for k in sorted(records, key=order)]


def with_texts(records: list, ids_to_tokens, detokenize=None) -> list:
    """Give every rule's record of every line (``records[line][rule]``, with its 1-best ``tokens`` as ids) its
    ``text``: the tokens as words, through ``detokenize`` (the model's reverse transforms, a function of the
    list of all texts) when there is one. Returns ``records``, each line's list of records replaced in place."""
    texts = [" ".join(ids_to_tokens[i] for i in rule.tokens) for line in records for rule in line]
    if detokenize is not None:
        texts = detokenize(texts)
    it = iter(texts)
    for line in records:
        line[:] = [rule.with_text(next(it)) for rule in line]
    return records


class StatsFile:
    """The statistics file (``-stats_file``), the one writer of it: one ``Record.json`` per line, in the order
    written, through ``outputs`` (an ``atomic.Outputs``, which renames it into place with the run's other
    files). A failed write raises ``atomic.OutputError``."""

    def __init__(self, outputs, path: str):
        self._file = atomic.TextFile(outputs, "-stats_file", path, newline=None)

    def write(self, line: int, record: Record) -> None:
        """``record`` as line ``line`` (numbered from 1) of the input."""
        self._file.write(record.json(line) + "\n")

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "StatsFile":
        return self

    def __exit__(self, *exc) -> None:
        self._file.__exit__(*exc)


def write_stats(path: str, stats: dict, outputs=None) -> None:
    """The statistics file of ``stats`` (records keyed by ``key``), in input order, ``line`` numbered from 1.

    Written through ``outputs`` (an ``atomic.Outputs``: the caller commits it with the run's other files), or, if
    None, on its own: whole or not at all. A failed write raises ``atomic.OutputError``."""
    own = outputs is None
    if own:
        outputs = atomic.Outputs()
    try:
        with StatsFile(outputs, path) as out:
            for k in sorted(stats, key=order):
                out.write(k[1] + 1, stats[k])
        if own:
            outputs.commit()
    except BaseException:
        if own:
            outputs.abort()
        raise


def empty_target(scoring):
    """``l`` of an empty source line (|x| = 0) under ``scoring``: 0.0 for a rule with a length ratio, else None,
    the same type as the rule reports on other lines."""
    target = scoring.target_length(torch.zeros(1)) if hasattr(scoring, "target_length") else None
    return None if target is None else float(target[0])


def empty_records(rules) -> tuple[Record, list[Record]]:
    """The records of an empty source line, answered with nothing (``Record.empty``): the first rule's and each
    rule's own, as every adapter reports them."""
    per_rule = [Record.empty(empty_target(score)) for score, _ in rules]
    return (per_rule[0] if per_rule else Record.empty()), per_rule


def label(scoring) -> str:
    """How the closing lines name the search's score ``scoring``."""
    return scoring.describe() if hasattr(scoring, "describe") else type(scoring).__name__


def report(stats, nb_sentences: int, scoring) -> list[str] | None:
    """The two closing lines under the new flags from the per-line records ``stats`` (``Totals``), or None when
    no line was decoded (the toolkit's own line then stands)."""
    return Totals.of(stats).lines(nb_sentences, label(scoring))
