"""Many transformers ``generate`` calls in one Python process, as ``translate_worker`` does for
``onmt_translate``, for the golden check (``golden_check``): each run is a command line

    --model DIR --kind encoder_decoder|decoder_only --src FILE --output FILE --stats FILE --settings JSON

that loads a saved ``toy_hf`` model (once per process), decodes ``--src`` in batches of ``settings["batch"]``
with ``generate(custom_generate=optimal_beam_search, **settings)`` (or transformers' own beam search where
``settings["custom"]`` is false), and writes, per input line, one JSON line of its sequences (token ids, text)
and scores to ``--output``, and its ``search_stats`` to ``--stats``. Scores are written with ``repr``, which
round-trips a float exactly. A ``ValueError`` (a refused setting) is one ``error: ...`` line on stderr and
exit status 1; outputs are written only after the whole input decoded.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__:  # imported by the check: ``helpers.generate_worker``
    from . import translate_worker
else:  # the worker process runs this file: its folder, ``tests/helpers``, is the first entry of sys.path
    import translate_worker


class Worker(translate_worker.Worker):
    """transformers ``generate`` in this file's process."""

    script = Path(__file__).resolve()


_MODELS: dict = {}


def _load(path: str, kind: str):
    if path not in _MODELS:
        from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, PreTrainedTokenizerFast

        tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
        tokenizer.padding_side = "left" if kind == "decoder_only" else "right"
        loader = AutoModelForCausalLM if kind == "decoder_only" else AutoModelForSeq2SeqLM
        _MODELS[path] = (loader.from_pretrained(path).eval(), tokenizer)
    return _MODELS[path]


def _decode(model, tokenizer, kind: str, lines: list[str], settings: dict) -> tuple[list[dict], list]:
    import torch

    settings = dict(settings)
    custom, batch = settings.pop("custom", True), settings.pop("batch")
    if custom:
        from onmt_optimal.hf import optimal_beam_search

        settings["custom_generate"] = optimal_beam_search
    n = settings.get("num_return_sequences", 1)
    answers, stats = [], []
    for start in range(0, len(lines), batch):
        chunk = lines[start:start + batch]
        if kind == "decoder_only":
            chunk = [f"{line} =" for line in chunk]
        inputs = dict(tokenizer(chunk, return_tensors="pt", padding=True))
        with torch.no_grad():
            out = model.generate(**inputs, return_dict_in_generate=True, output_scores=not custom, **settings)
        rows = out.sequences.tolist()
        scores = out.sequences_scores.tolist() if out.sequences_scores is not None else [None] * len(rows)
        for i in range(len(chunk)):
            mine = range(i * n, (i + 1) * n)
            answers.append({"tokens": [rows[j] for j in mine],
                            "text": tokenizer.batch_decode([rows[j] for j in mine], skip_special_tokens=True),
                            "scores": [repr(scores[j]) for j in mine]})
        stats.extend(getattr(out, "search_stats", None) or [])
    return answers, stats


def main() -> None:
    parser = argparse.ArgumentParser(prog="generate")
    for name in ("--model", "--kind", "--src", "--output", "--stats", "--settings"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(sys.argv[1:])
    model, tokenizer = _load(args.model, args.kind)
    lines = Path(args.src).read_text().splitlines()
    try:
        answers, stats = _decode(model, tokenizer, args.kind, lines, json.loads(args.settings))
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    Path(args.output).write_text("".join(json.dumps(a) + "\n" for a in answers))
    Path(args.stats).write_text("".join(json.dumps(s, default=repr) + "\n" for s in stats))


def serve() -> None:
    answers = translate_worker.answers_channel()
    import torch

    torch.set_num_threads(1)
    translate_worker.run_jobs(main, answers)


if __name__ == "__main__":
    serve()
