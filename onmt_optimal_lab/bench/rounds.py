"""One round of the benchmark: every variant decodes the same source through OpenNMT-py's pipeline, timed
(``run_round``) or counted (``count_round``: work per decoder call, ``onmt_optimal_lab.bench.profiling``)."""
from __future__ import annotations

import sys

from tqdm import tqdm

from onmt_optimal_lab.bench.timers import PartTimer
from onmt_optimal_lab.bench.profiling import count

# per-call counts kept in each row (``onmt_optimal_lab.bench.profiling.OpCounts.per_call``), with their ratio to stock
COUNTS = ("aten_ops", "kernels", "dtoh", "syncs")


def run_round(session, timer, parts, src, beam, batch, searches, sync, offset=0, order="interleaved"):
    """Decode ``src`` once through OpenNMT-py's pipeline, every batch with each variant in turn (``order``
    ``"block"``: the whole of ``src`` with one variant, then with the next, as a user decodes a file; the
    variants' order rotates from round to round).

    ``translate_batch`` runs the batch once per variant, in an order that rotates from batch to batch, so that
    every variant sees the machine in the same state (timing drift on a shared machine is seconds long).
    Reading, transforms, batching and writing happen once per batch and are not timed. With batches of more
    than one sentence, an untimed decode first warms the caches: a pass then holds only a few batches, which
    cannot spread the first decode's cold-cache cost evenly over the variants. Returns, per variant:
    decode seconds, forward seconds, the parts of the rest, the 1-best token ids and the statistics."""
    translator = session.translator
    translator.beam_size = beam
    session.opt.batch_size = batch
    session.engine.opt.batch_size = batch
    inner = translator.translate_batch
    out = {v: {"decode": 0.0, "forward": 0.0, "split": dict.fromkeys(PartTimer.PARTS, 0.0), "preds": [],
               "stats": {}} for v in searches}
    count = [offset]
    names = list(searches)
    # one pass of infer() per entry: None decodes each batch with every variant; [v] with variant v alone
    passes = [None]
    if order == "block":
        k = offset % len(names)
        passes = [[v] for v in names[k:] + names[:k]]
    current = [None]  # the entry of passes being decoded

    def translate_batch(batch_, attn_debug):
        block = current[0]
        k = count[0] % len(names)
        count[0] += 1
        results = {}
        if batch > 1 and block is None:  # warm-up, untimed
            translator.search = searches[names[k]]
            inner(batch_, attn_debug)
        for v in block or names[k:] + names[:k]:
            translator.search = searches[v]
            translator._stats = {}
            timer.seconds = 0.0
            parts.reset()
            sync()
            start = timer.clock()
            results[v] = inner(batch_, attn_debug)
            sync()
            out[v]["decode"] += timer.clock() - start
            out[v]["forward"] += timer.seconds
            for part, seconds in parts.split().items():
                out[v]["split"][part] += seconds
            out[v]["stats"].update(translator._stats)
            out[v]["preds"] += [[p.tolist() for p in preds] for preds in results[v]["predictions"]]
        return results[block[0] if block else names[0]]

    translator.translate_batch = translate_batch
    try:
        for entry in passes:
            current[0] = entry
            session.infer(src)
    finally:
        del translator.translate_batch
    return out


def count_round(session, timer, parts, src, beam, batch, searches, cuda, progress=False):
    """Work per decoder call of each variant over one pass of ``src`` (``onmt_optimal_lab.bench.profiling.count``).

    Each variant decodes the whole of ``src`` through OpenNMT-py's pipeline under one profiler: reading,
    transforms, batching and writing are counted too, the same for every variant. On a GPU, a first untimed pass per variant keeps one-time initialisations
    (a library's first call) out of the counts; aten ops on the host need none. The timers' synchronizations
    are switched off meanwhile (they are the benchmark's, not the search's). Returns ``{variant: OpCounts}``."""
    translator = session.translator
    translator.beam_size = beam
    session.opt.batch_size = batch
    session.engine.opt.batch_size = batch
    totals = {}
    syncs = timer.sync, parts.sync
    timer.sync = parts.sync = lambda: None
    try:
        for v in tqdm(searches, desc=f"counting batch {batch} b={beam}", leave=False, file=sys.stderr,
                      disable=not progress):
            translator.search = searches[v]
            translator._stats = {}
            if cuda:
                session.infer(src)
            totals[v] = count(lambda: session.infer(src), translator, cuda=cuda)
    finally:
        timer.sync, parts.sync = syncs
    return totals


def count_fields(totals) -> dict[str, dict]:
    """Row fields per variant: per-call counts (None where the device has none), their ratio to stock's, the
    decoder calls counted and the commonest synchronizing source lines."""
    stock = totals["stock"].per_call()
    fields = {}
    for v, counts in totals.items():
        per_call = counts.per_call()
        row = {"decoder_calls": per_call["decoder_calls"]}
        for name in COUNTS:
            row[f"{name}_per_call"] = per_call[name]
            ok = per_call[name] is not None and stock[name]
            row[f"{name}_vs_stock"] = per_call[name] / stock[name] if ok else None
        row["sync_sites"] = counts.sync_sites.most_common(8) if counts.syncs is not None else None
        fields[v] = row
    return fields

