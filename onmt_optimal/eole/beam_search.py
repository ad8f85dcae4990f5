"""eole's ``BeamSearch`` (encoder-decoder) and ``BeamSearchLM`` (decoder-only) driven by the search core.

The toolkit-free part (collecting, stopping, handing answers over, dropping finished examples) is
``onmt_optimal.adapter.beam_search.LineageBeamSearch``, shared with the OpenNMT-py adapter; here is only eole's own
step, ``BeamSearchBase.advance`` of eole 0.6.4 statement for statement but for three things: the core picks the beam
(an exact top-k), nothing is read on the host (stock's ``is_finished_list``), and a product with a length penalty of
1 is skipped. What differs from OpenNMT-py 3.5.1's step, and how it is kept:

* several end tokens (``optional_eos``): an item ends on any of them (``torch.isin``, as eole);
* ``static_batch_size`` (eole keeps finished examples in the batch under ``torch.compile``): this search always
  removes them (``static_batch_size`` reads False), so the decode loop reorders the model state as it does for
  dynamic shapes; the answers are the same;
* a forced prefix (``tgt_file_prefix``): eole resets the live item's score to 0 where the prefix ends; kept;
* tensor parallelism: the beam's choice is broadcast from rank 0, as eole does;
* ``n_text_tokens`` (eole's timing statistics) gets each answer's token count.

``BeamSearchLM``: ``src_len`` follows the generated text (eole adds 1 a step); the core keeps each prompt's
own length as ``|x|``, read at ``initialize``. The decoder-only glue (``translator``) hands it batches whose
prompts all end where decoding starts (no forced prompt tail), so step ``t`` is the ``t``-th continuation token.
"""
from __future__ import annotations

from dataclasses import replace

import torch
from eole.predict.beam_search import BeamSearch, BeamSearchLM

from onmt_optimal.adapter import contract
from onmt_optimal.adapter.beam_search import LineageBeamSearch
from onmt_optimal.search.top_k import TopK, pick, top_k
from onmt_optimal.search.transfer import AUTO


class _EoleStep(LineageBeamSearch):
    """eole's step for the core (see the module docstring); mixed into both of eole's beam searches."""

    CONTRACT = contract.EOLE_CONTRACT

    def __init__(self, *args, rules: list, top_k: TopK = top_k, host: str | None = AUTO, **kwargs):
        super().__init__(*args, **kwargs)  # eole's BeamSearch or BeamSearchLM
        self._init_search(rules, self.eos[0], top_k, host)
        self._eos_ids = set(self.eos)

    # eole sets this from its compile settings before decoding; this search always drops finished examples
    @property
    def static_batch_size(self):
        return False

    @static_batch_size.setter
    def static_batch_size(self, value):
        pass

    def _answered(self, b, tokens):
        self.n_text_tokens[b].append(len(tokens) - self._prefix_len)

    def _fix_answer(self, result):
        """The core knows one end token; with ``optional_eos`` an answer may end on another one."""
        tokens = result.hypotheses[0][1]
        if len(self._eos_ids) > 1 and tokens and tokens[-1] in self._eos_ids and tokens[-1] != self.eos[0]:
            result = replace(result, length=len(tokens) - 1, tokens=tokens[:-1])
        return result

    def _expand(self, log_probs, attn):
        """``BeamSearchBase.advance`` of eole 0.6.4 up to the beam's choice (see the module docstring). Returns
        ``(cumulative, length_penalty, ends)`` (``contract.Hooks._expand``); an item ends on any of eole's end
        tokens."""
        from eole.utils.tensor_parallel import broadcast_from_rank_zero

        _B = log_probs.shape[0] // self.beam_size
        if self._stepwise_cov_pen and self._prev_penalty is not None:
            self.topk_log_probs += self._prev_penalty
            self.topk_log_probs -= self.global_scorer.cov_penalty(self._coverage + attn, self.global_scorer.beta).view(
                _B, self.beam_size
            )
        t = len(self)
        self.ensure_min_length(log_probs)
        self.ensure_unk_removed(log_probs)
        if self._prefix_len > 0 and t == self._prefix_len:
            self.topk_log_probs[:, 0] = 0.0
        cumulative = log_probs + self.topk_log_probs.view(_B * self.beam_size, 1)
        length_penalty = self.global_scorer.length_penalty(t + 1, alpha=self.global_scorer.alpha)
        curr_scores = cumulative / length_penalty if length_penalty != 1 else cumulative
        self.block_ngram_repeats(curr_scores)
        curr_scores = self.target_prefixing(curr_scores)
        self.topk_scores, self.topk_ids, self._batch_index = pick(curr_scores, self.beam_size, self._top_k,
                                                                        self.picks)
        if self.parallel_gpu > 1:
            for tensor in (self.topk_scores, self.topk_ids, self._batch_index):
                broadcast_from_rank_zero(tensor, self.parallel_gpu)
        return cumulative, length_penalty, torch.isin(self.topk_ids, self.eos_t)


class CertifiedBeamSearch(_EoleStep, BeamSearch):
    """``eole.predict.beam_search.BeamSearch`` with ``rules=[(scoring, stopping), ...]`` (the first answers to
    eole); ``search_stats`` and ``rule_results`` as in ``adapter.beam_search.LineageBeamSearch``."""

    def initialize(self, enc_out, src_len, device=None, target_prefix=None):
        out = super().initialize(enc_out, src_len, device=device, target_prefix=target_prefix)
        self._start_search(src_len)
        return out


class CertifiedBeamSearchLM(_EoleStep, BeamSearchLM):
    """``eole.predict.beam_search.BeamSearchLM`` with the core; ``|x|`` is each prompt's length."""

    def initialize(self, src, src_len, device=None, target_prefix=None):
        prompt_len = src_len.clone()  # BeamSearchLM's src_len grows with the text
        out = super().initialize(src, src_len, device=device, target_prefix=target_prefix)
        self._start_search(prompt_len)
        return out

    def advance(self, log_probs, attn):
        LineageBeamSearch.advance(self, log_probs, attn)
        self.src_len += 1  # as BeamSearchLM.advance: src_len follows the generated text
