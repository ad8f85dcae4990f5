"""``CertifiedTranslator``: OpenNMT-py's ``Translator`` with the new search plugged into ``translate_batch``.

Model loading, devices, batching, transforms, the decode loop and output writing are OpenNMT-py's own.
This class only (a) builds a ``CertifiedBeamSearch`` instead of ``BeamSearch`` when a new flag asks for it,
(b) gathers the per-sentence statistics and writes them in input order, (c) answers empty source lines with
an empty line instead of dropping them, and (d) keeps ``-with_score`` working (stock crashes on it, upstream
issue #2583), and (e) gives attention to the beam in the batch-first layout it expects: OpenNMT-py
3.5.1's input-feeding RNN decoder (the default ``decoder_type: rnn``) returns it time-first, so every option
that needs attention (``-replace_unk``, ``-attn_debug``, ``-coverage_penalty``) crashes stock decoding of RNN
models with an IndexError. With none of the new flags, (a) and (b) are skipped and the output is stock
OpenNMT-py's wherever stock produces one.
"""
from __future__ import annotations

import gc
import json

import torch
from onmt.decoders.decoder import InputFeedRNNDecoder
from onmt.translate.translator import Translator

from onmt_optimal import empty_lines, patch
from onmt_optimal.beam_search import CertifiedBeamSearch
from onmt_optimal.options import SearchConfig


class CertifiedTranslator(Translator):
    @classmethod
    def from_opt(cls, model, vocabs, opt, model_opt, global_scorer=None, **kwargs):
        translator = super().from_opt(model, vocabs, opt, model_opt, global_scorer=global_scorer, **kwargs)
        # the model, vocabularies and options now live as long as the process: move them out of the cyclic
        # garbage collector's reach (300k objects for the shipped model, 0.17 s a full collection, which
        # otherwise lands in the middle of decoding every few seconds). Output is unaffected.
        gc.collect()
        gc.freeze()
        translator.search = SearchConfig.from_opt(opt, global_scorer)
        translator._stats = {}
        translator._rule_results = {}
        return translator

    # ---------------------------------------------------------------- one batch
    def translate_batch(self, batch, attn_debug):
        search = getattr(self, "search", None)
        sampling = self.sample_from_topk != 0 or self.sample_from_topp != 0
        if search is None or search.stock or sampling:
            results = super().translate_batch(batch, attn_debug)
            stats = rule_results = None
        else:
            strategy = CertifiedBeamSearch(
                self.beam_size,
                batch_size=len(batch["srclen"]),
                pad=self._tgt_pad_idx,
                bos=self._tgt_bos_idx,
                eos=self._tgt_eos_idx,
                unk=self._tgt_unk_idx,
                start=self._tgt_start_with,
                n_best=self.n_best,
                global_scorer=self.global_scorer,
                min_length=self.min_length,
                max_length=self._max_length(batch),
                return_attention=attn_debug or self.replace_unk,
                block_ngram_repeat=self.block_ngram_repeat,
                exclusion_tokens=self._exclusion_idxs,
                stepwise_penalty=self.stepwise_penalty,
                ratio=self.ratio,
                ban_unk_token=self.ban_unk_token,
                rules=search.rules,
            )
            with torch.no_grad():
                results = self._translate_batch_with_strategy(batch, strategy)
            stats = strategy.search_stats
            rule_results = strategy.rule_results if search.collect else None
        self._answer_empty_lines(batch, results, stats, rule_results)
        for i in range(len(batch["srclen"])):
            if stats is not None:
                self._stats[_line_key(batch, i)] = stats[i]
            if rule_results is not None:
                self._rule_results[_line_key(batch, i)] = rule_results[i]
        if self.with_score:  # stock hands out Python floats here and then calls .item() on them
            results["scores"] = [[torch.as_tensor(s) for s in scores] for scores in results["scores"]]
        return results

    def _decode_and_generate(self, decoder_in, *args, **kwargs):
        log_probs, attn = super()._decode_and_generate(decoder_in, *args, **kwargs)
        if attn is not None and isinstance(self.model.decoder, InputFeedRNNDecoder):
            attn = attn.transpose(0, 1)  # (tgt_len, batch, src_len) -> (batch, tgt_len, src_len)
        return log_probs, attn

    def _max_length(self, batch) -> int:
        """OpenNMT-py's own limit (translator.py), so both searches run the very same beam."""
        if self.max_length_ratio > 0:
            return int(min(self.max_length, batch["src"].size(1) * self.max_length_ratio + 5))
        return self.max_length

    def _answer_empty_lines(self, batch, results, stats, rule_results=None) -> None:
        """A placeholder stood in for each empty source line (see ``empty_lines``): answer it with nothing."""
        for i in range(len(batch["srclen"])):
            if not empty_lines.take(_line_key(batch, i)):
                continue
            device = batch["src"].device
            eos = torch.tensor([self._tgt_eos_idx], device=device)
            results["predictions"][i] = [eos] * self.n_best
            results["scores"][i] = [0.0] * self.n_best
            # the EOS row over the placeholder source, all zero: no attention was computed (-attn_debug prints it)
            no_attention = torch.zeros((1, int(batch["srclen"][i])), device=device)
            results["attention"][i] = [no_attention for _ in range(self.n_best)]
            empty = {"steps": 0, "stop_reason": "empty_source", "score": 0.0, "log_prob": 0.0, "length": 0,
                     "target_length": 0.0, "src_length": 0, "completed": 0}
            if stats is not None:
                stats[i] = dict(empty)
            if rule_results is not None:
                rule_results[i] = [dict(empty, tokens=[]) for _ in rule_results[i]]

    # ---------------------------------------------------------------- a whole input
    def _translate(self, infer_iter, transform=None, attn_debug=False, align_debug=False, phrase_table=""):
        self._stats = {}
        self._rule_results = {}
        result = super()._translate(infer_iter, transform, attn_debug, align_debug, phrase_table)
        search = getattr(self, "search", None)
        if search is not None and search.stats_file:
            with open(search.stats_file, "w", encoding="utf-8") as out:
                for key in sorted(self._stats, key=_line_order):
                    record = dict(line=key[1] + 1, **self._stats[key])
                    out.write(json.dumps(record) + "\n")
        return result


def ordered(records: dict) -> list:
    """Per-line records (keyed by corpus id and line) in input order."""
    return [records[key] for key in sorted(records, key=_line_order)]


def _line_key(batch, i):
    return (batch["cid"][i], int(batch["cid_line_number"][i]))


def _line_order(key):
    return (str(key[0]), key[1])


patch.resume(__name__)  # finish patching OpenNMT-py if this module was the first to import it (patch.py)
