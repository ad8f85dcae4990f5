"""The b x r sweep for a vLLM model: ``onmt-optimal sweep --vllm MODEL``.

One ``vllm.LLM`` is started for the whole sweep (``load``: the engine settings the command line names, vLLM's
defaults for the others) and the dev set decoded, for each beam size b, through
``onmt_optimal.vllm.optimal_beam_search``:

* once with vLLM's own beam search, stock: ``BeamSearchParams(beam_width=b, max_tokens=T)`` (vLLM's default
  ``length_penalty``) with ``stopping="exhaustive"``, which answers as ``LLM.beam_search`` does, sequence for
  sequence (``tests/vllm/test_vllm_search.py``), and reports each prompt's steps: the baseline row ``default``;
* once per reward r with ``length_penalty=0`` (the log-probability), ``stopping="optimal"`` and the bounded
  reward r at length ratio RHO (``sweep_report.reward_options``): an ``optimal_reward`` row.

BLEU is sacrebleu's on the 1-best's generated tokens, decoded by the engine's tokenizer (special tokens skipped).
The rows have the keys of the other sweeps' (``sweep_report.summarize``); the best setting is written as the call
that decodes with it (``call_line``) and as a server request's fields (``request_line``).
"""
from __future__ import annotations

import json
import time

from onmt_optimal.errors import OptionError

__all__ = ["ENGINE", "load", "run_vllm_sweep", "settings", "call_line", "request_line", "snippet"]

#: the ``vllm.LLM`` settings the command line may name (``--dtype`` ...), as vLLM's server spells them
ENGINE = ("dtype", "max_model_len", "enforce_eager", "gpu_memory_utilization")


def load(model: str, engine: dict):
    """The ``vllm.LLM`` of ``model`` (a folder or a Hub name) with ``engine`` (keys of ``ENGINE``, None left to
    vLLM); one ``OptionError`` line where vLLM is missing or the folder is none."""
    import os

    if os.sep in model and not os.path.isdir(model):
        raise OptionError(f"--vllm {model}: no such folder; give the model's folder")
    try:
        from vllm import LLM
    except ImportError:
        raise OptionError("--vllm needs vLLM: make setup-vllm (its environment, docs/vllm.md)") from None
    return LLM(model=model, **{key: value for key, value in engine.items() if key in ENGINE and value is not None})


def close(llm) -> None:
    """Stop ``llm``'s engine core (its process) now, not at the interpreter's exit."""
    llm.llm_engine.engine_core.shutdown()


def decode(llm, src_lines: list[str], params, batch_size: int, bar=None, **search) -> list[dict]:
    """One decode of ``src_lines`` (text prompts) through ``optimal_beam_search`` with ``params`` and ``search``,
    ``batch_size`` prompts a call; per line, its ``Record``'s fields with ``text`` (the 1-best's generated tokens
    decoded, special tokens skipped)."""
    from dataclasses import asdict

    from onmt_optimal.vllm import optimal_beam_search

    tok, out = llm.get_tokenizer(), []
    for start in range(0, len(src_lines), batch_size):
        lines = src_lines[start:start + batch_size]
        for answer in optimal_beam_search(llm, lines, params, **search):
            record = answer.record
            text = tok.decode(answer.sequences[0].tokens[record.src_length:], skip_special_tokens=True)
            out.append(dict(asdict(record), text=text.strip()))
        if bar is not None:
            bar.update(len(lines))
    return out


def run_vllm_sweep(llm, src_lines: list[str], refs: list[list[str]], beams: list[int], rewards: list[float],
                   ratio: float, max_tokens: int, batch_size: int = 256, progress: bool = True) -> dict:
    """Every beam size: the baseline row, then one row per reward (the order of the table)."""
    from vllm.sampling_params import BeamSearchParams

    from onmt_optimal.progress import sentence_bar
    from onmt_optimal.tools.sweep_report import reward_options, summarize

    rows, decodes, start = [], 0, time.time()
    for beam in beams:
        decoders = [("default", None, BeamSearchParams(beam_width=beam, max_tokens=max_tokens),
                     {"stopping": "exhaustive"})]
        decoders += [("optimal_reward", r, BeamSearchParams(beam_width=beam, max_tokens=max_tokens, length_penalty=0.0),
                      {"stopping": "optimal", **reward_options(r, ratio)}) for r in rewards]
        for family, reward, params, search in decoders:
            desc = f"b={beam} " + ("vLLM's beam search" if reward is None else f"optimal r={reward:g}")
            with sentence_bar(len(src_lines), desc, leave=False, disable=not progress) as bar:
                records = decode(llm, src_lines, params, batch_size, bar, **search)
            decodes += 1
            rows.append(summarize(family, beam, reward, records, refs))
    return {"rows": rows, "seconds": time.time() - start, "decodes": decodes}


def settings(row: dict, ratio: float, max_tokens: int) -> dict:
    """What decodes as ``row`` did: ``params`` (``BeamSearchParams``' keywords) and ``search``
    (``optimal_beam_search``'s; none for the baseline, vLLM's own ``LLM.beam_search``)."""
    from onmt_optimal.tools.sweep_report import reward_options

    if row["family"] == "default":
        return {"params": {"beam_width": row["beam"], "max_tokens": max_tokens}, "search": {}}
    return {"params": {"beam_width": row["beam"], "max_tokens": max_tokens, "length_penalty": 0.0},
            "search": {"stopping": "optimal", **reward_options(row["reward"], round(ratio, 4))}}


def _keywords(values: dict) -> str:
    return ", ".join(f"{key}={value!r}" if not isinstance(value, str) else f'{key}="{value}"'
                     for key, value in values.items())


def call_line(row: dict, ratio: float, max_tokens: int) -> str:
    """The Python call that decodes ``prompts`` on ``llm`` as ``row`` did, e.g. ``optimal_beam_search(llm, prompts,
    BeamSearchParams(beam_width=4, max_tokens=64, length_penalty=0.0), stopping="optimal", ...)`` with the
    bounded reward's two options; for the baseline, ``llm.beam_search(prompts, BeamSearchParams(...))``."""
    chosen = settings(row, ratio, max_tokens)
    params = f"BeamSearchParams({_keywords(chosen['params'])})"
    if not chosen["search"]:
        return f"llm.beam_search(prompts, {params})"
    return f"optimal_beam_search(llm, prompts, {params}, {_keywords(chosen['search'])})"


def request_line(row: dict, ratio: float, max_tokens: int) -> str:
    """The same setting as the fields of a beam request to vLLM's server with the plugin (JSON)."""
    chosen = settings(row, ratio, max_tokens)
    fields = {"use_beam_search": True, "n": row["beam"], "max_tokens": max_tokens}
    if chosen["search"]:
        fields.update(length_penalty=0.0, vllm_xargs=chosen["search"])
    return json.dumps(fields)


def snippet(row: dict, ratio: float, max_tokens: int) -> str:
    """What ``--kwargs FILE`` holds: a comment naming the row, the call (``call_line``), a comment, and the
    server request's fields (``request_line``)."""
    from onmt_optimal.tools.sweep_report import label

    ours = " and from onmt_optimal.vllm import optimal_beam_search" if row["family"] != "default" else ""
    return (f"# best on the sweep's dev set: {label(row)}, BLEU {row['bleu']:.2f}, length ratio "
            f"{row['length_ratio']:.3f}, mean steps {row['mean_steps']:.2f}; with from vllm.sampling_params import "
            f"BeamSearchParams{ours}:\n"
            f"{call_line(row, ratio, max_tokens)}\n"
            f"# the same setting as a request's fields to vLLM's server (/v1/completions):\n"
            f"{request_line(row, ratio, max_tokens)}\n")
