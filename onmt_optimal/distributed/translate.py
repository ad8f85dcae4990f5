"""``onmt_translate -ray_workers N``: the driver.

``run(opt)`` takes options already parsed and validated as ``onmt_translate`` does them (``patch.apply_cli``
calls it) and writes what one process writes: ``-output`` line for line, ``-stats_file`` (in input order, as
``CertifiedTranslator`` writes it) and the closing ``PRED`` lines on OpenNMT-py's logger. Both files are written
through one ``atomic.Outputs``, as in one process: to temporary files beside them, renamed into place together
once the run has succeeded; a failure, an interrupt or a lost driver leaves every earlier file as it was.

Order and faults: the driver keeps at most ``WINDOW`` buckets in flight, each cut into N parts (N workers); the
actors (``worker.TranslateWorker``) take parts as they fall idle (``ray.util.ActorPool``). A bucket is
written once all its parts are back, buckets in order. Actors are created with ``max_restarts`` and
``max_task_retries``: a worker that dies is started again (it reloads the model) and the call it was running
is re-run from the start; a part's result is a function of its bucket alone and reaches only the driver, so
the redone part replaces nothing and duplicates nothing (``plan.merge`` checks every line comes back once).
"""
from __future__ import annotations

import os
import time
import uuid

from onmt_optimal import atomic
from onmt_optimal.adapter.lines import StatsFile, label
from onmt_optimal.distributed import plan
from onmt_optimal.distributed.capacity import file_bytes
from onmt_optimal.distributed.cluster import Cluster, worker_error
from onmt_optimal.flags import Flags
from onmt_optimal.opennmt.options import Settings, read_parsed
from onmt_optimal.progress import sentence_bar
from onmt_optimal.adapter.totals import Totals
from onmt_optimal.search.record import Record

#: buckets whose parts may be in flight at once (bounds the driver's memory on a corpus of millions of lines)
WINDOW = 2
#: how often one worker may die and be restarted, and one part be re-run, before the run fails
RESTARTS = 3
#: actor names start with this (``ray.util.list_named_actors``)
NAME_PREFIX = "onmt-optimal-translate"


def gpus_per_worker(own: Settings, flags: Flags) -> float:
    gpus = flags.ray_gpus_per_worker
    if gpus is not None:
        return float(gpus)
    return 1.0 if own.gpu >= 0 else 0.0


def threads() -> int:
    """Intra-op threads of each worker: those this process's torch would use (``OMP_NUM_THREADS``, else the
    cores). A CPU decode's float32 results depend on that count (the scores' last bits; translations do not
    change), so the workers use the count one process would, and each reserves as many CPUs (a GPU worker
    one)."""
    import torch

    return max(1, torch.get_num_threads())


def cpus_per_worker(gpus: float) -> int:
    """CPUs each worker reserves, given the GPUs it takes (``gpus_per_worker``)."""
    return 1 if gpus > 0 else threads()


def run(opt, prepare=None, progress=None) -> dict:
    """Translate ``opt.src`` with ``opt.ray_workers`` Ray actors; write ``opt.output`` and ``opt.stats_file``.

    ``prepare`` is run first in each worker (``patch.apply``); ``progress``, if given, is called with the
    number of sentences done so far (all workers) while the run goes on. Returns ``{"sentences", "redone"}``:
    lines translated and parts that ran more than once (workers lost)."""
    from onmt.utils.logging import init_logger

    logger = init_logger(opt.log_file)
    own, flags = read_parsed(opt)
    search, label = _search(opt)
    total = plan.count_lines(opt.src)
    start = time.time()
    bar = _bar(flags, total) if total == 0 else None  # else once Ray is up: a refused run prints its line alone
    sums = Sums()
    redone = 0
    outputs = atomic.Outputs()
    stats_tmp = out = None
    try:
        if search.stats_file:  # as CertifiedTranslator writes it (lines.write_stats)
            stats_tmp = StatsFile(outputs, search.stats_file)
        if total > 0:
            workers = opt.ray_workers
            gpus = gpus_per_worker(own, flags)
            with Cluster(flags.ray_address, workers, gpus, cpus_per_worker(gpus),
                         model_bytes=file_bytes(own.models), timeout=flags.ray_timeout) as ray:
                bar = _bar(flags, total)
                report = _report_to(progress, bar)
                try:
                    out, redone = _translate(ray, opt, prepare, workers, gpus, total, sums, stats_tmp, report,
                                             outputs)
                except ray.exceptions.RayError as err:
                    raise worker_error(err) from err
        if out is None:
            out = _open_output(opt.output, outputs)  # an input with no line: an empty output, as in one process
        for f in (out, stats_tmp):
            if f is not None:
                f.close()
        outputs.commit()
    except BaseException:
        outputs.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    for line in _report_lines(search, label, sums):
        logger.info(line)
    if own.report_time:
        logger.info("Total translation time (s): %.1f" % (time.time() - start))
    return {"sentences": sums.sentences, "redone": redone}


def _translate(ray, opt, prepare, workers, gpus, total, sums, stats_tmp, report, outputs):
    from ray.util import ActorPool

    from onmt_optimal.distributed.progress import Progress

    actors = _actors(ray, opt, prepare, workers, gpus)
    tracker = ray.remote(Progress).options(num_cpus=0).remote() if report is not None else None
    out = None
    try:
        errors = [e for e in ray.get([a.ready.remote() for a in actors]) if e is not None]
        if errors:
            raise errors[0]
        pool = ActorPool(actors)
        pending: dict = {}  # bucket index -> [Bucket, results]
        source = plan.buckets(opt.src)
        next_write = 0
        exhausted = False
        while True:
            if not exhausted:
                exhausted = not _fill_window(ray, pool, source, pending, workers, tracker)
            if not pending:
                break
            while next_write in pending and len(pending[next_write][1]) == workers:
                bucket, results = pending.pop(next_write)
                if out is None:
                    out = _open_output(opt.output, outputs)
                _write(bucket, results, out, stats_tmp, sums)
                next_write += 1
                if report is not None:
                    report(sums.sentences)
            if not pending:
                continue
            try:
                result = pool.get_next_unordered(timeout=0.5)
            except TimeoutError:
                if tracker is not None:
                    report(ray.get(tracker.snapshot.remote())[0])
                continue
            pending[result["key"][0]][1].append(result)
        starts = ray.get(tracker.snapshot.remote())[1] if tracker is not None else None
        if report is not None:
            report(sums.sentences)
        redone = (starts - (next_write * workers)) if starts is not None else 0
        return out, redone
    except BaseException:
        outputs.abort()
        raise
    finally:
        for actor in actors:
            ray.kill(actor)
        if tracker is not None:
            ray.kill(tracker)


def _actors(ray, opt, prepare, workers: int, gpus) -> list:
    """``workers`` translating actors, each named after this run and restarted on a fault."""
    from onmt_optimal.distributed.worker import TranslateWorker

    name = f"{NAME_PREFIX}-{uuid.uuid4().hex[:8]}"
    remote = ray.remote(TranslateWorker)
    return [remote.options(num_cpus=cpus_per_worker(gpus), num_gpus=gpus, max_restarts=RESTARTS,
                           max_task_retries=RESTARTS, name=f"{name}-{i}")
            .remote(opt, os.getcwd(), prepare, gpus > 0, threads())
            for i in range(workers)]


def _fill_window(ray, pool, source, pending: dict, workers: int, tracker) -> bool:
    """Hand out every part of the next buckets of ``source`` until ``WINDOW`` buckets are pending; False once the
    source is exhausted."""
    while len(pending) < WINDOW:
        bucket = next(source, None)
        if bucket is None:
            return False
        ref = ray.put(bucket.data)
        pending[bucket.index] = [bucket, []]
        for part in range(workers):  # (the ref travels with the value: a queued submit runs later)
            pool.submit(lambda actor, v: actor.translate.remote(v[0], v[1], v[0][1], workers, tracker),
                        ((bucket.index, part), ref))
    return True


class Sums:
    """What the driver adds up as buckets are written: stock's score total and the sentences (its closing line),
    and the decoded records' ``Totals`` (the new flags' closing lines)."""

    def __init__(self):
        self.score, self.sentences, self.totals = 0.0, 0, Totals()


def _write(bucket, results, out, stats_tmp, sums: Sums) -> None:
    score_total = 0.0
    for result in sorted(results, key=lambda r: r["key"]):
        score_total += result["score_total"]
    sums.score += score_total
    for i, (text, plain) in enumerate(plan.merge(bucket.lines, results)):
        out.write(text)
        if plain is not None:
            record = Record.from_plain(plain)
            if stats_tmp is not None:
                stats_tmp.write(bucket.first_line + i + 1, record)
            sums.totals.add(record)
    out.flush()
    sums.sentences += bucket.lines


def _open_output(path, outputs):
    """``-output`` through ``outputs`` (``atomic``), written as OpenNMT-py writes it (``codecs.open(path, "w+",
    "utf-8")``: UTF-8, no newline translation)."""
    return atomic.TextFile(outputs, "-output", path, newline="")


def _search(opt):
    """The search the options select (``Options``), and its score's label, without loading a model."""
    from onmt.translate import GNMTGlobalScorer

    from onmt_optimal.options import Options

    search = Options.from_opt(opt, GNMTGlobalScorer.from_opt(opt))
    rule = search.scoring
    return search, None if rule is None else label(rule)


def _report_lines(search, label, sums: Sums) -> list[str]:
    """The closing lines one process logs (``CertifiedTranslator._report_score``; stock's without new flags)."""
    from onmt.translate.translator import Translator

    n = sums.sentences
    lines = None if search.stock or n == 0 else sums.totals.lines(n, label)
    return [Translator._report_score(None, "PRED", sums.score, n)] if lines is None else lines


def _bar(flags: Flags, total):
    if not flags.progress:
        return None
    return sentence_bar(total)


def _report_to(progress, bar):
    """One callable taking the sentences done so far, feeding ``progress`` and the bar; None if nobody listens."""
    if progress is None and bar is None:
        return None

    def report(done: int) -> None:
        if bar is not None and done != bar.n:
            bar.n = done
            bar.refresh()
            if bar.total is not None and done >= bar.total:
                bar.close()  # before the closing log lines, as in one process
        if progress is not None:
            progress(done)

    return report
