"""Per-line results, the same in every adapter: their keys and input order, the statistics file, the closing report.

OpenNMT-py and eole batch sentences sorted by length, so results come back out of order; each keeps, per
example of a batch, the corpus it came from (``batch["cid"]``) and its line number there
(``batch["cid_line_number"]``). A line's results are kept under ``key(batch, i)`` and written back in input order
(``ordered``): one JSON record per line in the statistics file (``write_stats``), and, under the new flags,
the two closing lines of ``report`` in place of stock's ``PRED SCORE`` / ``PRED PPL`` (which would take a
reward-augmented score for a log-probability, a "perplexity" below 1).
"""
from __future__ import annotations

import json
import math

import torch

from onmt_optimal import atomic
from onmt_optimal.options import SearchConfig
from onmt_optimal.search.beam import AUTO


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
    list of all texts) when there is one. Returns ``records``."""
    texts = [" ".join(ids_to_tokens[i] for i in rule["tokens"]) for line in records for rule in line]
    if detokenize is not None:
        texts = detokenize(texts)
    it = iter(texts)
    for line in records:
        for rule in line:
            rule["text"] = next(it)
    return records


class RuleDecoding:
    """``decode`` for a loaded model of either toolkit (``session.Session``, ``eole.session.EoleSession``), which
    supplies ``translator``, ``vocabs``, ``infer(src)`` and ``detokenize`` (its reverse transforms, or None)."""

    #: where ``decode``'s search keeps its bookkeeping (``SearchConfig.host``): "auto", on the host next to a
    #: CUDA model; None, next to the model
    host = AUTO
    #: a beam of one item may be the toolkit's own search (``SearchConfig.beam_of_one``); False: the core's
    beam_of_one = True

    def decode(self, src, beam_size: int, rules: list, progress=None) -> list[list[dict]]:
        """Decode ``src`` once with ``rules`` (sharing one beam): ``result[line][rule]`` is that rule's record
        (``tokens``, ``text``, ``score``, ``log_prob``, ``length``, ``steps``, ``stop_reason``, ...).
        ``progress``, if given, is called with the number of sentences of each batch once translated (e.g. a
        tqdm bar's ``update``)."""
        translator = self.translator
        translator.beam_size = beam_size
        translator.search = SearchConfig(stock=False, rules=list(rules), collect=True, host=self.host,
                                          beam_of_one=self.beam_of_one)
        translator.progress = progress
        try:
            self.infer(src)
        finally:
            translator.progress = None
        return with_texts(ordered(translator._rule_results), self.vocabs["tgt"].ids_to_tokens, self.detokenize)


def write_stats(path: str, stats: dict, outputs=None) -> None:
    """The statistics file: one JSON record per line, in input order, ``line`` numbered from 1.

    Written through ``outputs`` (an ``atomic.Outputs``: the caller commits it with the run's other files), or, if
    None, on its own: whole or not at all. A failed write raises ``atomic.OutputError``."""
    own = outputs is None
    if own:
        outputs = atomic.Outputs()
    try:
        with atomic.TextFile(outputs, "-stats_file", path, newline=None) as out:
            for k in sorted(stats, key=order):
                out.write(json.dumps(dict(line=k[1] + 1, **stats[k])) + "\n")
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


def empty_records(rules) -> tuple[dict, list[dict]]:
    """The statistics of an empty source line, answered with nothing: the first rule's record and each rule's
    own (with its 1-best ``tokens``), as every adapter reports them (stop reason ``empty_source``)."""
    empty = {"steps": 0, "stop_reason": "empty_source", "score": 0.0, "log_prob": 0.0, "length": 0,
             "target_length": None, "src_length": 0, "completed": 0}
    first = dict(empty, target_length=empty_target(rules[0][0]) if rules else None)
    return first, [dict(empty, tokens=[], target_length=empty_target(score)) for score, _ in rules]


def report(stats, nb_sentences: int, scoring) -> list[str] | None:
    """The two closing lines under the new flags from the per-line ``stats`` (empty source lines left out), or
    None when no line was decoded (the toolkit's own line then stands)."""
    decoded = [s for s in stats if s["stop_reason"] != "empty_source"]
    if not decoded:
        return None
    label = scoring.describe() if hasattr(scoring, "describe") else type(scoring).__name__
    return search_report(sum(s["log_prob"] for s in decoded), sum(s["length"] + 1 for s in decoded),
                         sum(s["score"] for s in decoded), len(decoded), nb_sentences, label)


def search_report(log_prob: float, tokens: int, score: float, decoded: int, nb_sentences: int,
                  label: str) -> list[str]:
    """The two closing lines from sums over the ``decoded`` sentences: log-probability, tokens (EOS counted) and
    the search's score (also written by the Ray driver, which sums what its workers decoded)."""
    per_token = log_prob / tokens
    try:
        ppl = math.exp(-per_token)
    except OverflowError:
        ppl = float("inf")
    return [f"PRED LOG-PROB PER TOKEN: {per_token:.4f}, PRED PPL: {ppl:.2f} (from log-probabilities, EOS "
            f"counted; {tokens} tokens) NB SENTENCES: {nb_sentences}",
            f"PRED MEAN SCORE: {score / decoded:.4f} per sentence, of the search's score {label} "
            f"(mean log-probability per sentence: {log_prob / decoded:.4f})"]
