"""The sweep's single decode per beam answers exactly as separate onmt_translate runs with the same flags."""
from __future__ import annotations

import json

import pytest
import torch

from helpers.float32 import score_tolerance
from onmt_optimal.opennmt.session import Session
from onmt_optimal.tools.sweep import Decoder, decode_all

pytestmark = pytest.mark.slow

CASES = [
    (Decoder("default", "default", "logprob"), ["-stopping", "default", "-length_penalty", "none"]),
    (Decoder("default_avg", "default", "avg"), ["-stopping", "default", "-length_penalty", "avg"]),
    (Decoder("optimal", "optimal", "logprob"), ["-stopping", "optimal", "-length_penalty", "none"]),
    (Decoder("optimal_reward", "optimal", "bounded_reward", 1.2),
     ["-stopping", "optimal", "-length_penalty", "none", "-length_reward", "1.2", "-length_ratio", "1.5"]),
    (Decoder("shrinking_norm", "shrinking", "avg"), ["-stopping", "shrinking", "-length_penalty", "avg"]),
    (Decoder("shrinking_reward", "shrinking", "word_reward", 0.5),
     ["-stopping", "shrinking", "-length_penalty", "none", "-length_reward", "0.5"]),
]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory, toy_model):
    from helpers import toy

    d = tmp_path_factory.mktemp("sweep")
    toy.write_corpus(d / "dev", 30, seed=5, max_len=12)
    return toy_model, d


@pytest.mark.parametrize("beam", [1, 4])
def test_one_decode_per_beam_equals_separate_runs(toy_run, our_worker, tmp_path, beam):
    model, d = toy_run
    common = ["-max_length_ratio", "0", "-max_length", "25", "-batch_size", "8"]
    # the same torch threads as the onmt_translate runs below (the worker runs with OMP_NUM_THREADS=1): a
    # float32 matmul split over another number of threads sums in another order (a score moved by 2e-5 once)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        session = Session(["-model", str(model), *common])
        results = decode_all(session, d / "dev.src", beam, [c[0] for c in CASES], ratio=1.5)
    finally:
        torch.set_num_threads(threads)
    for decoder, flags in CASES:
        out, stats = tmp_path / f"{decoder.label()}.out", tmp_path / f"{decoder.label()}.stats"
        done = our_worker.run("-model", model, "-src", d / "dev.src", "-output", out, "-beam_size", beam,
                              "-stats_file", stats, *common, *flags)
        assert done.returncode == 0, done.stderr[-3000:]
        texts = out.read_text().splitlines()
        records = [json.loads(line) for line in stats.read_text().splitlines()]
        got = results[decoder]
        assert [r["text"] for r in got] == texts, decoder
        for g, want in zip(got, records):
            assert g["steps"] == want["steps"] and g["stop_reason"] == want["stop_reason"], decoder
            # one decode for every rule and separate decodes shrink their batches differently, and under avg
            # stock recovers log p as score * penalty each step: the float32 bound of float32.score_tolerance
            tol = score_tolerance(want["length"] + 1, want["log_prob"], want["score"])
            assert abs(g["score"] - want["score"]) <= tol, (decoder, g["score"], want["score"], tol)


def test_bookkeeping_on_the_host_answers_as_next_to_the_model(toy_run):
    """``Session.host = "cpu"`` (``Options.host``): the whole OpenNMT-py pipeline with the search's bookkeeping
    on the host (one packed transfer a step; here host and model share the CPU) gives every rule's records as
    with the bookkeeping next to the model, to the bit: the same operations on the same numbers."""
    model, d = toy_run
    session = Session(["-model", str(model), "-max_length_ratio", "0", "-max_length", "25", "-batch_size", "8"])
    decoders = [c[0] for c in CASES]  # both beam kinds: the ordinary beam's rules share a decode, then shrinking
    near = decode_all(session, d / "dev.src", 4, decoders, ratio=1.5)
    session.host = "cpu"
    away = decode_all(session, d / "dev.src", 4, decoders, ratio=1.5)
    assert away == near


@pytest.mark.parametrize("flags", [["-max_length", "25"], ["-max_length", "6", "-min_length", "3"]], ids=" ".join)
def test_beam_of_one_records_are_the_core_s(toy_run, monkeypatch, flags):
    """A beam of one item (``search.beam_of_one``): OpenNMT-py's own beam search, scored afterwards, gives every
    rule's records (tokens, scores, steps, stop reasons, lengths, counts) as the core does, to the bit, in one
    batch and in batches that shrink; with ``-max_length 6`` some answers are cut there without an EOS. The
    core is not built on that path (counted), so the comparison is not of the core with itself."""
    from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch
    from onmt_optimal.search.registry import STOPPING_RULES
    from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, StockScore, WordReward

    model, d = toy_run
    built = []
    initialize = CertifiedBeamSearch.initialize
    monkeypatch.setattr(CertifiedBeamSearch, "initialize", lambda self, *a, **k: built.append(1) or initialize(
        self, *a, **k))
    scores = [StockScore(own=False), StockScore("avg", own=False), BoundedWordReward(1.2, 1.5),
              BoundedWordReward(0.5, 0.4), WordReward(0.5), BPNorm(1.5), BPNorm(1.5, "predicted")]
    cut = 0
    for batch in ("1", "8"):
        session = Session(["-model", str(model), "-max_length_ratio", "0", "-length_penalty", "none",
                           "-batch_size", batch, *flags])
        for shrinks in (False, True):
            rules = [(score, STOPPING_RULES[name]()) for name in STOPPING_RULES
                     if STOPPING_RULES[name].shrinks == shrinks for score in scores]
            session.beam_of_one = True
            built.clear()
            toolkit = session.decode(d / "dev.src", 1, rules)
            assert not built
            session.beam_of_one = False
            core = session.decode(d / "dev.src", 1, rules)
            assert built
            assert toolkit == core
            cut += sum(line[0]["stop_reason"] == "max_length" for line in core)
    assert cut > 0 or "6" not in flags
