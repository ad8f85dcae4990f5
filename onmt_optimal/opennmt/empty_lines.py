"""Empty source lines get an empty translation instead of vanishing.

Stock OpenNMT-py drops an example whose source is empty after transforms (``text_utils.process``), so the
output file silently loses a line and every later translation is misaligned with its source. At inference we
keep such an example with a one-token placeholder source, remember its line, and the translator answers it
with an empty line (score 0, stop reason ``empty_source``). Training and validation are untouched.
"""
from __future__ import annotations

from onmt.constants import CorpusTask, DefaultTokens
from onmt.inputters import text_utils

PLACEHOLDER = DefaultTokens.UNK
_pending: set = set()


def forget() -> None:
    """Drop every mark: a translation that ended early (an error mid-input) must not leave marks for the next
    one in a long-lived process (``Session``, the sweep). Called as each translation begins."""
    _pending.clear()


def mark(key) -> None:
    _pending.add(key)


def take(key) -> bool:
    """True (once) if the example at ``key = (corpus id, line)`` stands for an empty source line."""
    if key in _pending:
        _pending.discard(key)
        return True
    return False


def process_keeping_empty(task, bucket, **kwargs):
    """``text_utils.process`` that, at inference, keeps empty sources as placeholders, in input order."""
    if task != CorpusTask.INFER:
        return text_utils.process(task, bucket, **kwargs)
    keys = [(ex["cid"], ex["cid_line_number"]) for ex, _, _ in bucket]
    originals = {key: dict(ex) for key, (ex, _, _) in zip(keys, bucket)}
    processed = text_utils.process(task, bucket, **kwargs) or []
    by_key = {(ex["cid"], ex["cid_line_number"]): ex for ex in processed}
    out = []
    for key in keys:
        if key not in by_key:
            ex = originals[key]
            n_feats = len(ex.get("src_feats") or [])
            ex.pop("src_feats", None)
            ex["src"] = {"src": PLACEHOLDER}
            if n_feats:
                ex["src"]["feats"] = [PLACEHOLDER] * n_feats
            ex["tgt"] = None
            ex.pop("align", None)
            mark(key)
            by_key[key] = ex
        out.append(by_key[key])
    return out or None

