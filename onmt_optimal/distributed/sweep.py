"""The r x b sweep on Ray: its decodes (one per beam size and beam kind, ``onmt_optimal.tools.sweep``) spread over
actors, each holding one session of either toolkit (``onmt_optimal.tools.session.load``: the model, loaded once).

A decode is the whole dev set at one beam size for one group of decoders sharing a beam; its records are a
function of the model, the source, the beam size and the rules, so an actor restarted mid-decode (Ray's
``max_restarts`` / ``max_task_retries``) gives the same records, and the driver puts them in the sweep's
order. The source travels as text (the actors may run on other machines); each actor writes it to a
file of its own. Actors use the driver's torch thread count, as ``translate`` does, so scores are one
process's to the last bit.
"""
from __future__ import annotations

import os
import tempfile

from onmt_optimal.distributed.capacity import file_bytes
from onmt_optimal.distributed.cluster import Cluster, worker_error

RESTARTS = 3


class SweepWorker:
    def __init__(self, translate_args: list[str], cwd: str | None, on_gpu: bool, threads: int):
        self.error = None
        try:
            import torch

            torch.set_num_threads(threads)
            if cwd and os.path.isdir(cwd):
                os.chdir(cwd)
            from onmt_optimal.tools import session
            from onmt_optimal.eole.session import is_eole

            # either toolkit's (``session.load``); an OpenNMT-py GPU worker decodes on the one Ray gives it
            gpu = ["-gpu", "0"] if on_gpu and not is_eole(list(translate_args)) else []
            self.session = session.load(list(translate_args) + gpu)
        except Exception as err:  # reported by ready(), in the driver
            self.error = err

    def ready(self):
        return self.error

    def ratio(self, src_lines: list[str], refs: list[list[str]]) -> float:
        from onmt_optimal.tools.length_ratio import estimate_with_model

        return estimate_with_model(self.session, src_lines, refs).corpus

    def decode(self, key, text: str, beam: int, decoders: list, ratio: float) -> tuple:
        """``(key, records)``: ``records[line][k]`` is decoder ``k``'s answer (``Session.decode``)."""
        with tempfile.TemporaryDirectory(prefix="onmt-optimal-sweep-") as tmp:
            src = os.path.join(tmp, "src")
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            return key, self.session.decode(src, beam, [d.rule(ratio) for d in decoders])


def model_paths(translate_args: list[str]) -> list[str]:
    """The model files ``translate_args`` name (``-model``, or a ``-config`` YAML's ``model``), as OpenNMT-py
    parses them; none where the arguments do not parse (the workers then say why)."""

    def refuse(message):
        raise ValueError(message)

    try:
        from onmt.opts import translate_opts
        from onmt.utils.parse import ArgumentParser

        from onmt_optimal.opennmt.options import Settings

        parser = ArgumentParser(description="onmt-optimal sweep")
        translate_opts(parser)
        parser.error = refuse  # quietly: the workers report bad arguments
        opt, _ = parser.parse_known_args(list(translate_args) + ["-src", os.devnull])
        return list(Settings.read(opt).models or [])
    except Exception:
        return []


def decode_many(translate_args: list[str], src_lines: list[str], refs: list[list[str]], jobs: list,
                ratio: float | None, workers: int, address: str | None = None, gpus_per_worker: float = 0.0,
                progress=None, timeout: float | None = None) -> tuple[dict, float]:
    """Run ``jobs`` (``(key, beam, decoders)``) on ``workers`` actors: ``({key: records}, ratio)``; ``ratio``
    None is estimated first on ``src_lines``/``refs`` by one actor. ``progress`` is called once per decode;
    ``timeout``: seconds to wait for the cluster at ``address`` (``cluster.Cluster``)."""
    import torch

    from onmt_optimal.errors import OptionError

    threads = max(1, torch.get_num_threads())
    cpus = 1 if gpus_per_worker > 0 else threads
    text = "".join(line + "\n" for line in src_lines)
    with Cluster(address, workers, gpus_per_worker, cpus, model_bytes=file_bytes(model_paths(translate_args)),
                 timeout=timeout) as ray:
        from ray.util import ActorPool

        remote = ray.remote(SweepWorker)
        actors = [remote.options(num_cpus=cpus, num_gpus=gpus_per_worker, max_restarts=RESTARTS,
                                 max_task_retries=RESTARTS).remote(translate_args, os.getcwd(),
                                                                   gpus_per_worker > 0, threads)
                  for _ in range(workers)]
        try:
            errors = [e for e in ray.get([a.ready.remote() for a in actors]) if e is not None]
            if errors:
                raise errors[0]
            if ratio is None:
                ratio = ray.get(actors[0].ratio.remote(src_lines, refs))
            if ratio is None:
                raise OptionError("no length ratio could be estimated on --src/--refs: give --ratio")
            text_ref = ray.put(text)
            pool = ActorPool(actors)
            out = {}
            for key, beam, decoders in jobs:
                pool.submit(lambda a, v: a.decode.remote(v[0], text_ref, v[1], v[2], ratio), (key, beam, decoders))
            while pool.has_next():
                key, records = pool.get_next_unordered()
                out[key] = records
                if progress is not None:
                    progress(1)
            return out, ratio
        except ray.exceptions.RayError as err:
            raise worker_error(err) from err
        finally:
            for actor in actors:
                ray.kill(actor)
