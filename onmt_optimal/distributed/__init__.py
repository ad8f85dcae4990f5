"""Many workers with Ray: ``onmt_translate -ray_workers N`` and ``python -m onmt_optimal sweep --ray-workers N``.

What one process would print, byte for byte, from N actors:

* ``plan``: the source in OpenNMT-py's own inference buckets (16,384 lines, ``DynamicDatasetIter.from_opt``),
  each bucket cut into parts; part p of P is every P-th batch, in the order one process makes them;
* ``worker``: the actor that loads the model once and decodes a part: it reads the whole bucket through
  OpenNMT-py's pipeline (transforms, length sort, batching: the very batches of one process) and translates
  only its own batches, so every sentence meets the model in the batch it would meet in one process;
* ``translate``: the driver: connects to (or starts) Ray, hands out the parts, puts every bucket back in
  input order, writes ``-output`` and ``-stats_file`` and the closing report, and shows the progress bar;
* ``cluster``: starting or joining Ray, quietly: ``local`` a Ray of this run's own, on loopback, its files in a
  temporary directory, ``capacity`` the workers this machine holds, ``join`` a cluster within a bounded wait;
  ``progress``: sentences done across the workers;
* ``sweep``: the r x b sweep's decodes (one per beam size and beam kind) spread over actors;
* ``options``: ``-ray_workers`` and its companions, their validation, and what to install when Ray is missing.

Faults: actors restart (``max_restarts``) and Ray re-runs the method call that was under way
(``max_task_retries``); a part is a pure function of its bucket and its index and its result goes only to the
driver, which writes nothing of a bucket before all its parts are back, so a redone part loses, duplicates or
reorders no line.
"""
