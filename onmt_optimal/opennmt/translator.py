"""``CertifiedTranslator``: OpenNMT-py's ``Translator`` with the new search plugged into ``translate_batch``.

Model loading, devices, batching, transforms, the decode loop and output writing are OpenNMT-py's own.
This class only (a) builds a ``CertifiedBeamSearch`` instead of ``BeamSearch`` when a new flag asks for it (for
a beam of one item, where every rule answers what stock's search returns, it runs stock's and scores the answer:
``search.beam_of_one``),
(b) gathers the per-sentence statistics and writes them in input order, (c) answers empty source lines with
an empty line instead of dropping them, and (d) keeps ``-with_score`` working (stock crashes on it, upstream
issue #2583), (e) gives attention to the beam in the batch-first layout it expects: OpenNMT-py
3.5.1's input-feeding RNN decoder (the default ``decoder_type: rnn``) returns it time-first, so every option
that needs attention (``-replace_unk``, ``-attn_debug``, ``-coverage_penalty``) crashes stock decoding of RNN
models with an IndexError, (f) answers an empty ``-src`` file with an empty output (stock: UnboundLocalError),
(g) writes ``-output`` and ``-stats_file`` whole or not at all (``output.RunOutput``, ``atomic``: renamed into
place together once the translation has ended; a failure or an interrupt leaves earlier files as they were),
(h) counts sentences translated for a progress bar (``progress``: a callable, or ``-progress`` for a tqdm bar on
stderr) and (i) under the new flags reports the mean log-probability per token and the active rule's mean score
instead of stock's ``PRED SCORE``/``PRED PPL`` (``adapter.translator.RecordKeeping``, shared with eole). With
none of the new flags, (a), (b) and (i) are skipped and the output is stock OpenNMT-py's wherever stock produces
one.
"""
from __future__ import annotations

import torch
from onmt.decoders.decoder import InputFeedRNNDecoder
from onmt.translate.translator import Translator

from onmt_optimal.adapter import batch_search, contract, lines
from onmt_optimal.adapter.translator import RecordKeeping
from onmt_optimal.adapter import empty_lines
from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch
from onmt_optimal.opennmt.output import RunOutput
from onmt_optimal.opennmt.options import read_parsed
from onmt_optimal.options import Options
from onmt_optimal.progress import count_lines, sentence_bar
from onmt_optimal.adapter.needed_rows import NeededRows, rows_of
from onmt_optimal.search.record import with_rows_skipped


class CertifiedTranslator(RecordKeeping, Translator):
    CONTRACT = contract.OPENNMT_PY_CONTRACT

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        #: what a decode runs (``options.Options``; None, built without ``from_opt``: stock's search), set by
        #: ``from_opt``, which OpenNMT-py's ``build_translator`` calls
        self.search = None
        #: the records of the options it was built from (``-progress``, ``-src``), or None
        self._own = self._flags = None
        #: each line's first-rule record and every rule's, by ``lines.key``: each translation's own (``_translate``)
        self._stats, self._rule_results = {}, {}
        self._empty_lines = empty_lines.EmptyLines()  # each translation's own (``_translate``)
        #: called with the number of sentences of each batch once it is translated (None: nobody listens)
        self.progress = None

    @classmethod
    def from_opt(cls, model, vocabs, opt, model_opt, global_scorer=None, **kwargs):
        """Stock's ``from_opt`` (which calls the class with a fixed list of arguments), then the search ``opt``
        (validated with the command line) selects, its options read once here (``opennmt.options.read_parsed``)."""
        translator = super().from_opt(model, vocabs, opt, model_opt, global_scorer=global_scorer, **kwargs)
        translator._own, translator._flags = read_parsed(opt)
        translator.search = Options.from_records(translator._own, translator._flags, translator.global_scorer)
        return translator

    # ---------------------------------------------------------------- one batch
    def translate_batch(self, batch, attn_debug):
        search = self.search
        sampling = self.sample_from_topk != 0 or self.sample_from_topp != 0
        if search is None or search.stock or sampling:
            results = super().translate_batch(batch, attn_debug)
            stats = rule_results = None
        else:
            self._check_contract()
            results, stats, rule_results = self._certified(batch, attn_debug, search)
        self._answer_empty_lines(batch, results, stats, rule_results, search)
        if stats is not None:  # with -prune_dead every record says how many rows its decode skipped
            stats, rule_results = (with_rows_skipped(records, search.prune_dead) for records in (stats, rule_results))
        self._keep_records(batch, stats, rule_results)
        if self.with_score:  # stock hands out Python floats here and then calls .item() on them
            results["scores"] = [[torch.as_tensor(s) for s in scores] for scores in results["scores"]]
        return results

    def _certified(self, batch, attn_debug, search):
        """``(results, stats, rule_results)`` of ``batch`` decoded with ``search``: for a beam of one item stock's
        search, its answer scored under every rule (``search.beam_of_one``), else the certified beam search."""
        if batch_search.beam_of_one(self, search, attn_debug):
            results = super().translate_batch(batch, attn_debug)
            stats, rule_results = batch_search.beam_of_one_answers(self, search, batch, results, {self._tgt_eos_idx})
        else:
            strategy = batch_search.build(CertifiedBeamSearch, self, search, len(batch["srclen"]),
                                          batch_search.max_length(self, batch), attn_debug)
            # the dead rows are skipped by ``_decode_needed_rows``, which has no copy generator and no target prefix
            strategy.prune_dead = self._prunes(search, batch) and not self.copy_attn and not self.tgt_file_prefix
            with torch.no_grad():
                results = self._translate_batch_with_strategy(batch, strategy)
            stats, rule_results = strategy.search_stats, strategy.rule_results
        return results, stats, rule_results if search.collect else None

    @staticmethod
    def _prunes(search, batch) -> bool:
        """Skip the dead rows (``search.dead``)? Where ``-prune_dead`` asks; without it (``prune_dead`` None), where
        nothing the run writes shows it (no statistics file, no records kept for a tool: a pruned decode's
        translations and scores are the unpruned one's, its records' ``completed`` may not be), on a CPU, whose
        products of 4 or more rows round each row alike (``search.dead.LEAST_ROWS``), and in a batch of several
        sentences (a batch of one gains little)."""
        if search.prune_dead is not None:
            return search.prune_dead
        return not search.stats_file and not search.collect and len(batch["srclen"]) > 1 \
            and batch["src"].device.type == "cpu"

    def _translate_batch_with_strategy(self, batch, decode_strategy):
        """Stock's decode loop, or, where the search skips its dead rows (``-prune_dead``:
        ``LineageBeamSearch.prunes``, asked for by ``_certified`` with no copy generator and no target prefix),
        ``_decode_needed_rows``."""
        if isinstance(decode_strategy, CertifiedBeamSearch) and decode_strategy.will_prune():
            return self._decode_needed_rows(batch, decode_strategy)
        return super()._translate_batch_with_strategy(batch, decode_strategy)

    def _decode_needed_rows(self, batch, decode_strategy):
        """OpenNMT-py 3.5.1's ``_translate_batch_with_strategy`` (no copy generator, no target prefix) that runs the
        decoder, the generator and the log-softmax only for the rows the search needs (``search.dead``).

        The decoder's state holds the rows decoded last, not the beam's ``B * beam``; ``adapter.needed_rows``
        keeps that bookkeeping (the step's inputs at those rows, the log-probabilities spread back, the state's rows
        for the next step: one gather, as stock's reorder). With ``n`` needed rows a step decodes
        ``max(n, search.dead.LEAST_ROWS)``: the rows it need not decode are those whose output is not used."""
        batch_size = len(batch["srclen"])
        src, enc_final_hs, enc_out, src_len = self._run_encoder(batch)
        self.model.decoder.init_state(src, enc_out, enc_final_hs)
        gold_score, gold_log_probs = self._gold_score(batch, enc_out, src_len, False, enc_final_hs, batch_size,
                                                      src)
        fn_map_state, enc_out, _ = decode_strategy.initialize(enc_out, src_len, None, target_prefix=None)
        assert decode_strategy.prunes
        if fn_map_state is not None:
            self.model.decoder.map_state(fn_map_state)
        needed = NeededRows(decode_strategy, decode_strategy.alive_seq.device)
        first, total = needed.rows, decode_strategy.alive_seq.shape[0]
        # a transformer's layer caches hold the previous batch's rows until its first step rebuilds them
        # (``_init_cache``): stock tiles them with the rest, unused; here they stay as they are
        self.model.decoder.map_state(lambda state, dim: state[first] if state.shape[0] == total else state)
        for step in range(decode_strategy.max_length):
            decoder_input, memory, lengths = needed.inputs(decode_strategy.current_predictions.view(-1, 1, 1),
                                                           enc_out, decode_strategy.src_len)
            log_probs, _ = self._decode_and_generate(
                decoder_input, memory, batch, src_len=lengths, src_map=None, step=step,
                batch_offset=decode_strategy.batch_offset, return_attn=False)
            decode_strategy.advance(needed.log_probs(log_probs), None)
            any_finished = any([any(sublist) for sublist in decode_strategy.is_finished_list])
            if any_finished:
                decode_strategy.update_finished()
                if decode_strategy.done:
                    break
            select_indices = decode_strategy.select_indices
            if any_finished:
                enc_out = rows_of(enc_out, select_indices)
            state_rows = needed.state_rows(select_indices)
            self.model.decoder.map_state(lambda state, dim: state[state_rows])
        return self.report_results(gold_score, gold_log_probs, batch, batch_size, decode_strategy)

    def _decode_and_generate(self, decoder_in, *args, **kwargs):
        log_probs, attn = super()._decode_and_generate(decoder_in, *args, **kwargs)
        if attn is not None and isinstance(self.model.decoder, InputFeedRNNDecoder):
            attn = attn.transpose(0, 1)  # (tgt_len, batch, src_len) -> (batch, tgt_len, src_len)
        return log_probs, attn

    def _answer_empty_lines(self, batch, results, stats, rule_results=None, search=None) -> None:
        """A placeholder stood in for each empty source line (see ``empty_lines``): answer it with nothing."""
        for i in range(len(batch["srclen"])):
            if not self._empty_lines.take(lines.key(batch, i)):
                continue
            device = batch["src"].device
            eos = torch.tensor([self._tgt_eos_idx], device=device)
            results["predictions"][i] = [eos] * self.n_best
            results["scores"][i] = [0.0] * self.n_best
            # the EOS row over the placeholder source, all zero: no attention was computed (-attn_debug prints it)
            no_attention = torch.zeros((1, int(batch["srclen"][i])), device=device)
            results["attention"][i] = [no_attention for _ in range(self.n_best)]
            first, per_rule = lines.empty_records(search.rules if search is not None and not search.stock else [])
            if stats is not None:
                stats[i] = first
            if rule_results is not None:
                rule_results[i] = per_rule[: len(rule_results[i])]

    # ---------------------------------------------------------------- a whole input
    def _translate(self, infer_iter, transform=None, attn_debug=False, align_debug=False, phrase_table=""):
        self._stats = {}
        self._rule_results = {}
        out = self.out_file if isinstance(self.out_file, RunOutput) else None
        try:
            with empty_lines.keeping() as self._empty_lines:  # before the first batch is read
                result = self._translate_all(infer_iter, transform, attn_debug, align_debug, phrase_table)
            if out is not None:
                out.open()  # an input with no line leaves an empty output, as in stock
            if self.search is not None and self.search.stats_file:
                self._write_stats(out.outputs if out is not None else None)
            if out is not None:
                out.commit()  # -output and -stats_file, both complete, renamed into place
        except BaseException:
            if out is not None:
                out.abort()  # a failure or an interrupt: every earlier file stays as it was
            raise
        return result

    def _translate_all(self, infer_iter, transform, attn_debug, align_debug, phrase_table):
        batches = _Peeked(infer_iter)
        bar = self._progress_bar()
        try:
            if batches.empty:  # stock reads the last batch's keys after its loop: UnboundLocalError
                if self.report_score:
                    self._log(self._report_score("PRED", 0.0, 0))
                return [], []
            return super()._translate(batches.iterable, transform, attn_debug, align_debug, phrase_table)
        finally:
            if bar is not None:
                self.progress = None
                bar.close()

    def _progress_bar(self):
        """With ``-progress``: a tqdm bar on stderr, sentences translated out of the lines of ``-src``."""
        if self.progress is not None or self._flags is None or not self._flags.progress:
            return None
        total = count_lines(self._own.src)
        bar = sentence_bar(total)

        def advance(n):
            bar.update(n)
            if total is not None and bar.n >= total:
                bar.close()  # before OpenNMT-py's closing log lines

        self.progress = advance
        return bar


class _Peeked:
    """``infer_iter`` with its first batch already read, to tell an empty input apart before stock's loop.

    ``iterable`` yields every batch, the first included, and answers any other attribute (``bucket_size``,
    ``transforms``) as ``infer_iter`` does."""

    def __init__(self, infer_iter):
        self._inner = infer_iter
        if isinstance(infer_iter, list):
            self.empty, self.iterable = not infer_iter, infer_iter
            return
        self._it = iter(infer_iter)
        self._first = next(self._it, _NOTHING)
        self.empty = self._first is _NOTHING
        self.iterable = self

    def __iter__(self):
        if self._first is not _NOTHING:
            first, self._first = self._first, _NOTHING
            yield first
        yield from self._it

    def __getattr__(self, name):
        return getattr(self._inner, name)


_NOTHING = object()
