"""The sums behind the two closing ``PRED`` lines under the new flags (OpenNMT-py's and eole's translators, the
Ray driver): over the decoded sentences' records, whoever decoded them."""
from __future__ import annotations

import math

from onmt_optimal.search.record import Record, StopReason

__all__ = ["Totals"]


class Totals:
    """The sums behind the two closing ``PRED`` lines under the new flags: over the decoded sentences' records
    (empty source lines left out), added in the order given, log-probability, tokens (EOS counted) and the
    search's score. Both translators and the Ray driver add their records here."""

    def __init__(self):
        self.log_prob = self.tokens = self.score = self.decoded = 0

    def add(self, record: Record) -> None:
        if record.stop_reason == StopReason.EMPTY_SOURCE:
            return
        self.log_prob += record.log_prob
        self.tokens += record.length + 1
        self.score += record.score
        self.decoded += 1

    @classmethod
    def of(cls, records) -> "Totals":
        totals = cls()
        for record in records:
            totals.add(record)
        return totals

    def lines(self, nb_sentences: int, label: str) -> list[str] | None:
        """The two closing lines (``label`` names the search's score), or None when no sentence was decoded (the
        toolkit's own line then stands)."""
        if not self.decoded:
            return None
        per_token = self.log_prob / self.tokens
        try:
            ppl = math.exp(-per_token)
        except OverflowError:
            ppl = float("inf")
        return [f"PRED LOG-PROB PER TOKEN: {per_token:.4f}, PRED PPL: {ppl:.2f} (from log-probabilities, EOS "
                f"counted; {self.tokens} tokens) NB SENTENCES: {nb_sentences}",
                f"PRED MEAN SCORE: {self.score / self.decoded:.4f} per sentence, of the search's score {label} "
                f"(mean log-probability per sentence: {self.log_prob / self.decoded:.4f})"]
