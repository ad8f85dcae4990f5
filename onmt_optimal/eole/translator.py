"""eole's predictors with the new search: ``Translator`` (encoder-decoder) and ``GeneratorLM`` (decoder-only).

Model loading, devices, batching, transforms, the decode loop and output writing stay eole's. ``Certified``
(mixed into both) only (a) builds the certified beam search instead of eole's when a new option asks for it,
(b) gathers the per-line statistics and writes them in input order (``stats_file``, renamed into place with the
output by ``patch``'s ``infer_file``: ``atomic``), (c) under the new options
answers an empty source line with an empty line (stop reason ``empty_source``; stock eole decodes it as a
sentence of no words), and (d) under them reports the mean log-probability per token and the rule's mean score
instead of stock's ``PRED SCORE``/``PRED PPL`` (which would take a reward-augmented score for a
log-probability), and (e) under them pads each n-best list to ``n_best`` answers when ``n_best`` exceeds the beam
(``report_results``; eole 0.6.4 keeps at most ``beam_size`` answers a line and then fails with an IndexError). With
none of the new options every method defers to eole's: the output is stock's.

Decoder-only models: stock eole decodes a batch of prompts of different lengths by feeding the shortest length
to the model and forcing the longer prompts' remaining tokens as a target prefix, so their "continuation" begins
with the rest of their prompt (and, in eole 0.6.4, skips its first token: ``DecodeStrategy.initialize`` drops
the prefix's first column as if it were a BOS). Under the new options a batch is decoded in sub-batches of prompts
of equal length (left-padded batches, ``left_pad``, need none), so every example's step ``t`` is its ``t``-th
continuation token and ``|x|`` its prompt length; answers are the continuation only, as eole gives for a
batch of one.
"""
from __future__ import annotations

import json

import torch
from eole import EOLE_TORCH_COMPILE
from eole.predict.generator import GeneratorLM
from eole.predict.translator import Translator

from onmt_optimal.adapter import batch_search, contract, lines
from onmt_optimal.adapter.translator import RecordKeeping
from onmt_optimal.adapter import empty_lines
from onmt_optimal.eole import run_outputs
from onmt_optimal.eole.beam_search import CertifiedBeamSearch, CertifiedBeamSearchLM
from onmt_optimal.eole.options import OptionError
from onmt_optimal.option_table import EOLE
from onmt_optimal.options import Options, beam_search_options
from onmt_optimal.adapter.needed_rows import NeededRows, rows_of
from onmt_optimal.search.record import with_rows_skipped


class Certified(RecordKeeping):
    """The mixin; see the module docstring. ``search`` (``options.Options``) says what to run."""

    CONTRACT = contract.EOLE_CONTRACT
    #: the id of the server request being decoded (``eole.server``: eole's server hands it over as a setting of
    #: the request, which eole's ``update_settings`` sets on the predictor); None outside a server, and after each
    #: decode
    onmt_optimal_request = None
    #: the most records kept for requests whose answer has not taken them yet (a client gone before its decode
    #: ended leaves them)
    SERVED_KEPT = 256

    def __init__(self, model, vocabs, config, model_config, *args, global_scorer=None, **kwargs):
        super().__init__(model, vocabs, config, model_config, *args, global_scorer=global_scorer, **kwargs)
        self.search = Options.from_config(config, global_scorer)  # config validated as it was built (patch)
        if not self.search.stock and getattr(model_config, "add_estimator", False):
            raise OptionError("onmt-optimal's options do not rerank with the model's estimator (add_estimator): "
                              f"drop {beam_search_options(EOLE)}/-stats_file for this model")
        self._stats, self._rule_results = {}, {}
        #: each served request's records, by its id, until its answer takes them (``eole.server``)
        self.served_records = {}
        self._empty_lines = empty_lines.EmptyLines()  # each run's own, made by _predict
        #: called with the number of sentences of each batch once it is translated (None: nobody listens)
        self.progress = None

    # ---------------------------------------------------------------- one batch
    def predict_batch(self, batch, attn_debug, *args, **kwargs):
        search = self.search
        sampling = self.top_k != 0 or self.top_p != 0
        if search.stock or sampling or kwargs.get("scoring"):
            return super().predict_batch(batch, attn_debug, *args, **kwargs)
        self._check_contract()
        results, stats, rule_results = self._certified(batch, attn_debug)
        self._answer_empty_lines(batch, results, stats, rule_results)
        # with -prune_dead every record says how many rows its decode skipped
        stats, rule_results = (with_rows_skipped(records, search.prune_dead) for records in (stats, rule_results))
        self._keep_records(batch, stats, rule_results if search.collect else None)
        return results

    def _answer_empty_lines(self, batch, results, stats, rule_results) -> None:
        """Answer each empty source line with nothing (score 0, stop reason ``empty_source``)."""
        rules = self.search.rules
        for i, length in enumerate(batch["srclen"].tolist()):
            if "cid" not in batch or not self._empty_lines.take(lines.key(batch, i)):
                continue
            device = batch["src"].device
            eos = torch.tensor([self._tgt_eos_idx[0]], device=device)
            results["predictions"][i] = [eos] * self.n_best
            results["scores"][i] = [0.0] * self.n_best
            results["attention"][i] = [torch.zeros((1, max(length, 1)), device=device)] * self.n_best
            if results.get("n_text_tokens") is not None:
                results["n_text_tokens"][i] = [0] * self.n_best
            stats[i], rule_results[i] = lines.empty_records(rules)

    # ---------------------------------------------------------------- a whole input
    def _predict(self, infer_iter, *args, **kwargs):
        self._stats, self._rule_results = {}, {}
        with empty_lines.keeping(not self.search.stock) as self._empty_lines:
            result = super()._predict(infer_iter, *args, **kwargs)
        request, self.onmt_optimal_request = self.onmt_optimal_request, None
        if not self.search.stock and request is not None:
            self._serve_records(request)
        if not self.search.stock and self.search.stats_file:
            # with the run's output when the engine's infer_file runs (patch), else on its own; a served model's
            # appended under its request's id (``eole.server``)
            self._write_stats(run_outputs.current(), request)
        return result

    def _serve_records(self, request: str) -> None:
        """The decode's records, in input order, as the statistics file has them (``Record.json``), kept for the
        answer of server request ``request``."""
        records = [json.loads(self._stats[key].json(n))
                   for n, key in enumerate(sorted(self._stats, key=lines.order), start=1)]
        while len(self.served_records) >= self.SERVED_KEPT:
            self.served_records.pop(next(iter(self.served_records)), None)
        self.served_records[request] = records

    def report_results(self, gold_score, gold_log_probs, batch, batch_size, decode_strategy, estim):
        """eole's, which pairs each line's answers with ``estim`` (``beam_size`` values a line) and so keeps at
        most ``beam_size`` of them; under the new options the search hands ``n_best`` answers a line (the last one
        repeated where fewer completed), and ``estim`` (ones: the estimator is refused) gets as many."""
        if not self.search.stock and estim and len(estim[0]) < self.n_best:
            estim = [row + [row[-1] if row else 1.0] * (self.n_best - len(row)) for row in estim]
        return super().report_results(gold_score, gold_log_probs, batch, batch_size, decode_strategy, estim)


class CertifiedTranslator(Certified, Translator):
    """eole's encoder-decoder ``Translator`` with the new search."""

    def _certified(self, batch, attn_debug):
        if batch_search.beam_of_one(self, self.search, attn_debug):
            # a beam of one item: eole's own beam search, its answer scored under every rule (search.beam_of_one)
            results = super(Certified, self).predict_batch(batch, attn_debug)
            stats, rule_results = batch_search.beam_of_one_answers(self, self.search, batch, results,
                                                                   set(self._tgt_eos_idx))
            return results, stats, rule_results
        strategy = batch_search.build(CertifiedBeamSearch, self, self.search, len(batch["srclen"]),
                                      batch_search.max_length(self, batch), attn_debug)
        strategy.prune_dead = self.search.prune_dead and self._may_decode_needed_rows()
        with torch.no_grad():
            results = self._predict_batch_with_strategy(batch, strategy)
        return results, strategy.search_stats, strategy.rule_results

    def _may_decode_needed_rows(self) -> bool:
        """Can ``_decode_needed_rows`` decode this translator's batches exactly: an RNN decoder (its attention, one
        head over the source, gives each row the same numbers wherever the row sits in the batch; eole's
        transformer decoder computes its CPU attention per head with a batched product whose last bits depend on the
        row's place: with two heads, a row at an odd place of the batch gets other last bits than at an even one,
        so a compacted batch would change scores), eole's eager decode of dynamic shapes (no torch.compile, whose
        graphs are made for the batch's rows), one process (tensor parallelism broadcasts the beam's choice from
        rank 0: every rank would have to agree on the rows), no target prefix?"""
        from eole.decoders.rnn_decoder import RNNDecoderBase

        static = EOLE_TORCH_COMPILE if self.dynamic_shapes is None else not self.dynamic_shapes
        return (isinstance(self.model.decoder, RNNDecoderBase) and not static
                and getattr(self, "parallel_gpu", 1) <= 1 and not self.tgt_file_prefix)

    def _predict_batch_with_strategy(self, batch, decode_strategy):
        """eole's decode loop, or, where the search skips its dead rows (``-prune_dead``:
        ``LineageBeamSearch.prunes``, asked for by ``_certified`` where ``_may_decode_needed_rows``),
        ``_decode_needed_rows``."""
        if isinstance(decode_strategy, CertifiedBeamSearch) and decode_strategy.will_prune():
            return self._decode_needed_rows(batch, decode_strategy)
        return super()._predict_batch_with_strategy(batch, decode_strategy)

    def _decode_needed_rows(self, batch, decode_strategy):
        """eole 0.6.4's ``Translator._predict_batch_with_strategy`` (an RNN decoder, eager, dynamic shapes, one
        process, no target prefix, no estimator: ``Certified`` refuses one) that runs the decoder, the generator and the log-softmax
        only for the rows the search needs (``search.dead``), as OpenNMT-py's (``opennmt.translator``).

        The decoder's state (an RNN's hidden state and input feed) holds the rows decoded last (``rows``, in order), not the beam's ``B * beam``: where eole reorders it by the beam's
        parents (``select_indices``), this reorders it by ``where[select_indices]`` at the rows needed next,
        ``where`` being each decoded row's place in the state: one gather, as eole's. A needed row's parent was
        decoded (its bound is at least its child's, so it was needed). The other rows' log-probabilities are
        whatever ``search.dead.spread`` leaves there: numbers at most 0, all the proof needs. A step decodes at
        least ``search.dead.LEAST_ROWS`` rows. The estimator's values are eole's without an estimator: ones."""
        from time import time

        parallel_paths = decode_strategy.parallel_paths
        decode_strategy.parallel_gpu = 1
        decode_strategy.static_batch_size = False
        batch_size = len(batch["srclen"])
        if self.report_time:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            beg_time = time()
        src, enc_final_hs, enc_out, src_len = self._run_encoder(batch)
        self.model.decoder.init_state(enc_out=enc_out, enc_final_hs=enc_final_hs)
        gold_score, gold_log_probs = self._gold_score(batch, enc_out, src_len, enc_final_hs, batch_size, src)
        fn_tile, enc_out = decode_strategy.initialize(enc_out, src_len, target_prefix=None)
        assert decode_strategy.prunes
        if fn_tile is not None:
            self.model.decoder.map_state(fn_tile)
        if self.report_time:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.step0_time.append(time() - beg_time)
        self._log_inference_backends()
        needed = NeededRows(decode_strategy, decode_strategy.alive_seq.device)
        first = needed.rows
        self.model.decoder.map_state(lambda state: state[first])
        for step in range(decode_strategy.max_length):
            decoder_input, memory, lengths = needed.inputs(decode_strategy.current_predictions.view(-1, 1), enc_out,
                                                           decode_strategy.src_len)
            log_probs, _ = self._decode_and_generate(decoder_input, memory, src_len=lengths, step=step,
                                                     return_attn=False)
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
            self.model.decoder.map_state(lambda state: state[state_rows])
            self.model.decoder._extend_cache()  # as eole's loop (a no-op without dynamic shapes)
        self.model.decoder._disable_cache()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        estim = [[1.0] * parallel_paths for _ in range(batch_size)]
        return self.report_results(gold_score, gold_log_probs, batch, batch_size, decode_strategy, estim)


class CertifiedGeneratorLM(Certified, GeneratorLM):
    """eole's decoder-only ``GeneratorLM`` with the new search, over each prompt's continuation."""

    def _certified(self, batch, attn_debug):
        lengths = batch["srclen"].tolist()
        if batch.get("left_pad") or len(set(lengths)) == 1:
            return self._certified_group(batch, attn_debug)
        groups: dict[int, list[int]] = {}
        for i, length in enumerate(lengths):
            groups.setdefault(length, []).append(i)
        parts = [(rows, self._certified_group(_sub_batch(batch, rows, length), attn_debug))
                 for length, rows in sorted(groups.items())]
        return _merge(batch, parts)

    def _certified_group(self, batch, attn_debug):
        speculative = getattr(self, "self_speculative_decoding", False)
        if batch_search.beam_of_one(self, self.search, attn_debug) and not speculative:
            # a beam of one item: eole's own beam search over prompts of one length (or left-padded), its answer
            # scored under every rule (search.beam_of_one)
            results = super(Certified, self).predict_batch(batch, attn_debug)
            stats, rule_results = batch_search.beam_of_one_answers(self, self.search, batch, results,
                                                                   set(self._tgt_eos_idx), self.max_length)
            return results, stats, rule_results
        strategy = batch_search.build(CertifiedBeamSearchLM, self, self.search, len(batch["srclen"]),
                                      self.max_length, attn_debug)
        with torch.no_grad():
            results = self._predict_batch_with_strategy(batch, strategy)
        return results, strategy.search_stats, strategy.rule_results


# ------------------------------------------------------------------------ decoder-only batches by prompt length
def _sub_batch(batch: dict, rows: list[int], length: int) -> dict:
    """The examples at ``rows`` of ``batch`` (right-padded prompts, all ``length`` long), padding cut off."""
    B = len(batch["srclen"])
    index = torch.tensor(rows, device=batch["src"].device)
    sub = {}
    for key, value in batch.items():
        if torch.is_tensor(value) and value.dim() > 0 and value.shape[0] == B:
            sub[key] = value.index_select(0, index)
        elif isinstance(value, list) and len(value) == B:
            sub[key] = [value[i] for i in rows]
        else:
            sub[key] = value
    sub["src"] = sub["src"][:, :length]
    return sub


def _merge(batch: dict, parts: list) -> tuple:
    """One batch's (results, stats, rule_results) from its sub-batches' ``[(rows, (results, ...)), ...]``."""
    B = len(batch["srclen"])
    order = [row for rows, _ in parts for row in rows]
    results = {"batch": batch}
    for key, value in parts[0][1][0].items():
        if key == "batch":
            continue
        values = [part[0][key] for _, part in parts]
        if value is None:
            results[key] = None
        elif torch.is_tensor(value):
            merged = torch.cat(values)
            results[key] = merged[torch.tensor(order, device=merged.device).argsort()]
        else:
            merged = [item for v in values for item in v]
            results[key] = [None] * B
            for row, item in zip(order, merged):
                results[key][row] = item
    stats, rule_results = [None] * B, [None] * B
    for rows, (_, part_stats, part_rules) in parts:
        for j, row in enumerate(rows):
            stats[row], rule_results[row] = part_stats[j], part_rules[j]
    return results, stats, rule_results
