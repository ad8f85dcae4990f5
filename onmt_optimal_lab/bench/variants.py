"""The one factory of the search variants that the measuring tools compare, by name.

A name is ``stock`` (OpenNMT-py's own beam search, the translator's stock path) or the name of a ``-stopping``
rule (``default``, ``optimal``, ...) on raw log-probability, followed by any of these suffixes, in this order:

* ``+r``: scored with the bounded length reward (``-length_reward R -length_ratio RHO``; R and RHO as given);
* ``+prune``: the dead rows skipped (``-prune_dead``, ``search.dead``), where the search and the decode allow;
* ``-host``: the search's bookkeeping on the host, fed one packed transfer a step (``host="cpu"``), or
  ``-device``: next to the model (``host=None``); a name with neither leaves it where ``AUTO`` puts it, on the
  host next to a CUDA model and next to the model otherwise;
* ``-core``: through the search core even for a beam of one item, where the others run the toolkit's own beam
  search of one item and score its answer (``search.beam_of_one``).

Statistics stay in memory (the translator's ``_stats``); nothing is written.
"""
from __future__ import annotations

from onmt_optimal.options import Options
from onmt_optimal.search.transfer import AUTO
from onmt_optimal.search.registry import STOPPING_RULES, opennmt_score, rules

__all__ = ["VARIANTS", "search"]

#: the variants every benchmark configuration decodes (``default`` is stock's rule under our bookkeeping)
VARIANTS = ["stock", "default", "optimal", "optimal+r", "optimal+prune"]
#: ``-host`` / ``-device``: ``Options.host``
PLACES = {"-host": "cpu", "-device": None}


def search(name: str, reward: float = 0.0, ratio: float | None = None) -> Options:
    """The ``Options`` of the variant ``name`` (``+r``: with reward ``reward`` and length ratio ``ratio``).
    An unknown name raises ``ValueError`` naming the stopping rules."""
    if name == "stock":
        return Options(rules=())
    stopping, host, core = name, AUTO, name.endswith("-core")
    stopping = stopping.removesuffix("-core")
    for suffix, place in PLACES.items():
        if stopping.endswith(suffix):
            stopping, host = stopping.removesuffix(suffix), place
    pruned = stopping.endswith("+prune")
    stopping = stopping.removesuffix("+prune")
    bounded = stopping.endswith("+r")
    stopping = stopping.removesuffix("+r")
    if stopping not in STOPPING_RULES:
        raise ValueError(f"unknown variant {name!r}: stock, or a stopping rule ({', '.join(STOPPING_RULES)}) "
                         "with +r, +prune, -host, -device or -core after it")
    ratio = ratio if bounded else None
    return Options(rules=rules(stopping, lambda: opennmt_score(ratio=ratio), length_reward=reward if bounded else 0.0,
                               length_ratio=ratio), host=host, beam_of_one=not core,
                   prune_dead=pruned)
