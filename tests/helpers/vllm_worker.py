"""Many vLLM beam searches in one Python process (vLLM's environment), as ``generate_worker`` does for
transformers, for the golden check (``golden_check``): each run is a command line

    --model DIR --src FILE --output FILE --stats FILE --settings JSON

that decodes the lines of ``--src`` as prompts ``line =`` (``toy_vllm``'s task, tokenized by the model's own
tokenizer) with ``optimal_beam_search(llm, prompts, BeamSearchParams(...), **options)``, or vLLM's own
``LLM.beam_search`` where ``settings["custom"]`` is false. ``settings`` holds ``BeamSearchParams``' fields
(``beam_width``, ``max_tokens``, ``length_penalty``) and the plugin's options (``stopping``, ``length_reward``,
``length_ratio``, ``bp_norm``). It writes, per prompt, one JSON line of its sequences (token ids, text,
``cum_logprob`` with ``repr``, which round-trips a float exactly) to ``--output``, and each prompt's ``record``
(every field, ``repr`` for what JSON lacks) to ``--stats``. A ``ValueError`` or ``TypeError`` (a refused
setting) is one ``error: ...`` line on stderr and exit status 1; outputs are written only after every prompt
decoded.

One engine a process: ``LLM(model=DIR)`` as the vLLM tests make it (float32, eager, a small share of host
memory), started before the first run's output is redirected, so that the engine core process (spawned, it
keeps the file descriptors it started with) and vLLM's start-up messages write to the worker's log, never into
a run's. vLLM's logger is set to errors only (``VLLM_LOGGING_LEVEL``): its lines carry time stamps and source
lines. The client, the per-run redirection of file descriptors 1 and 2 and the exit-status rules are
``translate_worker``'s (``Worker``, ``_run_one``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

if __package__:  # imported by the check: ``helpers.vllm_worker``
    from . import translate_worker
else:  # the worker process runs this file: its folder, ``tests/helpers``, is the first entry of sys.path
    import translate_worker

PARAMS = ("beam_width", "max_tokens", "length_penalty")


class Worker(translate_worker.Worker):
    """vLLM's ``LLM.beam_search`` and ``optimal_beam_search`` in this file's process."""

    script = Path(__file__).resolve()


_ENGINES: dict = {}


def _engine(path: str):
    if path not in _ENGINES:
        from vllm import LLM

        _ENGINES[path] = LLM(model=path, dtype="float32", enforce_eager=True, max_model_len=64,
                             gpu_memory_utilization=0.1)
    return _ENGINES[path]


def _model_of(argv: list[str]) -> str | None:
    return argv[argv.index("--model") + 1] if "--model" in argv[:-1] else None


def _decode(llm, lines: list[str], settings: dict) -> tuple[list[dict], list]:
    from vllm.sampling_params import BeamSearchParams

    settings = dict(settings)
    custom = settings.pop("custom", True)
    params = BeamSearchParams(**{name: settings.pop(name) for name in PARAMS if name in settings})
    tokenizer = llm.get_tokenizer()
    prompts = [{"prompt_token_ids": tokenizer(f"{line} =").input_ids} for line in lines]
    if custom:
        from onmt_optimal.vllm import optimal_beam_search

        outputs = optimal_beam_search(llm, prompts, params, **settings)
    else:
        outputs = llm.beam_search(prompts, params)
    answers = [{"tokens": [s.tokens for s in out.sequences], "text": [s.text for s in out.sequences],
                "cum_logprob": [repr(s.cum_logprob) for s in out.sequences]} for out in outputs]
    # every field of the record, but an optional statistic the run did not ask for (``rows_skipped`` None without
    # ``prune_dead``), which the statistics file leaves out too (``Record.stats``)
    records = [{"line": i, **{k: v for k, v in dataclasses.asdict(out.record).items()
                              if not (k == "rows_skipped" and v is None)}}
               for i, out in enumerate(outputs, 1) if getattr(out, "record", None) is not None]
    return answers, records


def main() -> None:
    parser = argparse.ArgumentParser(prog="vllm-beam-search")
    for name in ("--model", "--src", "--output", "--stats", "--settings"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(sys.argv[1:])
    lines = Path(args.src).read_text().splitlines()
    try:
        answers, records = _decode(_engine(args.model), lines, json.loads(args.settings))
    except (ValueError, TypeError) as exc:
        sys.exit(f"error: {exc}")
    Path(args.output).write_text("".join(json.dumps(a) + "\n" for a in answers))
    Path(args.stats).write_text("".join(json.dumps(r, default=repr) + "\n" for r in records))


def serve() -> None:
    answers = translate_worker.answers_channel()

    def start_engine(job) -> None:  # with the worker's own stdout and stderr (module docstring)
        model = _model_of(job["argv"])
        if model is not None:
            _engine(model)

    translate_worker.run_jobs(main, answers, before=start_engine)
    for llm in _ENGINES.values():
        llm.llm_engine.engine_core.shutdown()


if __name__ == "__main__":
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    serve()
