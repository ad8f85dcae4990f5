"""A beam of one item: the toolkit's own beam search answers for every rule, and this module scores its answer.

Claim. With ``b = 1`` and ``n_best = 1``, every (scoring, stopping) pair answers the one hypothesis the toolkit's
beam search of one returns, at the step it returns it.

Proof. The beam is one item. The pick (``top_k.pick``) is the top-1 of the same candidate sums in the core and in
the toolkit, so both follow the same path (but where two candidates' sums tie exactly: on CPU above 16k
candidates the core's top-k takes the lower index, ``torch.topk`` its own; either is the beam's top-1, and this
path answers as stock does). At the step ``t`` that item completes (its EOS, or ``t = T``) no live
item is left, and every stopping rule is done with the example: the certificate (Eq. 2; Eq. 5 with the reward)
compares the kept score with the best bound over no item at all, ``-inf``; OpenNMT's rule sees its top item
finished; a shrinking beam has no slot left; the exhaustive run has nothing left to run. The toolkit ends the
example at that same step (its top item finished, and ``n_best = 1`` hypothesis collected). Before ``t`` nothing
completed, so no rule kept anything, and each rule's answer is that hypothesis, scored by its own ``final``. QED

So nothing needs deciding during such a decode: the toolkit's step runs as it is (without the core's
bookkeeping, which would compute a certificate that cannot fire before the end), and ``records``
scores the answer afterwards with each rule's ``final`` on the same float32 numbers the core would use: its
records are the core's (``tests/unit/test_certificate.py::test_a_beam_of_one_is_stock_s_search_scored_afterwards``,
``tests/e2e/test_sweep.py::test_beam_of_one_records_are_the_core_s``). Which decodes
qualify (options that change neither the score nor the path's state) is the adapter's business
(``adapter.batch_search.beam_of_one``).
"""
from __future__ import annotations

import torch

from onmt_optimal.search.record import Record
from onmt_optimal.search.scoring import StepView
from onmt_optimal.search.stopping import StopReason


def records(rules: list, log_prob: list[float], steps: list[int], ended: list[bool], src_len: list[int],
            max_length: int, device=None) -> list[list[Record]]:
    """Per example, per rule, the ``Record`` the core reports (``answers.records``), without tokens.

    ``log_prob``: each example's answer's log p (the toolkit's float32 score under no length or coverage
    penalty); ``steps``: its tokens, EOS included (the step it completed at); ``ended``: its last token is EOS
    (else it was cut at ``max_length``); ``src_len``: ``|x|``. ``final`` takes one step ``t`` for all the items
    of a view, so the examples are scored in groups that completed at the same step (a few slices a batch).

    ``device``: where the scores are computed, the decode's (None: the CPU), as the core computes them there:
    a float32 division by a Python number is a true division on CPU and a product with its reciprocal on CUDA
    (PyTorch's ``div_true_kernel_cuda``), which may differ in the last bit. One copy there, one read back."""
    B, R = len(steps), len(rules)
    order = sorted(range(B), key=steps.__getitem__)  # by step, so that each group is a slice (a view)
    # (counts and lengths are exact in float32, below 2^24)
    facts = torch.tensor([[log_prob[i], float(ended[i]), float(src_len[i])] for i in order], dtype=torch.float,
                         device=device)
    lp, eos, src = facts[:, :1], facts[:, 1:2].bool(), facts[:, 2]
    parts, start = [], 0
    while start < B:
        t = steps[order[start]]
        end = start + 1
        while end < B and steps[order[end]] == t:
            end += 1
        view = StepView(log_prob=lp[start:end], eos=eos[start:end], src_len=src[start:end], t=t,
                        max_length=max_length)
        parts.append(torch.cat([score.final(view) for score, _ in rules], dim=1))  # (n, R)
        start = end
    targets = {r: target for r, (score, _) in enumerate(rules) if (target := score.target_length(src)) is not None}
    column = {r: R + j for j, r in enumerate(targets)}  # where rule r's l is, after the R scores
    columns = torch.cat([torch.cat(parts)] + [target.view(B, 1) for target in targets.values()], dim=1).tolist()
    per_example = [None] * B
    for j, i in enumerate(order):
        per_example[i] = columns[j]
    return [[Record(
        steps=steps[i],
        stop_reason=StopReason.MAX_LENGTH if steps[i] >= max_length else StopReason.ALL_FINISHED,
        score=per_example[i][r],
        log_prob=log_prob[i],
        length=steps[i] - ended[i],
        target_length=per_example[i][column[r]] if r in column else None,
        src_length=int(src_len[i]),
        completed=1,
    ) for r in range(R)] for i in range(B)]
