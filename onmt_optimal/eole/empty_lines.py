"""Empty source lines get an empty answer under the new options.

Stock eole reads an empty line as one empty token (``"".split(" ")``), which the vocabulary makes ``<unk>``, and
decodes it as a sentence; a transform that drops empty tokens (e.g. a subword tokenizer) leaves an empty source,
which ``transform_bucket`` then drops, so the output silently loses that line and every later line is misaligned.
Under the new options (``active``) each empty or blank source line is marked and kept (with a one-token ``<unk>``
placeholder where a transform emptied it), and the translator answers it with an empty line (score 0, stop
reason ``empty_source``). Without them nothing here runs: stock eole's behaviour, byte for byte.
"""
from __future__ import annotations

from eole.constants import CorpusTask, DefaultTokens
from eole.inputters import text_utils

#: set by the translator while it decodes with the new options
active = False
_pending: set = set()


def forget() -> None:
    """Drop every mark (called as each prediction run begins)."""
    _pending.clear()


def take(key) -> bool:
    """True (once) if the example at ``key = (corpus id, line)`` stands for an empty source line."""
    if key in _pending:
        _pending.discard(key)
        return True
    return False


def _blank(src) -> bool:
    if isinstance(src, dict):
        src = src.get("src")
    if isinstance(src, list):
        return not any(str(token).strip() for token in src)
    return src is None or not str(src).strip()


def transform_bucket_keeping_empty(task, bucket, *args, **kwargs):
    """``text_utils.transform_bucket`` that, at inference under the new options, keeps empty sources in place."""
    if not active or task != CorpusTask.INFER:
        return text_utils.transform_bucket(task, bucket, *args, **kwargs)
    keys = [(ex["cid"], ex["cid_line_number"]) for ex, _, _ in bucket]
    empty = {key for key, (ex, _, _) in zip(keys, bucket) if _blank(ex.get("src"))}
    originals = {key: dict(ex) for key, (ex, _, _) in zip(keys, bucket) if key in empty}
    processed = text_utils.transform_bucket(task, bucket, *args, **kwargs) or []
    by_key = {(ex["cid"], ex["cid_line_number"]): ex for ex in processed}
    out = []
    for key in keys:
        ex = by_key.get(key)
        if key in empty:
            if ex is None:
                ex = originals[key]
                ex["src"] = {"src": [DefaultTokens.UNK]}
                ex["tgt"] = None
                ex.setdefault("sco", 1)
            _pending.add(key)
        if ex is not None:
            out.append(ex)
    return out or None
