"""``-ray_workers N`` and ``sweep --ray-workers N`` give what one process gives, byte for byte, on a real local
Ray cluster (started once for the module, 2 CPUs, as ``onmt_translate`` starts one) with the trained toy model;
a worker killed mid-run is replaced and its part redone; bad input behaves as without Ray. A local Ray that
``onmt_translate -ray_workers 2`` starts listens on loopback only and leaves no process and no file behind, even
when the run fails; more workers than the machine holds, and a -ray_address where no cluster answers, end in
one line within a bounded time. The option checks, the capacity rules and the shard plan are fast tests.

The one-process side is ``our_worker`` (one thread: ``OMP_NUM_THREADS=1``); the Ray driver runs here with
torch set to one thread too, so its workers use one (``distributed.translate.threads``): float32 results
depend on the thread count, and only then are the scores' last bits one process's.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from onmt_optimal.distributed import capacity, join, plan
from onmt_optimal.distributed import options as ray_options
from onmt_optimal.distributed.cluster import Cluster
from onmt_optimal import options
from onmt_optimal.opennmt import options as opennmt_options
from onmt_optimal.opennmt import patch

REPO = Path(__file__).resolve().parents[2]
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
                ray_gpus_per_worker=None, ray_timeout=None, gpu=-1, world_size=1, random_sampling_topk=0, random_sampling_topp=0.0,
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
    (dict(ray_workers=0, ray_timeout=5.0), "-ray_timeout needs -ray_workers"),
    (dict(ray_timeout=5.0), "give -ray_address too"),
    (dict(ray_address="10.0.0.1:6379", ray_timeout=0.0), "-ray_timeout must be a number of seconds > 0"),
    (dict(ray_address="10.0.0.1:6379", ray_timeout=float("nan")), "-ray_timeout must be"),
])
def test_refused_combinations(kw, message):
    with pytest.raises(options.OptionError, match=message):
        validate(_opt(**kw))


def test_world_size_without_new_flags_stays_stock():
    validate(_opt(world_size=2, ray_workers=0))


def validate(opt):
    """The search's validation, then Ray's, as ``onmt_translate`` runs them (``patch.apply``)."""
    own, flags = opennmt_options.read_parsed(opt)
    opennmt_options.validate(own, flags)
    ray_options.validate(own, flags)


@pytest.mark.parametrize("kw, message", [
    (dict(workers=3, n_cores=2), "has 2 cores: the most it can run is -ray_workers 2"),
    (dict(workers=4, n_cores=8, memory=2 * capacity.GIB, model_bytes=100 * capacity.MIB),
     "2.0 GiB of memory available: the most it can run is -ray_workers 2"),
    (dict(workers=1, n_cores=8, memory=capacity.RAY_BYTES), "it cannot run one worker beside Ray"),
    (dict(workers=3, n_cores=8, memory=None, gpus_per_worker=1.0, n_gpus=2), "the most it can run is -ray_workers 2"),
    (dict(workers=5, n_cores=8, memory=None, gpus_per_worker=0.5, n_gpus=2), "needs 2.5 GPUs"),
])
def test_local_capacity_refusals_say_the_most_the_machine_runs(kw, message):
    with pytest.raises(options.OptionError, match=message):
        capacity.check_local(**kw)


def test_local_capacity_allows_what_fits():
    capacity.check_local(2, n_cores=2, memory=2 * capacity.WORKER_BYTES + capacity.RAY_BYTES)
    capacity.check_local(4, 0.5, n_cores=2 * 2, memory=None, n_gpus=2)
    assert capacity.cores() >= 1 and capacity.worker_bytes(10) == capacity.WORKER_BYTES + 20


def test_more_workers_than_cores_are_refused_before_ray_starts():
    """In this process, before anything is imported or started (the module's cluster may not be up yet)."""
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        pytest.skip("a Ray is already initialised in this process (it would be used as it is)")
    with pytest.raises(options.OptionError, match="the most it can run is"):
        with Cluster(None, capacity.cores() + 1):
            pass
    assert not ("ray" in sys.modules and sys.modules["ray"].is_initialized())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_where_nothing_listens_is_refused_at_once():
    port = _closed_port()
    started = time.time()
    with pytest.raises(options.OptionError, match=f"-ray_address 127.0.0.1:{port}: no Ray cluster there"):
        join.reach(f"127.0.0.1:{port}", 30)
    assert time.time() - started < 5


def test_address_forms_and_limits():
    assert join.host_port("10.0.0.1:6379") == ("10.0.0.1", 6379)
    assert join.host_port("[::1]:6379") == ("::1", 6379)
    assert join.host_port("auto") is None and join.host_port("ray://head:10001") is None
    got = join.limits(30)
    assert got["RAY_gcs_server_port_wait_time_s"] == "1" and got["RAY_gcs_rpc_server_connect_timeout_s"] == "10"
    os.environ["RAY_py_gcs_connect_timeout_s"] = "7"
    try:
        with join.environment(got):
            assert os.environ["RAY_py_gcs_connect_timeout_s"] == "7"  # the user's own setting wins
            assert os.environ["RAY_gcs_server_request_timeout_seconds"] == "30"
        assert "RAY_gcs_server_request_timeout_seconds" not in os.environ
        assert os.environ["RAY_py_gcs_connect_timeout_s"] == "7"
    finally:
        del os.environ["RAY_py_gcs_connect_timeout_s"]


# ------------------------------------------------------------------ slow: a local Ray cluster
@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray as ``onmt_translate -ray_workers 2`` starts one (loopback, its own temporary directory)."""
    with Cluster(None, 2, cpus_per_worker=1) as ray:
        yield ray.get_runtime_context().gcs_address


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """200 toy sentences with empty lines among them (first, middle, last but one)."""
    from helpers import toy

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
    from onmt_optimal.opennmt.session import Session
    from onmt_optimal.tools.sweep import run_sweep, run_sweep_ray

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


# ------------------------------------------------------------------ slow: the console script's own Ray
def _cli(*args) -> list[str]:
    return [str(Path(sys.executable).parent / "onmt_translate"), *[str(a) for a in args]]


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")


def _is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


class Tree:
    """A command's process tree, watched while it runs: every process seen, every listening TCP socket (with
    the process that holds it) and the command lines (``psutil``, which Ray ships and puts on the path)."""

    def __init__(self, cmd, env):
        import ray  # noqa: F401  (makes Ray's psutil importable)
        import psutil

        self.psutil = psutil
        self.pids, self.listening, self.cmdlines, self.names = set(), set(), set(), set()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sample(self) -> None:
        psutil = self.psutil
        try:
            root = psutil.Process(self.proc.pid)
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            procs = []
        for proc in procs:
            try:
                self.pids.add(proc.pid)
                self.names.add(proc.name())
                self.cmdlines.add(" ".join(proc.cmdline()))
                for conn in proc.net_connections(kind="inet"):
                    if conn.status == psutil.CONN_LISTEN:
                        self.listening.add((conn.laddr.ip, conn.laddr.port, proc.name()))
            except psutil.Error:
                pass

    def wait_for(self, name_part: str, limit: float) -> None:
        """Until a process of the tree is named with ``name_part`` (while it runs, ``limit`` seconds at most)."""
        deadline = time.time() + limit
        while not any(name_part in n for n in self.names):
            assert self.proc.poll() is None and time.time() < deadline, (self.names, self.proc.returncode)
            self.sample()
            time.sleep(0.2)

    def watch(self, limit: float):
        deadline = time.time() + limit
        while self.proc.poll() is None and time.time() < deadline:
            self.sample()
            time.sleep(0.2)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"still running after {limit} s")
        return self.proc.returncode, self.proc.stdout.read(), self.proc.stderr.read()

    def survivors(self, wait: float = 10) -> list[str]:
        """The processes of the tree still alive ``wait`` seconds at most after the command ended."""
        deadline = time.time() + wait
        while True:
            alive = []
            for pid in self.pids:
                try:
                    proc = self.psutil.Process(pid)
                    if proc.status() != self.psutil.STATUS_ZOMBIE:
                        alive.append(f"{pid} {proc.name()}")
                except self.psutil.Error:
                    pass
            if not alive or time.time() > deadline:
                return alive
            time.sleep(0.5)

    def ray_dirs(self) -> set[str]:
        """The temporary directories of the run's Ray, from its processes' command lines."""
        found = set()
        for line in self.cmdlines:
            found |= set(re.findall(r"(/[^\s=]*/onmt-ray-[^/\s]+)/", line))
        return found


def _one_line_error(stderr: str, *fragments):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("onmt_translate: error: "), stderr[-3000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.slow
def test_local_ray_listens_on_loopback_only_and_leaves_nothing(toy_model, corpus, tmp_path):
    """``onmt_translate -ray_workers 2`` as a user runs it: while it decodes, every listening socket of its
    process tree (driver, GCS, raylet, agents, workers) is on loopback; after it, none of those processes is
    alive, and its Ray directory is gone (none under Ray's default /tmp/ray either)."""
    src = tmp_path / "long.src"
    src.write_bytes((corpus / "dev.src").read_bytes() * 3)
    out = tmp_path / "out"
    tree = Tree(_cli("-model", toy_model, "-src", src, "-output", out, *COMMON, "-ray_workers", "2"), _env())
    rc, _, stderr = tree.watch(300)
    assert rc == 0, stderr[-3000:]
    assert len(out.read_text().splitlines()) == 3 * LINES
    names = {name for _, _, name in tree.listening}
    assert any("raylet" in n for n in names) and any("gcs_server" in n for n in names), tree.listening
    assert any("TranslateWorker" in n for n in names), tree.listening  # seen while the workers ran
    exposed = sorted(x for x in tree.listening if not _is_loopback(x[0]))
    assert not exposed, exposed
    assert not tree.survivors()
    dirs = tree.ray_dirs()
    assert dirs and not any(Path(d).exists() for d in dirs), dirs
    assert not [line for line in tree.cmdlines if "/tmp/ray/" in line]


@pytest.mark.slow
def test_a_failed_local_run_leaves_nothing_running(corpus, tmp_path):
    """A model no worker can load: one line, a non-zero status, no -output, and the run's Ray gone whole."""
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    out = tmp_path / "out"
    tree = Tree(_cli("-model", bad, "-src", corpus / "dev.src", "-output", out, "-ray_workers", "2"), _env())
    rc, _, stderr = tree.watch(300)
    assert rc != 0
    _one_line_error(stderr, "is not an OpenNMT-py checkpoint")
    assert not out.exists()
    assert not tree.survivors()
    dirs = tree.ray_dirs()
    assert dirs and not any(Path(d).exists() for d in dirs), dirs
    assert not [line for line in tree.cmdlines if "/tmp/ray/" in line]


@pytest.mark.slow
def test_sigterm_mid_run_is_one_line_and_leaves_nothing(toy_model, corpus, tmp_path):
    """SIGTERM while the workers decode: the driver's own line (status 143, not Ray's stack dump and abort),
    no -output, and the run's Ray gone whole."""
    import signal

    src = tmp_path / "long.src"
    src.write_bytes((corpus / "dev.src").read_bytes() * 5)
    out = tmp_path / "out"
    tree = Tree(_cli("-model", toy_model, "-src", src, "-output", out, *COMMON, "-batch_size", "2",
                     "-max_length", "60", "-stopping", "exhaustive", "-length_penalty", "none",
                     "-ray_workers", "2"), _env())
    tree.wait_for("TranslateWorker.translate", 240)
    tree.proc.send_signal(signal.SIGTERM)
    rc, _, stderr = tree.watch(120)
    assert rc == 143, stderr[-3000:]
    _one_line_error(stderr, "terminated")
    assert not out.exists()
    assert not tree.survivors()
    dirs = tree.ray_dirs()
    assert dirs and not any(Path(d).exists() for d in dirs), dirs


@pytest.mark.slow
def test_more_workers_than_the_machine_holds_is_one_line_and_starts_nothing(corpus, tmp_path):
    workers = capacity.cores() + 1
    out = tmp_path / "out"
    tree = Tree(_cli("-model", tmp_path / "unused.pt", "-src", corpus / "dev.src", "-output", out,
                     "-ray_workers", workers, "-progress"), _env())
    rc, _, stderr = tree.watch(120)
    assert rc == 2
    _one_line_error(stderr, f"-ray_workers {workers} starts {workers} worker processes",
                    f"the most it can run is -ray_workers {capacity.cores()}")
    assert not out.exists()
    assert not [line for line in tree.cmdlines if "raylet" in line or "gcs_server" in line]


@pytest.mark.slow
def test_an_address_where_nothing_listens_is_one_line_at_once(corpus, tmp_path):
    port = _closed_port()
    tree = Tree(_cli("-model", tmp_path / "unused.pt", "-src", corpus / "dev.src", "-output", tmp_path / "out",
                     "-ray_workers", "2", "-ray_address", f"127.0.0.1:{port}", "-progress"), _env())
    started = time.time()
    rc, _, stderr = tree.watch(60)
    assert rc == 2 and time.time() - started < 30
    _one_line_error(stderr, f"-ray_address 127.0.0.1:{port}: no Ray cluster there")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_an_address_that_never_answers_as_ray_is_one_line_within_the_timeout(corpus, tmp_path):
    """A port that accepts connections and says nothing (no GCS behind it): Ray would retry for minutes; with
    -ray_timeout 3 the run ends in one line a few seconds after the timeout."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        port = server.getsockname()[1]
        tree = Tree(_cli("-model", tmp_path / "unused.pt", "-src", corpus / "dev.src", "-output", tmp_path / "out",
                         "-ray_workers", "2", "-ray_address", f"127.0.0.1:{port}", "-ray_timeout", "3"), _env())
        started = time.time()
        rc, _, stderr = tree.watch(90)
        took = time.time() - started
    assert rc == 2, stderr[-3000:]
    _one_line_error(stderr, f"-ray_address 127.0.0.1:{port}: no Ray cluster answered within 3 s")
    assert took < 25, took
    assert not (tmp_path / "out").exists()
    assert not tree.survivors()


@pytest.mark.slow
def test_a_cluster_that_refuses_our_token_is_named_in_one_line(ray_cluster, toy_model, corpus, tmp_path):
    """Ray guards a new cluster with a token (``RAY_AUTH_MODE=token``, set in this process by the module's
    cluster); a process without token authentication is refused by it, which the line says."""
    env = {k: v for k, v in _env().items() if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
    tree = Tree(_cli("-model", toy_model, "-src", corpus / "dev.src", "-output", tmp_path / "out", *COMMON,
                     "-ray_workers", "2", "-ray_address", ray_cluster, "-ray_timeout", "3"), env)
    rc, _, stderr = tree.watch(90)
    assert rc == 2
    _one_line_error(stderr, "the cluster refused this process's authentication token")
    assert not (tmp_path / "out").exists()
