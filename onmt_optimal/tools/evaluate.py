"""Corpus BLEU and length ratio with sacrebleu, any number of references.

BLEU is sacrebleu's corpus BLEU (13a tokenizer; case-insensitive by default, as in the paper); the length
ratio is sacrebleu's ``sys_len / ref_len`` (closest reference length per sentence). The signature is returned
so that every reported number can be reproduced.
"""
from __future__ import annotations

from dataclasses import dataclass

from sacrebleu.metrics import BLEU


@dataclass
class Score:
    bleu: float
    length_ratio: float
    signature: str

    def __str__(self) -> str:
        return f"BLEU {self.bleu:.2f}  length ratio {self.length_ratio:.3f}  ({self.signature})"


def corpus_score(hypotheses: list[str], references: list[list[str]], lowercase: bool = True,
                 tokenized: bool = False) -> Score:
    """``references`` is a list of reference streams, each as long as ``hypotheses``. ``tokenized``: the text is
    knowingly scored as it is, tokenized (as the paper's multi-bleu did), so sacrebleu's "forgot to detokenize"
    warning is not wanted (its ``force``)."""
    for stream in references:
        if len(stream) != len(hypotheses):
            raise ValueError(f"{len(hypotheses)} hypotheses but a reference stream of {len(stream)} lines")
    metric = BLEU(lowercase=lowercase, force=tokenized)
    result = metric.corpus_score(hypotheses, references)
    return Score(result.score, result.sys_len / max(result.ref_len, 1), str(metric.get_signature()))
