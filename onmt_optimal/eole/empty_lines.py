"""Empty source lines get an empty answer under the new options.

Stock eole reads an empty line as one empty token (``"".split(" ")``), which the vocabulary makes ``<unk>``, and
decodes it as a sentence; a transform that drops empty tokens (e.g. a subword tokenizer) leaves an empty source,
which ``transform_bucket`` then drops, so the output silently loses that line and every later line is misaligned.
Under the new options the translator runs each prediction inside ``keeping()``, whose ``EmptyLines`` is that run's:
while it runs, each empty or blank source line is marked on it and kept (with a one-token ``<unk>`` placeholder
where a transform emptied it), and the translator takes each mark back to answer that line with an empty line
(score 0, stop reason ``empty_source``). Outside such a run, or with ``keeping(False)``, nothing here runs: stock
eole's behaviour, byte for byte.
"""
from __future__ import annotations

from eole.constants import CorpusTask, DefaultTokens
from eole.inputters import text_utils

from onmt_optimal.adapter.empty_lines import reading


def _blank(src) -> bool:
    if isinstance(src, dict):
        src = src.get("src")
    if isinstance(src, list):
        return not any(str(token).strip() for token in src)
    return src is None or not str(src).strip()


def transform_bucket_keeping_empty(task, bucket, *args, **kwargs):
    """``text_utils.transform_bucket`` that, at inference inside ``keeping()``, keeps empty sources in place."""
    run = reading()
    if run is None or task != CorpusTask.INFER:
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
            run.mark(key)
        if ex is not None:
            out.append(ex)
    return out or None
