"""A pruned decode (``-prune_dead``) against the unpruned one, as both toolkit tiers compare them: the outputs
byte for byte, and every record's field equal but those the pruning may change (``completed``, and with it,
rarely, ``stop_reason``), which are counted; the pruned records end with ``rows_skipped``, summed."""
from __future__ import annotations


def compare(hyp: bytes, stats: list, pruned_hyp: bytes, pruned_stats: list, label: str) -> tuple[dict, int]:
    """``(differ, skipped)``: per field that may differ, the lines whose record differs; the rows skipped."""
    assert pruned_hyp == hyp
    differ = {"completed": 0, "stop_reason": 0}
    skipped = 0
    for a, b in zip(stats, pruned_stats, strict=True):
        assert "rows_skipped" not in a and list(b) == [*a, "rows_skipped"]
        skipped += b["rows_skipped"]
        for key in a:
            if key in differ:
                differ[key] += a[key] != b[key]
            else:
                assert a[key] == b[key], (key, a, b)
    print(f"{label}: lines of {len(stats)} whose record differs: {differ}; rows skipped {skipped}")
    return differ, skipped
