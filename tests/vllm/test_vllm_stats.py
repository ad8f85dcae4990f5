"""The statistics are plain JSON values wherever a user reads them: the offline answers' ``record`` (its
``stop_reason`` a ``str``, as in the statistics file, not the search core's ``StopReason``) and the server's
statistics of each choice (``prompts.Answer.stats``)."""
import dataclasses
import json

from vllm.sampling_params import BeamSearchParams

from helpers import toy_vllm
from onmt_optimal.search.record import Record, StopReason
from onmt_optimal.vllm import internals, optimal_beam_search
from onmt_optimal.vllm.prompts import Answer

PLAIN = (int, float, str, type(None))


def test_the_offline_record_holds_plain_values(llm, toy):
    prompts = toy_vllm.prompts(toy, 3, seed=7)
    params = BeamSearchParams(beam_width=2, max_tokens=8, length_penalty=0.0)
    for stopping in ("optimal", "exhaustive"):
        for out in optimal_beam_search(llm, prompts, params, stopping=stopping):
            record = out.record
            assert type(record.stop_reason) is str, repr(record.stop_reason)
            assert record.stop_reason in ("certificate", "all_finished", "max_length")
            assert f"stop_reason={record.stop_reason!r}" in repr(record)
            stats = record.stats()
            assert all(type(value) in PLAIN for value in stats.values()), stats
            assert json.loads(json.dumps(stats)) == stats
            assert json.loads(json.dumps(dataclasses.asdict(record)))["stop_reason"] == record.stop_reason


def test_the_servers_statistics_hold_plain_values():
    record = Record(steps=3, stop_reason=StopReason.CERTIFICATE, score=-1.5, log_prob=-1.5, length=2,
                    target_length=None, src_length=4, completed=5, tokens=[7, 8])
    sequence = internals.sequence(orig_prompt={"type": "token", "prompt_token_ids": [1, 2, 3, 4]},
                                  tokens=[1, 2, 3, 4, 7, 8], logprobs=[], cum_logprob=-1.5)
    stats = Answer(sequences=[sequence], scores=[float("-inf")], lengths=[2], record=record).stats(0)
    assert type(stats["stop_reason"]) is str and stats["stop_reason"] == "certificate"
    assert stats["score"] is None  # not finite: null
    assert all(type(value) in PLAIN for value in stats.values()), stats
