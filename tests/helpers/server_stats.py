"""The statistics file a toolkit's server appends to, checked alike for OpenNMT-py's ``onmt_server`` and eole's
``eole serve``: each request's records under its id (the client's ``X-Request-Id`` or one the server makes),
after the earlier records left as they were, and concurrent requests' records each in one run.

``ask(lines, headers)`` is the tier's request of one model with our options and a ``stats_file``: it returns
``http_server.Answer``.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def records(path: Path) -> list[dict]:
    """The statistics file's records, none where it is not there yet."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def size(path: Path) -> int:
    """The statistics file's size in bytes, 0 where it is not there."""
    return path.stat().st_size if path.exists() else 0


def flags(opt: dict) -> list[str]:
    """A model's options as the command line's flags (``{"beam_size": 3}``: ``-beam_size 3``)."""
    return [arg for name, value in opt.items() for arg in (f"-{name}", str(value))]


def check_appended_per_request(stats: Path, ask, inputs: list) -> None:
    """A request with ``X-Request-Id`` is answered under it, one without gets a new 32-character id; each one's
    records are numbered from line 1 under its id, after the earlier records left as they were."""
    first = ask(inputs[:2], {"X-Request-Id": "client-7"})
    assert first.headers["x-request-id"] == "client-7"
    kept = stats.read_bytes()
    second = ask(inputs[2:5], None)
    request = second.headers["x-request-id"]
    assert len(request) == 32 and request != "client-7"
    assert stats.read_bytes().startswith(kept)  # the earlier records as they were
    by_request = {}
    for record in records(stats):
        by_request.setdefault(record["request"], []).append(record["line"])
    assert by_request["client-7"] == [1, 2] and by_request[request] == [1, 2, 3]


def check_concurrent_records_whole(stats: Path, ask, inputs: list) -> None:
    """Six requests at once (1 to 6 lines, 8 client threads): each is answered under its own id, and its records
    stand in the file in one run, in its order, after the earlier records left as they were."""
    kept = stats.read_bytes() if stats.exists() else b""
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda k: ask(inputs[:k], {"X-Request-Id": f"c{k}"}), range(1, 7)))
    assert [a.headers["x-request-id"] for a in answers] == [f"c{k}" for k in range(1, 7)]
    assert stats.read_bytes().startswith(kept)
    new = [json.loads(line) for line in stats.read_bytes()[len(kept):].decode().splitlines()]
    runs = [(r["request"], r["line"]) for r in new]
    for k in range(1, 7):  # each request's records in one run, in its order
        start = runs.index((f"c{k}", 1))
        assert runs[start:start + k] == [(f"c{k}", n) for n in range(1, k + 1)]
    assert len(runs) == sum(range(1, 7))
