"""The exact-search oracle (``onmt_optimal.tools.exact_search``) end to end: a tiny model trained with the real
``onmt_train``; the OpenNMT adapter's log-probabilities agree with ``onmt_translate``'s greedy scores and with
teacher-forced decoding, and the oracle is never below ``onmt_translate``'s beam. On synthetic distributions
against brute force: ``tests/unit/test_exact_search.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import toy
from helpers.float32 import score_tolerance
from onmt_optimal.tools.exact_search import (STOP_NODE_BUDGET, STOP_OPTIMAL, OpenNMTScorer, exact_search, load_model,
                                       rescore)
from onmt_optimal.search.scoring import BoundedWordReward, StockScore

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
T = 30


@pytest.fixture(scope="session")
def short_src(tmp_path_factory) -> Path:
    return toy.source_file(tmp_path_factory.mktemp("oracle_data"), "short", 5, seed=11, min_len=2, max_len=6)


@pytest.fixture(scope="session")
def loaded(toy_model):
    vocabs, model, _ = load_model(toy_model)
    return vocabs, model


def onmt_translate(worker, model, src, out, *args):
    """``onmt_translate`` in the session's worker process (``translate_worker``), one text and score a line."""
    proc = worker.run("-model", model, "-src", src, "-output", out, "-max_length", T, "-max_length_ratio", "0",
                      "-with_score", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [(text.split(), float(score)) for text, score in
            (line.rsplit("\t", 1) for line in Path(out).read_text().splitlines())]


def assert_matches_teacher_forcing(scorer, model, ids):
    """The adapter's per-step log-probs along ``ids`` equal one teacher-forced decoder pass over all of them,
    even with a sibling extended from every state first (snapshots must not share what the decoder writes)."""
    with torch.no_grad():
        enc_out, enc_final, _ = model.encoder(scorer.src, scorer._src_len_t)
        model.decoder.init_state(scorer.src, enc_out, enc_final)
        tgt_in = torch.tensor([scorer.start] + ids[:-1]).view(1, -1, 1)
        dec_out, _ = model.decoder(tgt_in, enc_out, src_len=scorer._src_len_t)
        forced = torch.log_softmax(model.generator(dec_out), -1)[0]
    state = scorer.initial()
    for i, tok in enumerate(ids):
        assert torch.allclose(scorer.log_probs(state), forced[i], atol=1e-5), i
        if i + 1 < len(ids):
            scorer.extend(state, 4 if tok != 4 else 5)
            state = scorer.extend(state, tok)


def test_adapter_log_probs_match_greedy_onmt_translate(toy_model, short_src, loaded, our_worker, tmp_path):
    vocabs, model = loaded
    greedy = onmt_translate(our_worker, toy_model, short_src, tmp_path / "greedy", "-beam_size", "1", "-length_penalty",
                            "none")
    rule = StockScore("none")
    for src_line, (tokens, score) in zip(short_src.read_text().splitlines(), greedy):
        scorer = OpenNMTScorer(model, vocabs, src_line.split())
        ids = scorer.token_ids(tokens) + [scorer.eos]
        total, log_prob, length, ended = rescore(scorer, rule, ids, src_len=scorer.src_len, max_length=T,
                                                 eos=scorer.eos)
        assert ended and length == len(tokens) and total == log_prob
        # the adapter decodes one sentence alone, onmt_translate in a batch: the float32 bound of two decodes
        assert abs(log_prob - score) <= score_tolerance(len(ids), score, score)
        # the greedy path is the adapter's argmax at every step
        state = scorer.initial()
        for i, tok in enumerate(ids):
            assert int(torch.argmax(scorer.log_probs(state))) == tok
            if i + 1 < len(ids):
                state = scorer.extend(state, tok)
        assert_matches_teacher_forcing(scorer, model, ids)


@pytest.mark.parametrize("flags", [[], ["-length_reward", "1.0", "-length_ratio", "1.5"]],
                         ids=["logprob", "bounded_reward"])
def test_oracle_is_never_below_onmt_translate_beam(toy_model, short_src, loaded, our_worker, tmp_path, flags):
    vocabs, model = loaded
    stats = tmp_path / "stats.jsonl"
    beam = onmt_translate(our_worker, toy_model, short_src, tmp_path / "beam", "-beam_size", "5",
                          "-length_penalty", "none", "-stopping", "optimal", "-stats_file", str(stats), *flags)
    records = [json.loads(line) for line in stats.read_text().splitlines()]
    rule = StockScore("none") if not flags else BoundedWordReward(1.0, 1.5)
    for src_line, (tokens, score), record in zip(short_src.read_text().splitlines(), beam, records):
        scorer = OpenNMTScorer(model, vocabs, src_line.split())
        assert scorer.src_len == record["src_length"]
        seed = scorer.token_ids(tokens) + [scorer.eos]
        res = exact_search(scorer, rule, src_len=scorer.src_len, max_length=T, eos=scorer.eos, seed=seed,
                           max_nodes=20_000)
        assert abs(res.seed_score - score) <= score_tolerance(len(seed), record["log_prob"], score)
        assert res.score >= res.seed_score
        assert res.stop_reason == STOP_OPTIMAL


def test_search_errors_script(toy_model, short_src, tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[2] / "scripts" / "search_errors.py"),
                           "--model", str(toy_model), "--src", str(short_src), "--beam_size", "2",
                           "--max_length", str(T), "--max_src_tokens", "5", "--json", str(out)],
                          env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    summary, records = report["summary"], report["sentences"]
    n_short = sum(1 <= len(line.split()) <= 5 for line in short_src.read_text().splitlines())
    assert summary["sentences"] == len(records) == n_short
    assert summary["beam_optimal"] + summary["search_errors"] + summary["unknown"] == n_short
    assert all(r["oracle_score"] >= r["seed_score"] for r in records)
    assert "beam = proved global optimum" in proc.stdout


@pytest.mark.slow  # trains (two steps)
def test_adapter_on_a_transformer_decoder(tmp_path):
    """Smoke test of the transformer path (key/value caches snapshotted per node): a 2-step model."""
    checkpoint = toy.train_toy_model(tmp_path, steps=2, n_train=200, arch="transformer")
    vocabs, model, model_opt = load_model(checkpoint)
    assert model_opt.decoder_type == "transformer"
    scorer = OpenNMTScorer(model, vocabs, "a b i c d".split())
    ids = [(7 * i) % (scorer.vocab_size - 4) + 4 for i in range(8)] + [scorer.eos]
    assert_matches_teacher_forcing(scorer, model, ids)
    res = exact_search(scorer, StockScore("none"), src_len=scorer.src_len, max_length=6,
                       eos=scorer.eos, max_nodes=2000)
    assert res.tokens is not None and res.stop_reason in (STOP_OPTIMAL, STOP_NODE_BUDGET)
