"""The translation worker: one model, loaded once; it decodes parts of buckets (``plan``).

A part is decoded by OpenNMT-py's own pipeline on the whole bucket (read, transforms, length sort, batching:
one process's batches, checked against ``plan.BUCKET``), of which only the part's batches reach the
translator. What the translator writes for a sentence (its n-best lines, with ``-with_score`` their scores) is
kept as the one string it writes, with the sentence's index in the bucket; its statistics record likewise.
The worker never writes ``-output`` or ``-stats_file`` and logs nothing to the driver's terminal.
"""
from __future__ import annotations

import copy
import os
import tempfile
from dataclasses import replace

from onmt_optimal.distributed.plan import in_part


class TranslateWorker:
    def __init__(self, opt, cwd: str | None = None, prepare=None, on_gpu: bool = False, threads: int | None = None):
        """``prepare``: called first (the driver hands ``patch.apply``: OpenNMT-py patched even where the import
        hook is not installed); ``cwd``: the driver's directory, where relative paths in the options start;
        ``threads``: torch's intra-op threads (float32 results depend on them: the driver's count)."""
        self.error = None
        try:
            if threads:
                import torch

                torch.set_num_threads(threads)
            if prepare is not None:
                prepare()
            if cwd and os.path.isdir(cwd):
                os.chdir(cwd)
            self._load(opt, on_gpu)
        except Exception as err:  # reported by ready(), in the driver, as one line
            self.error = err

    def _load(self, opt, on_gpu: bool) -> None:
        from onmt.inference_engine import InferenceEnginePY
        from onmt.utils.misc import set_random_seed, use_gpu

        opt = copy.deepcopy(opt)
        opt.log_file = ""
        opt.progress = False
        if on_gpu:
            opt.gpu = 0  # the first (only) device Ray made visible to this actor
        set_random_seed(opt.seed, use_gpu(opt))
        self.opt = opt
        from onmt_optimal.opennmt.checkpoint import one_line_loads

        with one_line_loads():  # a model that is no checkpoint: one line, as in onmt_translate
            self.engine = InferenceEnginePY(opt)
        translator = self.engine.translator
        search = translator.search
        # records are collected (``_stats``) and sent back, not written here: the driver's statistics file
        self._search = None if search is None else replace(search.records_read() if search.stats_file else search,
                                                           stats_file=None)
        self._totals = None

        def report(name, score_total, nb_sentences):  # stock's closing lines: the driver writes them
            self._totals = (float(score_total), int(nb_sentences))
            return ""

        # InferenceEnginePY builds the translator itself (``report_score=True``, its logger), and ``_translate``
        # hands its score total only to ``_report_score``: this one translator's two methods are replaced
        translator._report_score = report
        translator._log = lambda msg: None

    def ready(self):
        """None once the model is loaded, else the exception that stopped it (re-raised by the driver)."""
        return self.error

    def pid(self) -> int:
        return os.getpid()

    def translate(self, key, data: bytes, part: int, parts: int, progress=None) -> dict:
        """Part ``part`` of ``parts`` of the bucket whose text is ``data``: ``{"key", "lines", "texts", "stats",
        "score_total"}``, lines as indices in the bucket, in increasing order (``stats``: each line's
        ``Record.plain()``, or None); ``key`` is handed back as given
        and names the part to ``progress`` (a ``progress.Progress`` actor, or None)."""
        if self.error is not None:
            raise self.error
        if progress is not None:
            progress.start.remote(key)
        with tempfile.TemporaryDirectory(prefix="onmt-optimal-worker-") as tmp:
            src = os.path.join(tmp, "src")
            with open(src, "wb") as f:
                f.write(data)
            return self._translate(key, src, data, part, parts, progress)

    def _translate(self, key, src: str, data: bytes, part: int, parts: int, progress) -> dict:
        from onmt.constants import CorpusTask
        from onmt.inputters.dynamic_iterator import build_dynamic_dataset_iter

        opt, engine = self.opt, self.engine
        opt.src = src
        infer_iter = build_dynamic_dataset_iter(opt, engine.transforms_cls, engine.vocabs, task=CorpusTask.INFER,
                                                device_id=engine.device_id)
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        if infer_iter.bucket_size < lines:
            raise RuntimeError(f"OpenNMT-py's inference bucket is {infer_iter.bucket_size} lines, not the "
                               f"{lines} of a part (onmt_optimal/distributed/plan.py BUCKET)")
        selected = _Part(infer_iter, part, parts)
        sink = _Sink()
        translator = engine.translator
        # OpenNMT-py's translator writes to its ``out_file``, which InferenceEnginePY set when it built it
        translator.out_file = sink
        added = None if progress is None else (lambda n: progress.add.remote(key, n))
        self._totals = (0.0, 0)
        with translator.decoding(self._search, progress=added):
            translator._translate(selected, infer_iter.transforms, opt.attn_debug, opt.align_debug)
        indices = sorted(selected.indices)
        if len(indices) != len(sink.texts):
            raise RuntimeError(f"{len(sink.texts)} translations written for {len(indices)} sentences")
        stats = None
        if translator._stats:
            by_line = {key[1]: record for key, record in translator._stats.items()}
            stats = [by_line[i].plain() for i in indices]  # plain data across Ray (``Record.plain``)
        return {"key": key, "lines": indices, "texts": sink.texts, "stats": stats, "score_total": self._totals[0]}


class _Part:
    """``infer_iter`` yielding only the batches of one part; it records their sentences' bucket indices.

    Any other attribute (``bucket_size``, ``transforms``) is ``infer_iter``'s."""

    def __init__(self, infer_iter, part: int, parts: int):
        self._inner, self._part, self._parts = infer_iter, part, parts
        self.indices: list[int] = []

    def __iter__(self):
        for k, (batch, bucket_idx) in enumerate(self._inner):
            if in_part(k, self._part, self._parts):
                self.indices.extend(int(i) for i in batch["ind_in_bucket"])
                yield batch, bucket_idx

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Sink:
    """Stands for ``-output``: OpenNMT-py writes each sentence's lines in one ``write``, in input order."""

    def __init__(self):
        self.texts: list[str] = []

    def write(self, text: str) -> None:
        self.texts.append(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass
