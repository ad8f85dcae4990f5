"""The answers: the core's rows of each input, kept on the device as it leaves, read once at the end, made the
core's ``Record``s and handed over as transformers' output classes.

``OptimalBeamEncoderDecoderOutput`` and ``OptimalBeamDecoderOnlyOutput`` are transformers' beam-search outputs
(subclasses: code that checks for them keeps working) with two more fields: ``search_stats``, per input the
first rule's ``Record.json_stats()`` (plain values: ``stop_reason`` a ``str``), and ``rule_results``, per input
and rule the same plus ``stopping`` (the rule's name) and ``tokens`` (its 1-best); docs/hf.md lists the keys.
``sequences`` and ``sequences_scores`` are laid out as transformers lays them out (``num_return_sequences``
rows an input, the decoder prompt then the tokens, padded with its fill token); ``scores``, ``logits``,
``beam_indices``, attentions, hidden states and ``past_key_values`` are None.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers.generation.utils import GenerateBeamDecoderOnlyOutput, GenerateBeamEncoderDecoderOutput

from onmt_optimal.hf.beam import Constants, Running
from onmt_optimal.search import answers
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
    """Each input's answers: the core's rows (``search.answers.pack``), copied on the device as inputs leave
    (``record``), read once and made ``Record``s (``search.answers.records``) and transformers' outputs at the end
    (``output``)."""

    def __init__(self, constants: Constants, input_ids: torch.Tensor, fill: int):
        self.c, self.fill = constants, fill
        self.prompts = input_ids[:: constants.search.num_beams]  # (N, prompt): one row an input
        self.left = []  # per leaving step, (N', 1 + width): each leaving input's index, then its row

    def record(self, state: Running, leaving: list[bool]) -> None:
        """Copy the rows of the inputs of ``state`` that ``leaving`` marks (on the device: no read)."""
        rows = torch.tensor([n for n, left in enumerate(leaving) if left], device=state.scores.device)
        packed = answers.pack(rules=self.c.rules, state=state.core, facts=state.facts)
        self.left.append((torch.cat([state.examples.unsqueeze(1).float(), packed], dim=1)[rows],
                          state.core.kept.log_prob is not None))

    def records(self) -> list[list[Record]]:
        """Per input, per rule, its ``Record`` (with its ``K`` kept ``hypotheses``), from one transfer."""
        c = self.c
        flat = torch.cat([rows.view(-1) for rows, _ in self.left]).tolist()
        out = [None] * self.prompts.shape[0]
        at = 0
        for rows, separate in self.left:
            n, width = rows.shape
            part = [flat[at + i * width:at + (i + 1) * width] for i in range(n)]
            at += n * width
            answered = answers.records(rules=c.rules, packed=[row[1:] for row in part], batch_rows=list(range(n)),
                                       items=None, t=c.T, T1=1 + c.T, targeted=c.targeted,
                                       separate_log_prob=separate, eos=frozenset(c.search.eos))
            for row, per_rule in zip(part, answered):
                out[int(row[0])] = per_rule
        return out

    def output(self, generation_config, is_encoder_decoder: bool):
        search = self.c.search
        records = self.records()
        N, n = len(records), search.n_best
        # the first rule's n best; a place that kept nothing answers no tokens and scores -inf
        answers_ = [[hyp if i < record[0].kept else (NEG_INF, []) for i, hyp in
                     enumerate(record[0].hypotheses[:n])] for record in records]
        longest = max(len(tokens) for per_input in answers_ for _, tokens in per_input)
        device = self.prompts.device
        seq = torch.tensor([tokens + [self.fill] * (longest - len(tokens)) for per_input in answers_
                            for _, tokens in per_input], dtype=torch.long).view(N, n, longest).to(device)
        prompts = self.prompts.unsqueeze(1).expand(N, n, self.prompts.shape[1])
        sequences = torch.cat([prompts, seq], dim=2).reshape(N * n, -1)
        if not generation_config.return_dict_in_generate:
            return sequences
        sequences_scores = torch.tensor([score for per_input in answers_ for score, _ in per_input],
                                        dtype=torch.float32).to(device)
        stats = [[{"stopping": rule.name, **record.json_stats(), "tokens": record.tokens}
                  for (_, rule), record in zip(search.rules, per_rule)] for per_rule in records]
        cls = OptimalBeamEncoderDecoderOutput if is_encoder_decoder else OptimalBeamDecoderOnlyOutput
        return cls(sequences=sequences, sequences_scores=sequences_scores, search_stats=[r[0] for r in stats],
                   rule_results=stats)
