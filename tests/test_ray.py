"""``-ray_workers N`` and ``sweep --ray-workers N`` give what one process gives, byte for byte, on a real local
Ray cluster (started once for the module, 2 CPUs) with the trained toy model; a worker killed mid-run is
replaced and its part redone; bad input behaves as without Ray. The option checks and the shard plan are fast
tests.

The one-process side is ``our_worker`` (one thread: ``OMP_NUM_THREADS=1``); the Ray driver runs here with
torch set to one thread too, so its workers use one (``distributed.translate.threads``): float32 results
depend on the thread count, and only then are the scores' last bits one process's.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from onmt_optimal.distributed import plan
from onmt_optimal import options
from onmt_optimal.opennmt import patch

REPO = Path(__file__).resolve().parent.parent
LINES = 200


# ------------------------------------------------------------------ fast: the plan and the option checks
def test_buckets_cover_the_file_in_order(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"a\n\nb c\n\xe4\xb8\xad\nlast")  # an empty line, UTF-8, no final newline
    got = list(plan.buckets(str(src), size=2))
    assert [(b.index, b.first_line, b.lines) for b in got] == [(0, 0, 2), (1, 2, 2), (2, 4, 1)]
    assert b"".join(b.data for b in got) == src.read_bytes()
    assert plan.count_lines(str(src)) == 5
    (tmp_path / "empty").write_bytes(b"")
    assert list(plan.buckets(str(tmp_path / "empty"))) == []


def test_merge_puts_parts_in_order_and_refuses_lost_or_doubled_lines():
    parts = [{"lines": [1, 3], "texts": ["b\n", "d\n"], "stats": None},
             {"lines": [0, 2], "texts": ["a\n", "c\n"], "stats": None}]
    assert [t for t, _ in plan.merge(4, parts)] == ["a\n", "b\n", "c\n", "d\n"]
    with pytest.raises(RuntimeError, match="never came back"):
        plan.merge(5, parts)
    with pytest.raises(RuntimeError, match="twice"):
        plan.merge(4, parts + [{"lines": [2], "texts": ["c\n"], "stats": None}])
    assert [p for p in range(3) if plan.in_part(7, p, 3)] == [1]


def _opt(**kw):
    base = dict(src=None, output=None, stats_file=None, stopping="default", length_reward=0.0, length_ratio=None,
                bp_norm=False, bound="exact", length_penalty="none", ray_workers=2, ray_address=None,
                ray_gpus_per_worker=None, gpu=-1, world_size=1, random_sampling_topk=0, random_sampling_topp=0.0,
                tgt=None, attn_debug=False, align_debug=False, verbose=False)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.mark.parametrize("kw, message", [
    (dict(world_size=2, ray_workers=0, stopping="optimal"), "use -ray_workers 2 instead"),
    (dict(world_size=2), "-world_size 2 is not supported"),
    (dict(ray_workers=-1), "-ray_workers must be a number >= 0"),
    (dict(ray_workers=0, ray_address="auto"), "-ray_address needs -ray_workers"),
    (dict(ray_gpus_per_worker=1.0), "needs -gpu 0"),
    (dict(gpu=0, ray_gpus_per_worker=0.0), "drop -gpu"),
    (dict(random_sampling_topk=10), "random sampling"),
    (dict(tgt="ref.txt"), "-tgt"),
    (dict(verbose=True), "-verbose"),
])
def test_refused_combinations(kw, message):
    with pytest.raises(options.OptionError, match=message):
        options.validate(_opt(**kw))


def test_world_size_without_new_flags_stays_stock():
    options.validate(_opt(world_size=2, ray_workers=0))


# ------------------------------------------------------------------ slow: a local Ray cluster
@pytest.fixture(scope="module")
def ray_cluster():
    import logging

    import ray

    ray.init(num_cpus=2, object_store_memory=128 * 1024 ** 2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """200 toy sentences with empty lines among them (first, middle, last but one)."""
    import toy

    d = tmp_path_factory.mktemp("ray")
    toy.write_corpus(d / "dev", LINES, seed=11, max_len=12)
    lines = (d / "dev.src").read_text().splitlines()
    for i in (0, 57, LINES - 2):
        lines[i] = ""
    (d / "dev.src").write_text("\n".join(lines) + "\n")
    return d


def _one_thread():
    import torch

    class Ctx:
        def __enter__(self):
            self.n = torch.get_num_threads()
            torch.set_num_threads(1)

        def __exit__(self, *exc):
            torch.set_num_threads(self.n)

    return Ctx()


def ray_translate(args, progress=None):
    """``onmt_translate *args -ray_workers 2`` in this process (joins the module's cluster), as ``patch``
    dispatches it; returns ``distributed.translate.run``'s summary."""
    from onmt.bin.translate import _get_parser
    from onmt.utils.parse import ArgumentParser

    from onmt_optimal.distributed.translate import run

    opt = _get_parser().parse_args([str(a) for a in args] + ["-ray_workers", "2"])
    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)
    ArgumentParser._validate_transforms_opts(opt)
    ArgumentParser.validate_translate_opts_dynamic(opt)
    with _one_thread():
        return run(opt, prepare=patch.apply, progress=progress)


COMMON = ["-max_length_ratio", "0", "-max_length", "25", "-batch_size", "8", "-beam_size", "4"]
RULES = {
    "stock": [],
    "stock_nbest_score": ["-n_best", "2", "-with_score", "-max_length_ratio", "1.25"],
    "optimal": ["-stopping", "optimal", "-length_penalty", "none", "-with_score"],
    "optimal_reward": ["-stopping", "optimal", "-length_penalty", "none", "-length_reward", "1.2",
                       "-length_ratio", "1.5", "-n_best", "2", "-with_score"],
    "shrinking": ["-stopping", "shrinking", "-length_penalty", "avg", "-with_score"],
    "default_stats": ["-stopping", "default", "-length_penalty", "avg", "-with_score"],
}


def _pair(tmp_path, name):
    return tuple(tmp_path / f"{name}.{kind}" for kind in ("out", "stats", "ray.out", "ray.stats"))


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(RULES))
def test_identical_to_one_process(ray_cluster, toy_model, corpus, our_worker, tmp_path, rule):
    out, stats, ray_out, ray_stats = _pair(tmp_path, rule)
    flags = [*COMMON, *RULES[rule]]
    with_stats = rule != "stock" and rule != "stock_nbest_score"
    one = ["-stats_file", stats] if with_stats else []
    done = our_worker.run("-model", toy_model, "-src", corpus / "dev.src", "-output", out, *one, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = ray_translate(["-model", toy_model, "-src", corpus / "dev.src", "-output", ray_out,
                             *(["-stats_file", ray_stats] if with_stats else []), *flags])
    assert summary["sentences"] == LINES
    assert ray_out.read_bytes() == out.read_bytes()
    if with_stats:
        assert ray_stats.read_bytes() == stats.read_bytes()
        assert [json.loads(x)["line"] for x in ray_stats.read_text().splitlines()] == list(range(1, LINES + 1))
    n_best = 2 if "-n_best" in flags else 1
    texts = out.read_text().splitlines()
    assert len(texts) == n_best * LINES and texts[0].split("\t")[0] == ""  # the empty first line, answered


@pytest.mark.slow
def test_cli_joins_a_cluster_and_prints_nothing_alarming(ray_cluster, toy_model, corpus, our_worker, tmp_path):
    """The console script, as a user runs it (-ray_address: this module's cluster), with -progress."""
    out, stats, ray_out, ray_stats = _pair(tmp_path, "cli")
    flags = [*COMMON, "-stopping", "optimal", "-length_penalty", "none"]
    done = our_worker.run("-model", toy_model, "-src", corpus / "dev.src", "-output", out, "-stats_file", stats,
                          *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    cli = [str(Path(sys.executable).parent / "onmt_translate"), "-model", str(toy_model), "-src",
           str(corpus / "dev.src"), "-output", str(ray_out), "-stats_file", str(ray_stats), *flags,
           "-ray_workers", "2", "-ray_address", ray_cluster, "-progress"]
    run = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert ray_out.read_bytes() == out.read_bytes() and ray_stats.read_bytes() == stats.read_bytes()
    noise = [line for line in run.stderr.splitlines()
             if any(w in line for w in ("WARNING", "Traceback", "Error", "error"))]
    assert not noise, run.stderr[-3000:]
    assert f"{LINES}/{LINES}" in run.stderr  # the progress bar reached every line


@pytest.mark.slow
def test_killed_worker_is_replaced_and_its_part_redone(ray_cluster, toy_model, corpus, our_worker, tmp_path):
    import ray

    from onmt_optimal.distributed.translate import NAME_PREFIX

    out, stats, ray_out, ray_stats = _pair(tmp_path, "killed")
    # long enough to be caught mid-run on a fast machine (the toy model decodes 200 lines in about a second
    # otherwise, and the driver reads the progress every half second): the corpus five times over, small batches
    # that never stop before max_length
    copies = 5
    lines = copies * LINES
    src = tmp_path / "long.src"
    src.write_bytes((corpus / "dev.src").read_bytes() * copies)
    flags = [*COMMON, "-batch_size", "2", "-max_length", "60", "-stopping", "exhaustive", "-length_penalty", "none",
             "-with_score"]
    done = our_worker.run("-model", toy_model, "-src", src, "-output", out, "-stats_file", stats, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = []
    first = threading.Event()

    def progress(n):
        seen.append(n)
        if 0 < n < lines * 3 // 4:
            first.set()

    result = {}
    run = threading.Thread(target=lambda: result.update(ray_translate(
        ["-model", toy_model, "-src", src, "-output", ray_out, "-stats_file", ray_stats, *flags],
        progress=progress)))
    run.start()
    assert first.wait(60), seen
    # every worker of the run, so that whichever part is unfinished (a quarter of the lines at least) is cut
    # mid-way, whatever the order the parts run in; each actor's process is killed at once (a call to the actor
    # would wait for its part to finish)
    victims = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(NAME_PREFIX)]
    assert victims
    for victim in victims:
        ray.kill(ray.get_actor(victim["name"], namespace=victim["namespace"]), no_restart=False)
    run.join(300)
    assert not run.is_alive()
    assert result["redone"] >= 1, result
    assert ray_out.read_bytes() == out.read_bytes() and ray_stats.read_bytes() == stats.read_bytes()


@pytest.mark.slow
def test_empty_inputs_as_without_ray(ray_cluster, toy_model, our_worker, tmp_path):
    for name, data in (("zero", b""), ("blank", b"\n\n\n")):
        src = tmp_path / f"{name}.src"
        src.write_bytes(data)
        out, stats, ray_out, ray_stats = _pair(tmp_path, name)
        done = our_worker.run("-model", toy_model, "-src", src, "-output", out, "-stats_file", stats, *COMMON)
        assert done.returncode == 0, done.stderr[-3000:]
        started = time.time()
        ray_translate(["-model", toy_model, "-src", src, "-output", ray_out, "-stats_file", ray_stats, *COMMON])
        assert ray_out.read_bytes() == out.read_bytes() and ray_stats.read_bytes() == stats.read_bytes()
        if not data:
            assert out.read_bytes() == b"" and time.time() - started < 5  # no worker started for no line


@pytest.mark.slow
def test_bad_model_is_one_line(ray_cluster, corpus, tmp_path):
    from onmt_optimal.opennmt.checkpoint import CheckpointError

    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="is not an OpenNMT-py checkpoint"):
        ray_translate(["-model", bad, "-src", corpus / "dev.src", "-output", tmp_path / "o"])
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_sweep_on_workers_equals_one_process(ray_cluster, toy_model, corpus):
    from onmt_optimal.search.registry import paper_decoders
    from onmt_optimal.session import Session
    from onmt_optimal.sweep import run_sweep, run_sweep_ray

    src = corpus / "dev.src"
    src_lines = src.read_text().splitlines()[:40]
    refs = [(corpus / "dev.tgt").read_text().splitlines()[:40]]
    short = src.parent / "dev40.src"
    short.write_text("".join(line + "\n" for line in src_lines))
    args = ["-model", str(toy_model), "-max_length_ratio", "0", "-max_length", "25", "-batch_size", "8"]
    decoders = paper_decoders([0.0, 1.2])
    with _one_thread():
        one = run_sweep(Session(args), short, refs, [1, 3], decoders, 1.5, progress=False)
        many, ratio = run_sweep_ray(args, src_lines, refs, [1, 3], decoders, 1.5, workers=2, progress=False)
    assert ratio == 1.5
    assert many["rows"] == one["rows"] and many["decodes"] == one["decodes"]
