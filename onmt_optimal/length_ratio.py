"""The length ratio rho of Section 4: how long references are relative to their sources, in model tokens.

``l = rho * |x|`` is where the bounded reward stops paying. The paper estimates rho on the dev set as the average
ratio of reference length to source length (1.27 on NIST Chinese-English) and uses the same rho on test.
Lengths are counted in the tokens the model reads and writes (after its transforms, e.g. SentencePiece
pieces), as ``|x|`` and ``|y|`` are everywhere in this package. With several references, each reference
counts (their lengths are averaged per sentence).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RatioEstimate:
    corpus: float  # total reference tokens / total source tokens (the default: robust to 1-token sources)
    sentence: float  # mean over sentences of |ref| / |src|
    sentences: int

    def __str__(self) -> str:
        return (f"length ratio (reference / source, model tokens): corpus {self.corpus:.4f}  "
                f"per-sentence mean {self.sentence:.4f}  over {self.sentences} sentences")


def estimate(src_lengths: list[int], ref_lengths: list[list[int]]) -> RatioEstimate:
    """``ref_lengths[k][i]``: length of reference ``k`` of sentence ``i``. Sentences with an empty source are
    left out (no ratio exists for them)."""
    pairs = []
    for i, src in enumerate(src_lengths):
        if src > 0:
            refs = [stream[i] for stream in ref_lengths]
            pairs.append((src, sum(refs) / len(refs)))
    if not pairs:
        raise ValueError("no sentence with a non-empty source")
    corpus = sum(r for _, r in pairs) / sum(s for s, _ in pairs)
    sentence = sum(r / s for s, r in pairs) / len(pairs)
    return RatioEstimate(corpus, sentence, len(pairs))


def estimate_with_model(session, src_lines: list[str], ref_streams: list[list[str]]) -> RatioEstimate:
    """Estimate rho with the lengths ``session`` (a ``Session``) gives after the model's transforms."""
    return estimate(session.model_lengths(src_lines, "src"),
                    [session.model_lengths(stream, "tgt") for stream in ref_streams])
