"""A whole benchmark run: for each model, its dev set cleaned as its training data was, the decoding measure of
every configuration (``decoding``) and, on the first model, the sweep's (``sweep``)."""
from __future__ import annotations

import contextlib
import os
import platform
import sys
import tempfile
from pathlib import Path

import torch

from onmt_optimal_lab.bench import precision
from onmt_optimal_lab.bench.decoding import bench_decoding
from onmt_optimal_lab.bench.sweep import bench_sweep
from onmt_optimal_lab.bench.timers import CLOCKS, ForwardTimer, PartTimer
from onmt_optimal.tools.length_ratio import estimate_with_model
from onmt_optimal.opennmt.session import Session
from onmt_optimal.tools.text import clean_file

#: the sweep's grid: every beam size 1..20 at every reward of the paper's Table 2
SWEEP_BEAMS = list(range(1, 21))
SWEEP_REWARDS = [0, 0.5, 1, 1.1, 1.2, 1.3, 1.4, 1.5]


def device_names(gpu: int, threads: int) -> tuple[str, str]:
    """(the device decoded on, the machine) as the report names them."""
    cuda = gpu >= 0
    device = torch.cuda.get_device_name(gpu) if cuda else f"CPU ({threads} thread{'s' if threads > 1 else ''})"
    machine = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    return device, machine + (f", CUDA {torch.version.cuda}" if cuda else "")


def measure(models: list[dict], args, beams: list[int], batches: list[int], work_root: Path,
            on_progress=None) -> dict:
    """The run's ``{"meta", "rows", "sweep"}``. ``models``: ``models.resolve_models``; ``args``: the command
    line's options (``gpu`` and ``clock`` already chosen); each model's cleaned data goes to a folder of its own
    under ``work_root`` (two runs at once must not rewrite each other's source files mid-decode), removed
    however the run ends. ``on_progress``: called with the run so far (its meta marked ``partial``) after each
    configuration, so that a run ended by a time limit leaves what it measured."""
    cuda = args.gpu >= 0
    clock = CLOCKS[args.clock]
    device, machine = device_names(args.gpu, args.threads)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    rows, sweep, metas = [], None, []
    with contextlib.ExitStack() as scratch:
        for m, model in enumerate(models):
            work_root.mkdir(parents=True, exist_ok=True)
            work = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix=f"{model['name']}-",
                                                                          dir=work_root)))
            clean_src = clean_file(model["src"], work / "dev.src", model["unescape_moses"])
            clean_refs = [clean_file(r, work / f"dev.ref{i}", model["unescape_moses"])
                          for i, r in enumerate(model["refs"])]
            lines = clean_src.read_text(encoding="utf-8").splitlines()
            src = work / "bench.src"
            # each batch is decoded once per variant: an empty line would be answered only once (empty_lines.take)
            kept = [line for line in lines if line.strip()][: args.lines]
            src.write_text("\n".join(kept) + "\n", encoding="utf-8")
            session = Session(["-config", model["config"], "-gpu", str(args.gpu),
                               *precision.session_args(args.precision)])
            precision.quantize(session, args.precision)
            timer = ForwardTimer(session.translator, sync, clock)
            parts = PartTimer(sync, session.translator.model.decoder, clock)
            refs = [r.read_text(encoding="utf-8").splitlines() for r in clean_refs]
            ratio = estimate_with_model(session, lines, refs).corpus
            if args.progress:
                print(f"model {model['name']} ({model['config']}), {device}", file=sys.stderr)
            here = {"name": model["name"], "config": model["config"], "src": model["src"], "lines": len(kept),
                    "ratio": ratio}
            for config_rows in bench_decoding(session, timer, parts, src, len(kept), beams, batches, args.rounds,
                                              args.reward, ratio, sync, args.min_seconds, cuda=cuda,
                                              count=args.count or args.count_only, time_it=not args.count_only,
                                              progress=args.progress, placement_variant=args.placement_variant,
                                              order=args.order):
                rows.extend({"model": model["name"], **row} for row in config_rows)
                if on_progress is not None:
                    on_progress({"meta": dict(_meta(metas + [here], args, device, machine, sweep), partial=True),
                                 "rows": rows, "sweep": sweep})
            if m == 0 and args.sweep_lines > 0 and not args.count_only:
                sweep_src = work / "sweep.src"
                sweep_src.write_text("\n".join(lines[: args.sweep_lines]) + "\n", encoding="utf-8")
                sweep = bench_sweep(session, sweep_src, [r[: args.sweep_lines] for r in refs], SWEEP_BEAMS,
                                    SWEEP_REWARDS, ratio, progress=args.progress, clock=clock)
                sweep["model"] = model["name"]
                print(f"sweep: {sweep}")
            metas.append(here)
            del session, timer, parts
    return {"meta": _meta(metas, args, device, machine, sweep), "rows": rows, "sweep": sweep}


def _meta(metas: list[dict], args, device: str, machine: str, sweep) -> dict:
    """The run's description: the models so far, the options, where it ran."""
    first = metas[0]
    return {"device": device, "machine": machine, "models": metas,
            "config": first["config"], "lines": first["lines"], "rounds": args.rounds,
            "min_seconds": args.min_seconds, "reward": args.reward, "ratio": first["ratio"],
            "sweep_lines": args.sweep_lines if sweep else 0, "count_only": args.count_only, "order": args.order,
            "clock": args.clock, "precision": args.precision}
