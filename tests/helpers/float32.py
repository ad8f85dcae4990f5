"""How far apart two decodes of the same hypothesis may print its score, and a check that uses it.

Two decodes whose batches shrink differently (or that run on other CPU kernels: ``ATEN_CPU_CAPABILITY``)
compute the same hypothesis's score with different float32 roundings. They must agree on every translation
exactly; their scores agree within ``score_tolerance``, derived here for a hypothesis of ``T`` log-probability
terms ``x_1..x_T`` (``T <= length + 1``: the tokens and EOS), ``S = sum x_t`` (``|S| = sum |x_t|``, all terms
are <= 0), float32 unit roundoff ``u = 2^-24``:

- a float32 running sum of T terms is within ``(T - 1) u sum|x_t|`` of the exact sum (Higham, *Accuracy and
  Stability of Numerical Algorithms*, 2nd ed., eq. 4.4); OpenNMT-py's beam under a length penalty recovers the
  sum each step as ``score * penalty`` then divides again: at most 3 roundings a step, ``3 T u |S|``. Two sides,
  one of each kind: ``4 T u |S|``;
- each term ``x_t`` is itself a float32 log-softmax of logits that other kernels (another batch shape, another
  instruction set) may round differently: we allow ``KERNEL = 2^-20`` a step (16 ulps of 1.0; a few ulps of
  logits up to 16 in magnitude), ``T KERNEL``;
- the final score divides by a length penalty >= 1 (``avg``: the length, ``wu``: ((5 + T) / 6)^alpha), which
  shrinks the difference, or adds a length reward equal on both sides: one more rounding a side, ``2 u
  |score|``.

Nothing here loosens the 1-best: translations are compared exactly, and decodes of the same batch composition
are compared byte for byte elsewhere.
"""
from __future__ import annotations

U = 2.0 ** -24
KERNEL = 2.0 ** -20


def score_tolerance(terms: int, log_prob: float, score: float) -> float:
    return 4 * terms * U * abs(log_prob) + terms * KERNEL + 2 * U * abs(score)


def assert_same_answers(ours: list[str], theirs: list[str], records: list[dict], n_best: int = 1) -> None:
    """``-with_score`` outputs (``text\\tscore`` lines, ``n_best`` per sentence) with the same texts and each
    1-best score within ``score_tolerance`` of the hypothesis in ``records`` (our -stats_file, one a sentence)."""
    assert len(ours) == len(theirs) == n_best * len(records)
    split = [line.rsplit("\t", 1) for line in ours], [line.rsplit("\t", 1) for line in theirs]
    assert [text for text, _ in split[0]] == [text for text, _ in split[1]]
    for i, record in enumerate(records):
        (_, a), (_, b) = split[0][i * n_best], split[1][i * n_best]
        tol = score_tolerance(record["length"] + 1, record["log_prob"], record["score"])
        assert abs(float(a) - float(b)) <= tol, (i + 1, a, b, tol)
