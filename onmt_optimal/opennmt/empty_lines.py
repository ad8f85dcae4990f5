"""Empty source lines get an empty translation instead of vanishing.

Stock OpenNMT-py drops an example whose source is empty after transforms (``text_utils.process``), so the
output file silently loses a line and every later translation is misaligned with its source. At inference we
keep such an example with a one-token placeholder source, mark its line on the translation's ``EmptyLines``,
and the translator answers it with an empty line (score 0, stop reason ``empty_source``). The translator runs
each translation inside ``keeping()``, whose ``EmptyLines`` is that translation's own, so a translation that
ended early leaves no mark for the next one in a long-lived process (``Session``, the sweep, a Ray worker).
Training and validation, and reading outside a translation, are untouched.
"""
from __future__ import annotations

from onmt.constants import CorpusTask, DefaultTokens
from onmt.inputters import text_utils

from onmt_optimal.adapter.empty_lines import reading

PLACEHOLDER = DefaultTokens.UNK


def process_keeping_empty(task, bucket, **kwargs):
    """``text_utils.process`` that, at inference, keeps empty sources as placeholders, in input order."""
    run = reading()
    if run is None or task != CorpusTask.INFER:
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
            run.mark(key)
            by_key[key] = ex
        out.append(by_key[key])
    return out or None

