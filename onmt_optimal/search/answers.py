"""The answers of the examples that leave the search: their kept hypotheses and statistics, per rule.

Everything a leaving example answers crosses to the host as one float32 row (``pack``), and the rows of all
the examples leaving at a step in one transfer. A row holds, in this order: the kept scores (``R * K``), their
log-probabilities (``R * K``; absent while every rule's score is the log-probability itself, ``Kept``), the
stops' columns (one rule without a stop record: the completed count and the code, 2; with the record: per rule
step, code and completed, ``3 * R``; the reasons as their codes, ``state.CODES``), ``|x|`` and each rule's
target length (``1 + R``), and the kept tokens (``R * K * (1 + T)``). Token ids, counts and steps are exact in
float32 below 2^24. ``records`` reads the rows back into per-rule ``Record``s, each made by ``answer``.
"""
from __future__ import annotations

import torch

from onmt_optimal.search import step
from onmt_optimal.search.constants import NEG_INF
from onmt_optimal.search.record import Record
from onmt_optimal.search.state import CODES, OWN, Rules, State
from onmt_optimal.search.stopping import StoppingRule, StopReason


def facts(rules: list, src_len: torch.Tensor) -> tuple[torch.Tensor, list[bool]]:
    """(B, 1 + R) what is known of each example from the start, ``|x|`` (``src_len``, float) and each rule's target
    length ``l`` (NaN for a rule without one), and per rule whether it has one."""
    targets = [scoring.target_length(src_len) for scoring, _ in rules]
    targeted = [target is not None for target in targets]
    nan = None if all(targeted) else src_len.new_full((src_len.shape[0],), float("nan"))
    return torch.stack([src_len] + [nan if target is None else target for target in targets], dim=1), targeted


def pack(*, rules: Rules, state: State, facts: torch.Tensor) -> torch.Tensor:
    """(B, width) float32: the row of every example of the batch (module docstring), on the state's device.
    ``facts``: (B, 1 + R), ``|x|`` and each ``l`` (``facts``)."""
    kept = state.kept
    log_probs = [] if kept.log_prob is None else [kept.log_prob]
    if state.stop_step is None:  # one rule stops at this step: why depends on the live items
        stop_columns = [state.n_completed, step.codes(rules=rules, at_max=state.at_max, live=state.live)]
    else:  # per rule: step, code, completed
        B = state.stop_step.shape[0]
        stop_columns = [torch.stack([state.stop_step, state.stop_code, state.stop_completed], dim=2).view(B, -1)]
    return torch.cat([kept.score, *log_probs, *stop_columns, facts, kept.seq.view(kept.seq.shape[0], -1)], dim=1)


def records(*, rules: Rules, packed: list[list[float]], batch_rows: list[int], items: torch.Tensor | None, t: int,
            T1: int, targeted: list[bool], separate_log_prob: bool, eos) -> list[list[Record]]:
    """Per row of ``packed`` (``pack``, read on the host), per rule, its ``answer``.

    ``batch_rows``: each row's example in the batch; ``items`` (B, beam, 1 + t): the beam's items (the start
    token, then the tokens), the top one's tokens read only for an example whose every hypothesis scored
    ``-inf`` (it kept none; a second transfer in that degenerate case alone); None: such an example answers no
    tokens. ``t``: the step the rows were packed after (one rule without a stop record stopped there); ``T1``:
    the kept tokens' row length (the start token, then ``T`` tokens); ``targeted``: per rule, it reports a target
    length; ``separate_log_prob``: the rows hold the log-probabilities apart from the scores; ``eos``: the end
    token, or a collection of them."""
    n_rules, K = len(rules.rules), rules.K
    RK = n_rules * K
    stops = [rule.stopping for rule in rules.rules]
    out = []
    for row, b in zip(packed, batch_rows):
        score = row[:RK]
        log_prob, at = (row[RK:2 * RK], 2 * RK) if separate_log_prob else (score, RK)
        if not rules.records:  # one rule, stopped at step t
            completed, code = row[at:at + 2]
            stopped, at = [(t, reason(code, stops[0]), int(completed))], at + 2
        else:
            stopped = [(int(row[i]), reason(row[i + 1], stop), int(row[i + 2]))
                       for i, stop in zip(range(at, at + 3 * n_rules, 3), stops)]
            at += 3 * n_rules
        src_len, target, seq = row[at], row[at + 1:at + 1 + n_rules], row[at + 1 + n_rules:]
        per_rule = []
        for r in range(n_rules):
            hyps = []
            for i in range(r * K, (r + 1) * K):
                if score[i] == NEG_INF:
                    break
                hyps.append((score[i], log_prob[i], _tokens(seq[i * T1 + 1:(i + 1) * T1], eos)))
            n_kept = len(hyps)
            if not hyps:  # every hypothesis scored -inf: the top item answers
                hyps.append((NEG_INF, NEG_INF, [] if items is None else items[b, 0, 1:].tolist()))
            steps, why, completed = stopped[r]
            per_rule.append(answer(hyps=hyps, n_kept=n_kept, K=K, eos=eos, steps=steps, why=why,
                                   target=target[r] if targeted[r] else None, src_len=int(src_len),
                                   completed=completed))
        out.append(per_rule)
    return out


def reason(code: float, stop: StoppingRule) -> StopReason:
    """The reason of a row's stop ``code`` (``state.CODES``, ``state.OWN``) for rule ``stop``."""
    return stop.reason if code == OWN else next(why for why, c in CODES.items() if c == code)


def answer(*, hyps: list[tuple], n_kept: int, K: int, eos: int, steps: int, why: StopReason, target: float | None,
           src_len: int, completed: int) -> Record:
    """One rule's ``Record`` for one example, with its ``hypotheses`` ((score, tokens), K of them, best first:
    the last one is repeated up to K; a hypothesis's token list keeps its EOS, as OpenNMT-py hands it on), how
    many of them were ``kept`` distinct, and its 1-best ``tokens`` without EOS. ``hyps``: at least one
    ``(score, log_prob, tokens)``, best first, of which the first ``n_kept`` were kept."""
    hyps = hyps + [hyps[-1]] * (K - len(hyps))  # the toolkit expects K answers
    best = hyps[0]
    ended = bool(best[2]) and _is_end(best[2][-1], eos)
    return Record(steps=steps, stop_reason=why, score=best[0], log_prob=best[1], length=len(best[2]) - ended,
                  target_length=target, src_length=src_len, completed=completed,
                  tokens=best[2][:-1] if ended else best[2], hypotheses=tuple((h[0], h[2]) for h in hyps),
                  kept=n_kept)


def _is_end(token, eos) -> bool:
    """``token`` is the end token ``eos`` (an int) or one of them (a collection)."""
    return token == eos if isinstance(eos, int) else token in eos


def _tokens(row: list[float], eos) -> list[int]:
    """A kept hypothesis's tokens from its padded row: up to its end token, which ends it, or the whole row (it
    was completed at ``max_length``: no other item completes without one)."""
    if isinstance(eos, int):
        end = row.index(eos) + 1 if eos in row else len(row)
    else:
        end = next((i + 1 for i, x in enumerate(row) if x in eos), len(row))
    return [int(x) for x in row[:end]]
