"""The step's functions (``search.step``) on their own, tensors in and out, as a toolkit calls them.

The one-rule economy is data in the state (``Rules.records``): without the stop record a rule's step, reason and
count are read off the example's last step; with it they are recorded as several rules record theirs (and a
caller may keep an example that is done in the batch). Both must answer the same ``Record``s at the step an
example is first done, whatever completes."""
from __future__ import annotations

import pytest
import torch

from onmt_optimal.search import answers, step
from onmt_optimal.search.scoring import StepView, StockScore
from onmt_optimal.search.state import Rules, State
from onmt_optimal.search.stopping import STOPPING_RULES

EOS, PAD, T = 2, 0, 6


def _run(rule: str, records: bool, seed: int, B: int = 3, beam: int = 3):
    """Steps of random completions until every example is done; per example, its ``Record``s at the step it is
    first done (and that step)."""
    g = torch.Generator().manual_seed(seed)
    rules = [(StockScore("none"), STOPPING_RULES[rule]())]
    first = (torch.arange(beam) == 0).view(1, beam)
    plan = Rules.of(rules, 1, first, torch.device("cpu"), records=records)
    state = State.start(plan, first.expand(B, beam), T, PAD, torch.float, "cpu", rules[0][1].shrinks)
    src_len = torch.full((B,), 4.0)
    facts, targeted = answers.facts(rules, src_len)
    log_prob = torch.zeros((B, beam))
    seq = torch.full((B, beam, 1), 1)
    out = {}
    for t in range(1, T + 1):
        at_max = t >= T
        log_prob = log_prob - torch.rand((B, beam), generator=g) * 2
        tokens = torch.where(torch.rand((B, beam), generator=g) < 0.3, EOS, 3 + t)
        seq = torch.cat([seq, tokens.unsqueeze(2)], dim=2)
        eos = tokens == EOS
        real = torch.ones((B, beam), dtype=torch.bool)
        if state.width is not None:
            real &= torch.arange(beam) < state.width
        completed = real if at_max else real & eos
        state.live = real != completed
        view = StepView(log_prob=log_prob, eos=eos, src_len=src_len, t=t, max_length=T)
        step.collect(rules=plan, state=state, view=view, completed=completed, seq=seq)
        bounds = None if at_max else step.bounds(rules=plan, view=view, live=state.live)
        done = step.decide(rules=plan, state=state, view=view, completed=completed, bounds=bounds)
        assert done.shape == (B, 1) and done.dtype == torch.bool
        new = [b for b, (d,) in enumerate(done.tolist()) if d and b not in out]
        if new:
            rows = answers.pack(rules=plan, state=state, facts=facts)[torch.tensor(new)].tolist()
            for b, per_rule in zip(new, answers.records(
                    rules=plan, packed=rows, batch_rows=new, items=seq.view(B, beam, -1), t=state.t,
                    T1=state.kept.seq.shape[2], targeted=targeted, separate_log_prob=state.kept.log_prob is not None,
                    eos=EOS)):
                out[b] = (t, per_rule)
        if len(out) == B:
            break
    return out


@pytest.mark.parametrize("rule", ["optimal", "default", "exhaustive", "shrinking"])
def test_one_rule_answers_alike_with_or_without_the_stop_record(rule):
    for seed in range(20):
        bare, recorded = _run(rule, False, seed), _run(rule, True, seed)
        assert bare == recorded
        for t, (record,) in bare.values():
            assert record.steps == t
            assert [tuple(tokens[:-1]) if tokens[-1:] == [EOS] else tuple(tokens)
                    for _, tokens in record.hypotheses[:1]] == [tuple(record.tokens)]
