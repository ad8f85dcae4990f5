"""The source as OpenNMT-py 3.5.1 reads it at inference, cut into work for several workers.

At inference OpenNMT-py reads ``-src`` as binary lines (``ParallelCorpus.load``: ``for line in file``, split on
b"\\n" only), groups them into buckets of ``BUCKET`` lines (``DynamicDatasetIter.from_opt``: ``bucket_size =
16384`` for ``CorpusTask.INFER``, whatever the options), sorts each bucket by source length and cuts it into
batches. Bucket k is therefore lines ``[k * BUCKET, (k + 1) * BUCKET)``, and a worker given exactly those lines
makes exactly the batches one process makes (the worker checks the bucket size it finds). Part p of P is the
batches whose index within the bucket is p modulo P: sorted by length, neighbouring batches cost about the
same, so the parts do too.

Invariants: ``buckets`` yields every line of the file once, in order, with its first line's index; ``merge``
puts the parts of one bucket back in input order and refuses a lost or doubled line.
"""
from __future__ import annotations

from dataclasses import dataclass

#: OpenNMT-py 3.5.1's inference bucket (onmt/inputters/dynamic_iterator.py, DynamicDatasetIter.from_opt)
BUCKET = 16384


@dataclass(frozen=True)
class Bucket:
    index: int
    first_line: int
    data: bytes
    lines: int


def buckets(path: str, size: int = BUCKET):
    """The file at ``path`` as consecutive ``Bucket``s of ``size`` lines (the last one may be shorter)."""
    with open(path, "rb") as f:
        index, first, chunk = 0, 0, []
        for line in f:
            chunk.append(line)
            if len(chunk) == size:
                yield Bucket(index, first, b"".join(chunk), len(chunk))
                index, first, chunk = index + 1, first + len(chunk), []
        if chunk:
            yield Bucket(index, first, b"".join(chunk), len(chunk))


def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def in_part(batch_index: int, part: int, parts: int) -> bool:
    """Whether the ``batch_index``-th batch of a bucket belongs to part ``part`` of ``parts``."""
    return batch_index % parts == part


def merge(lines: int, results: list[dict]) -> list[tuple[str, dict | None]]:
    """The parts of one bucket of ``lines`` lines as ``(output text, statistics record or None)`` per line,
    in input order. Each result has ``lines`` (indices within the bucket), ``texts`` and ``stats`` (records or
    None) in that order. Raises ``RuntimeError`` if a line is missing or comes twice."""
    out: list = [None] * lines
    for result in results:
        stats = result["stats"] or [None] * len(result["lines"])
        if not len(result["lines"]) == len(result["texts"]) == len(stats):
            raise RuntimeError("a part did not come back with as many lines, texts and records")
        for line, text, record in zip(result["lines"], result["texts"], stats):
            if not 0 <= line < lines or out[line] is not None:
                raise RuntimeError(f"line {line} of a bucket of {lines} came back twice or out of range")
            out[line] = (text, record)
    missing = [i for i, x in enumerate(out) if x is None]
    if missing:
        raise RuntimeError(f"{len(missing)} lines of a bucket of {lines} never came back (first: {missing[0]})")
    return out
