"""``python -m onmt_optimal sweep|ratio`` with an eole model: the sweep's one decode per beam answers exactly as
separate ``eole predict`` runs with the same options, and the length ratio counts the tokens eole reads."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from helpers.float32 import score_tolerance
from onmt_optimal.search.registry import Decoder

CASES = [
    (Decoder("default", "default", "logprob"), ["-stopping", "default", "-length_penalty", "none"]),
    (Decoder("optimal", "optimal", "logprob"), ["-stopping", "optimal", "-length_penalty", "none"]),
    (Decoder("optimal_reward", "optimal", "bounded_reward", 1.2),
     ["-stopping", "optimal", "-length_penalty", "none", "-length_reward", "1.2", "-length_ratio", "1.5"]),
    (Decoder("shrinking_norm", "shrinking", "avg"), ["-stopping", "shrinking", "-length_penalty", "avg"]),
]
COMMON = ["-max_length_ratio", "0", "-max_length", "25", "-batch_size", "8"]


@pytest.mark.parametrize("beam", [1, 4])
def test_one_decode_per_beam_equals_separate_runs(ours, model, src, tmp_path, beam):
    from onmt_optimal.eole.session import EoleSession
    from onmt_optimal.tools.sweep import decode_all

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the worker (OMP_NUM_THREADS=1): the same float32 sums
    try:
        session = EoleSession(["-model_path", str(model), *COMMON])
        results = decode_all(session, src, beam, [c[0] for c in CASES], ratio=1.5)
    finally:
        torch.set_num_threads(threads)
    for decoder, flags in CASES:
        out, stats = tmp_path / f"{decoder.label()}.out", tmp_path / f"{decoder.label()}.stats"
        done = ours.predict("-model_path", model, "-src", src, "-output", out, "-beam_size", beam,
                            "-stats_file", stats, *COMMON, *flags)
        assert done.returncode == 0, done.stderr[-3000:]
        records = [json.loads(line) for line in stats.read_text().splitlines()]
        got = results[decoder]
        assert [r["text"] for r in got] == out.read_text().splitlines(), decoder
        for g, want in zip(got, records, strict=True):
            assert g["steps"] == want["steps"] and g["stop_reason"] == want["stop_reason"], decoder
            tol = score_tolerance(want["length"] + 1, want["log_prob"], want["score"])
            assert abs(g["score"] - want["score"]) <= tol, (decoder, g["score"], want["score"], tol)


def test_ratio_and_sweep_commands_take_an_eole_model(encoder_decoder, src, tmp_path):
    ref = src.with_suffix(".tgt")
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "ratio", "--src", src, "--refs", ref, "--",
                           "-model_path", encoder_decoder], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    src_len = sum(len(line.split()) for line in src.read_text().splitlines())
    ref_len = sum(len(line.split()) for line in ref.read_text().splitlines())
    assert done.stdout.startswith(f"-length_ratio {ref_len / src_len:.4f}  ")
    out = tmp_path / "sweep.json"
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", src, "--refs", ref, "--beams",
                           "2", "--rewards", "0,1", "--out", out, "--", "-model_path", encoder_decoder, *COMMON],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert {row["family"] for row in rows} == {"default", "opennmt2017", "default_avg", "optimal", "optimal_reward",
                                               "shrinking_norm", "shrinking_reward"}
    assert all(row["sentences"] == 40 for row in rows)
    assert done.stdout.splitlines()[0].split()[:3] == ["decoder", "b", "r"] and "\nbest: " in done.stdout


def test_sweep_plot_without_matplotlib_is_one_line_before_the_model(src, tmp_path):
    """eole's environment has no matplotlib: --plot is refused in one line, exit 2, before any model loads."""
    try:
        import matplotlib  # noqa: F401
        pytest.skip("matplotlib is installed here")
    except ImportError:
        pass
    ref = src.with_suffix(".tgt")
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", "sweep", "--src", src, "--refs", ref, "--out",
                           tmp_path / "s.json", "--plot", tmp_path / "s.png", "--", "-model_path",
                           tmp_path / "no-model"], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        "onmt-optimal sweep: error: --plot needs matplotlib: pip install -r requirements-plots.txt"]
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "s.png").exists()


def test_bookkeeping_on_the_host_answers_as_next_to_the_model(model, src):
    """``EoleSession.host = "cpu"`` (``Options.host``): eole's pipeline with the search's bookkeeping on the
    host gives every rule's records as next to the model, to the bit (host and model share the CPU here)."""
    from onmt_optimal.eole.session import EoleSession
    from onmt_optimal.tools.sweep import decode_all

    session = EoleSession(["-model_path", str(model), *COMMON])
    decoders = [c[0] for c in CASES]
    near = decode_all(session, src, 4, decoders, ratio=1.5)
    session.host = "cpu"
    away = decode_all(session, src, 4, decoders, ratio=1.5)
    assert away == near


@pytest.mark.parametrize("flags", [["-max_length", "25"], ["-max_length", "6", "-min_length", "3"]], ids=" ".join)
def test_beam_of_one_records_are_the_core_s(model, src, monkeypatch, flags):
    """A beam of one item (``search.beam_of_one``): eole's own beam search, scored afterwards, gives every rule's
    records as the core does, to the bit, in one batch and in batches that shrink, some cut at ``-max_length 6``,
    for an encoder-decoder and a decoder-only model (whose batches of prompts of several lengths are decoded a
    length at a time either way). The core is not built on that path (counted)."""
    from onmt_optimal.eole.beam_search import CertifiedBeamSearch, CertifiedBeamSearchLM
    from onmt_optimal.eole.session import EoleSession
    from onmt_optimal.search.registry import STOPPING_RULES
    from onmt_optimal.search.scoring import BoundedWordReward, BPNorm, StockScore, WordReward

    built = []
    for cls in (CertifiedBeamSearch, CertifiedBeamSearchLM):
        monkeypatch.setattr(cls, "initialize", lambda self, *a, _initialize=cls.initialize, **k: built.append(1)
                            or _initialize(self, *a, **k))
    scores = [StockScore(own=False), StockScore("avg", own=False), BoundedWordReward(1.2, 1.5), WordReward(0.5),
              BPNorm(1.5)]
    cut = 0
    # a decoder-only model's limit is -max_length alone: eole's default ratio (2) stays on, to be ignored
    ratio = "2" if "decoder_only" in str(model) else "0"
    for batch in ("1", "8"):
        session = EoleSession(["-model_path", str(model), "-max_length_ratio", ratio, "-length_penalty",
                               "none", "-batch_size", batch, *flags])
        for shrinks in (False, True):
            rules = [(score, STOPPING_RULES[name]()) for name in STOPPING_RULES
                     if STOPPING_RULES[name].shrinks == shrinks for score in scores]
            session.beam_of_one = True
            built.clear()
            toolkit = session.decode(src, 1, rules)
            assert not built
            session.beam_of_one = False
            core = session.decode(src, 1, rules)
            assert built
            assert toolkit == core
            cut += sum(line[0]["stop_reason"] == "max_length" for line in core)
    assert cut > 0 or "6" not in flags
