"""The benchmark's clocks and timers: the model's forward pass, and the parts of the search outside it.

``CLOCKS`` (``--clock``): what a decode's time is. ``wall``: elapsed time; on a shared or virtual machine it also
counts the moments the core is taken away (other jobs, the hypervisor's steal), which land on one variant's decode
and not another's. ``cpu``: the decoding thread's CPU time, with one torch thread the decode's own work alone. A
GPU's work is not the thread's: wall only there.
"""
from __future__ import annotations

import time

CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


class ForwardTimer:
    """Accumulates the time spent in the model's forward pass (encoder; decoder step + generator + softmax)."""

    def __init__(self, translator, sync, clock=time.perf_counter):
        self.seconds = 0.0
        self.sync = sync
        self.clock = clock  # (``CLOCKS``; ``run_round`` times whole decodes with it too)
        for name in ("_run_encoder", "_decode_and_generate"):
            inner = getattr(translator, name)
            setattr(translator, name, self._timed(inner))

    def _timed(self, fn):
        def wrapper(*args, **kwargs):
            self.sync()
            start = self.clock()
            out = fn(*args, **kwargs)
            self.sync()
            self.seconds += self.clock() - start
            return out

        return wrapper


class PartTimer:
    """Splits the time outside the forward pass: the top-k (``_pick``), the rest of each step (``advance``), the
    examples leaving the batch (``update_finished``), the decoder's state following the beam's back-pointers
    (``map_state``, called by OpenNMT-py's decode loop every step); what is left is the rest of that loop
    (encoder-output reordering, results). Wraps the stock and our beam search classes alike."""

    PARTS = ("select", "step", "finish", "reorder")

    def __init__(self, sync, decoder, clock=time.perf_counter):
        from onmt.translate.beam_search import BeamSearchBase

        self.seconds = dict.fromkeys(self.PARTS, 0.0)
        self.sync = sync
        self.clock = clock
        from onmt_optimal.adapter.beam_search import LineageBeamSearch
        from onmt_optimal.opennmt.beam_search import CertifiedBeamSearch
        from onmt_optimal.search.top_k import TopK

        # ours: advance and update_finished live in adapter.beam_search.LineageBeamSearch, the toolkit step in
        # the toolkit's adapter
        for cls in (BeamSearchBase, LineageBeamSearch, CertifiedBeamSearch, TopK):
            for name, part in (("_pick", "select"), ("__call__", "select"), ("advance", "step"),
                               ("update_finished", "finish")):
                if name in cls.__dict__:  # a later PartTimer (next model) replaces the earlier one's wrapper
                    fn = cls.__dict__[name]
                    setattr(cls, name, self._timed(getattr(fn, "_bench_inner", fn), part))
        decoder.map_state = self._timed(decoder.map_state, "reorder")

    def reset(self):
        self.seconds = dict.fromkeys(self.PARTS, 0.0)

    def _timed(self, fn, part):
        timer = self

        def wrapper(*args, **kwargs):
            timer.sync()
            start = timer.clock()
            out = fn(*args, **kwargs)
            timer.sync()
            timer.seconds[part] += timer.clock() - start
            return out

        wrapper._bench_inner = fn
        return wrapper

    def split(self):
        """Seconds per part, the top-k taken out of the step that calls it."""
        out = dict(self.seconds)
        out["step"] -= out["select"]
        return out
