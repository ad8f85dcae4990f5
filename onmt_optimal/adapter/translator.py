"""What both toolkits' translators add to their own under the new flags: each line's records, kept by line, a
progress count, and the closing report.

A translator of either toolkit mixes ``RecordKeeping`` in before its own class, names its ``contract.Contract``
(``CONTRACT``) and declares in its constructor ``search`` (``options.Options``), ``_stats`` and ``_rule_results``
(dicts keyed by ``lines.key``) and ``progress`` (None or a callable). ``decoding`` runs one decode with a search,
a beam size and a progress count of its own. ``_write_stats`` writes a decode's statistics file: whole, or, for a
translator a server holds (``stats_log``, a ``serving.StatsLog``), appended under the request's id.
"""
from __future__ import annotations

from contextlib import contextmanager

from onmt_optimal.adapter import contract, lines


class RecordKeeping:
    """See the module docstring."""

    #: the toolkit's contract (``contract.OPENNMT_PY_CONTRACT``, ``contract.EOLE_CONTRACT``)
    CONTRACT: contract.Contract
    #: where a served model's records go, request by request (``serving.StatsLog``, set by the servers'
    #: patches); None: the statistics file is written whole, once per decode
    stats_log = None

    def _write_stats(self, outputs=None, request: str | None = None) -> None:
        """The decode's records (``_stats``) to ``search.stats_file``: appended to ``stats_log`` under
        ``request`` (None: the request being answered) where a server holds the translator, else written whole
        (through ``outputs``, an ``atomic.Outputs`` committed with the run's other files, if given)."""
        if self.stats_log is not None:
            self.stats_log.append(self._stats, request)
        else:
            lines.write_stats(self.search.stats_file, self._stats, outputs)

    def _check_contract(self) -> None:
        """Before a certified search is built: the toolkit translator's members it reads (``contract``)."""
        contract.check(self, self.CONTRACT.translator, self.CONTRACT.toolkit)

    @contextmanager
    def decoding(self, search, beam_size: int | None = None, progress=None):
        """Within the ``with`` block the translator decodes with ``search`` (``options.Options``), a beam of
        ``beam_size`` items (None: its own) and ``progress`` (None, or called with each batch's count of
        sentences); then with its own again. The toolkit's batch code reads the beam size from the translator's
        ``beam_size`` (``contract.Translator``), its one per-decode setting: it is set for the block."""
        own = self.search, self.beam_size, self.progress
        self.search, self.progress = search, progress
        if beam_size is not None:
            self.beam_size = beam_size
        try:
            yield self
        finally:
            self.search, self.beam_size, self.progress = own

    def _keep_records(self, batch, stats, rule_results) -> None:
        """Keep each example's first-rule record (``stats[i]``) and every rule's (``rule_results[i]``, None when
        the decode does not collect them) under its line's key; count the batch's sentences for ``progress``.
        Sub-batches that a toolkit decodes again (eole's ``_maybe_retranslate``) carry no line keys and are
        skipped: their lines are kept from the batch they belong to."""
        if "cid" not in batch:
            return
        for i in range(len(batch["srclen"])):
            key = lines.key(batch, i)
            if stats is not None:
                self._stats[key] = stats[i]
            if rule_results is not None:
                self._rule_results[key] = rule_results[i]
        if self.progress is not None:
            self.progress(len(batch["srclen"]))

    def _report_score(self, name, score_total, nb_sentences):
        """Stock's line without the new flags. With them, stock's ``PRED SCORE`` would be the mean of the search's
        score (reward-augmented under a length reward, so "PPL" = exp(-score) fell below 1): report the mean
        log-probability per output token (EOS counted) and the perplexity from it, then the rule's mean score
        (``lines.report``)."""
        search = self.search
        report = None
        if name == "PRED" and search is not None and not search.stock and nb_sentences:
            report = lines.report(self._stats.values(), nb_sentences, search.scoring)
        if report is None:
            return super()._report_score(name, score_total, nb_sentences)
        self._log(report[0])
        return report[1]
