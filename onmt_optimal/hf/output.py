"""The answers: kept on the device as inputs leave, handed over at the end as transformers' output classes.

``OptimalBeamEncoderDecoderOutput`` and ``OptimalBeamDecoderOnlyOutput`` are transformers' beam-search outputs
(subclasses: code that checks for them keeps working) with two more fields:

* ``search_stats``: per input, the first rule's ``steps`` (the step it stopped at), ``stop_reason``
  (``certificate``, ``all_finished``: no running item was left, as a shrinking beam ends, ``max_length``,
  ``early_stopping``: transformers' rule, ``predicted_bound``; a ``str``), ``score``, ``log_prob``, ``length`` (|y|, tokens
  without the end token), ``target_length`` (``length_ratio * |x|`` where the score has one, else None),
  ``src_length`` (|x|) and ``completed`` (finished hypotheses collected by then);
* ``rule_results``: per input, per rule, the same plus ``stopping`` (the rule's name) and ``tokens`` (its
  1-best, without the end token).

``sequences`` and ``sequences_scores`` are laid out as transformers lays them out: ``num_return_sequences``
rows an input, the decoder prompt then the tokens, padded with transformers' fill token to the longest row.
``scores``, ``logits``, ``beam_indices``, attentions, hidden states and ``past_key_values`` are None.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers.generation.utils import GenerateBeamDecoderOnlyOutput, GenerateBeamEncoderDecoderOutput

from onmt_optimal.hf.beam import BeamState
from onmt_optimal.hf.options import Search
from onmt_optimal.search import stops
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.record import Record


@dataclass
class OptimalBeamEncoderDecoderOutput(GenerateBeamEncoderDecoderOutput):
    search_stats: list[dict[str, Any]] | None = None
    rule_results: list[list[dict[str, Any]]] | None = None


@dataclass
class OptimalBeamDecoderOnlyOutput(GenerateBeamDecoderOnlyOutput):
    search_stats: list[dict[str, Any]] | None = None
    rule_results: list[list[dict[str, Any]]] | None = None


class Results:
    """Each input's answers, written on the device when it leaves (``record``), read once (``output``)."""

    def __init__(self, search: Search, state: BeamState, input_ids: torch.Tensor, T: int, fill: int):
        N, R, K = state.scores.shape[0], len(search.rules), search.keep
        device = input_ids.device
        self.search, self.T, self.fill = search, T, fill
        self.prompts = input_ids[:: search.num_beams]  # (N, prompt): one row an input
        self.src_len = state.src_len.clone()
        self.targets = [score.target_length(self.src_len) for score, _ in search.rules]
        self.score = torch.full((N, R * K), NEG_INF, device=device)
        self.log_prob = torch.full((N, R * K), NEG_INF, device=device)
        self.seq = torch.full((N, R * K, T), fill, dtype=torch.long, device=device)
        self.stop = torch.zeros((N, R, 3), device=device)

    def record(self, state: BeamState, leaving: list[bool]) -> None:
        """Copy the answers of the rows of ``state`` that ``leaving`` marks."""
        rows = torch.tensor([n for n, left in enumerate(leaving) if left], device=state.scores.device)
        at = state.examples[rows]
        kept = state.kept
        self.score[at] = kept.score[rows]
        self.log_prob[at] = (kept.score if kept.log_prob is None else kept.log_prob)[rows]
        self.seq[at] = kept.seq[rows, :, 1:]
        self.stop[at] = torch.stack([state.stop_step, state.stop_code, state.stop_completed], dim=2)[rows]

    def output(self, generation_config, is_encoder_decoder: bool):
        search = self.search
        N, n = self.score.shape[0], search.n_best
        eos = torch.tensor(search.eos, device=self.seq.device)
        ends = torch.isin(self.seq, eos)
        # a hypothesis runs to its first end token, or fills all T tokens (cut at max_length); none: nothing kept
        length = torch.where(ends.any(dim=2), ends.int().argmax(dim=2) + 1, self.T)
        length = torch.where(self.score > NEG_INF, length, 0)
        answers = torch.arange(n, device=self.seq.device)  # the first rule's n best
        seq, out_len = self.seq[:, answers], length[:, answers]
        longest = int(out_len.max())
        seq = seq[:, :, :longest]
        seq = torch.where(torch.arange(longest, device=seq.device) < out_len.unsqueeze(2), seq, self.fill)
        prompts = self.prompts.unsqueeze(1).expand(N, n, self.prompts.shape[1])
        sequences = torch.cat([prompts, seq], dim=2).reshape(N * n, -1)
        sequences_scores = self.score[:, answers].reshape(N * n)
        if not generation_config.return_dict_in_generate:
            return sequences
        stats = self._stats(length, ends)
        cls = OptimalBeamEncoderDecoderOutput if is_encoder_decoder else OptimalBeamDecoderOnlyOutput
        return cls(sequences=sequences, sequences_scores=sequences_scores, search_stats=[r[0] for r in stats],
                   rule_results=stats)

    def _stats(self, length, ends) -> list[list[dict]]:
        """Per input, per rule: its statistics and 1-best, from one transfer."""
        search = self.search
        N, R, K = self.score.shape[0], len(search.rules), search.keep
        first = torch.arange(R, device=self.score.device) * K  # each rule's best
        ended = ends.gather(2, (length - 1).clamp(min=0).unsqueeze(2)).squeeze(2) & (length > 0)
        nan = torch.full_like(self.src_len, float("nan"))
        targets = torch.stack([nan if x is None else x for x in self.targets], dim=1)
        facts = torch.cat([self.score[:, first], self.log_prob[:, first], length[:, first].float(),
                           ended[:, first].float(), self.stop.view(N, 3 * R), self.src_len.unsqueeze(1), targets],
                          dim=1).tolist()
        tokens = self.seq[:, first].tolist()
        out = []
        for i, row in enumerate(facts):
            score, log_prob, size, end = row[:R], row[R:2 * R], row[2 * R:3 * R], row[3 * R:4 * R]
            stop, src_len, target = row[4 * R:7 * R], row[7 * R], row[7 * R + 1:]
            per_rule = []
            for r, (scoring, rule) in enumerate(search.rules):
                words = int(size[r]) - int(end[r])
                record = Record(steps=int(stop[3 * r]), stop_reason=stops.reason(stop[3 * r + 1], rule),
                                score=score[r], log_prob=log_prob[r], length=words,
                                target_length=None if self.targets[r] is None else target[r],
                                src_length=int(src_len), completed=int(stop[3 * r + 2]))
                per_rule.append({"stopping": rule.name, **record.stats(), "tokens": tokens[i][r][:words]})
            out.append(per_rule)
        return out

