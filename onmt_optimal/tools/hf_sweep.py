"""The b x r sweep for a transformers checkpoint: ``onmt-optimal sweep --tokenizer MODEL_DIR``.

The model is loaded once (``AutoModelForSeq2SeqLM`` or ``AutoModelForCausalLM``, as the folder's config says, on
the CPU) and the dev set decoded, for each beam size b:

* once with transformers' own rule (``stopping="default"``: its ``early_stopping`` rule, with its default
  ``length_penalty``, on the same beam; ``tests/hf/test_hf_search.py`` checks it answers as transformers' own
  beam search), the baseline row ``default``;
* once per reward r with ``custom_generate=optimal_beam_search, stopping="optimal"`` and the bounded reward r
  at length ratio RHO (``sweep_report.reward_options``), an ``optimal_reward`` row.

Every decode goes through ``optimal_beam_search`` so that each row has the step each input stopped at
(``search_stats``). BLEU is sacrebleu's (``evaluate.corpus_score``) on the decoded text (special tokens skipped).
The rows (``sweep_report.summarize``) have the keys of the OpenNMT-py sweep's, so ``sweep_report`` prints and draws
them; the best setting is written as the keyword arguments of ``generate`` (``kwargs_line``).
"""
from __future__ import annotations

import time

from onmt_optimal.errors import OptionError

__all__ = ["load", "run_hf_sweep", "settings", "kwargs_line", "parse_kwargs_line"]


def load(name: str):
    """``(model, tokenizer)`` of the checkpoint ``name`` (a folder, or a Hub name in the local cache), on the CPU,
    in eval mode; an ``OptionError`` line when none loads."""
    from onmt_optimal.tools.length_ratio import transformers_for

    hf = transformers_for(name)
    try:
        config = hf.AutoConfig.from_pretrained(name)
        auto = hf.AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False) else hf.AutoModelForCausalLM
        model = auto.from_pretrained(name)
        tok = hf.AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError, KeyError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise OptionError(f"--tokenizer {name}: no model loads from it ({first})") from None
    model.eval()
    if not model.config.is_encoder_decoder:
        tok.padding_side = "left"  # a prompt's continuation starts right after it
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


def decode(model, tok, src_lines: list[str], beam: int, max_new_tokens: int, batch_size: int, bar=None,
           **search) -> list[dict]:
    """One decode of ``src_lines`` at beam size ``beam`` through ``optimal_beam_search`` with ``search`` (its
    keyword arguments); per line, its ``search_stats`` with ``text`` (the answer, special tokens skipped)."""
    import torch

    from onmt_optimal.hf import optimal_beam_search

    out = []
    for start in range(0, len(src_lines), batch_size):
        lines = src_lines[start:start + batch_size]
        inputs = tok(lines, return_tensors="pt", padding=True)
        with torch.no_grad():
            answer = model.generate(**inputs, num_beams=beam, max_new_tokens=max_new_tokens, do_sample=False,
                                    custom_generate=optimal_beam_search, return_dict_in_generate=True, **search)
        texts = tok.batch_decode([stats["tokens"] for stats in answer.search_stats], skip_special_tokens=True)
        for stats, text in zip(answer.search_stats, texts):
            out.append(dict(stats, text=text.strip()))
        if bar is not None:
            bar.update(len(lines))
    return out


def run_hf_sweep(model, tok, src_lines: list[str], refs: list[list[str]], beams: list[int], rewards: list[float],
                 ratio: float, max_new_tokens: int, batch_size: int = 16, progress: bool = True) -> dict:
    """Every beam size: the baseline row, then one row per reward (the order of the table)."""
    from onmt_optimal.progress import sentence_bar
    from onmt_optimal.tools.sweep_report import reward_options, summarize

    rows, decodes, start = [], 0, time.time()
    decoders = [("default", None, {"stopping": "default"})]
    decoders += [("optimal_reward", r, {"stopping": "optimal", **reward_options(r, ratio)}) for r in rewards]
    for beam in beams:
        for family, reward, search in decoders:
            desc = f"b={beam} " + ("transformers' rule" if reward is None else f"optimal r={reward:g}")
            with sentence_bar(len(src_lines), desc, leave=False, disable=not progress) as bar:
                records = decode(model, tok, src_lines, beam, max_new_tokens, batch_size, bar, **search)
            decodes += 1
            rows.append(summarize(family, beam, reward, records, refs))
    return {"rows": rows, "seconds": time.time() - start, "decodes": decodes}


def settings(row: dict, ratio: float, max_new_tokens: int) -> dict:
    """The keyword arguments of ``generate`` that decode as ``row`` did (``optimal_beam_search`` by name)."""
    from onmt_optimal.tools.sweep_report import reward_options

    out = {"num_beams": row["beam"], "max_new_tokens": max_new_tokens, "custom_generate": "optimal_beam_search"}
    if row["family"] == "default":
        out["stopping"] = "default"
    else:
        out.update(stopping="optimal", **reward_options(row["reward"], round(ratio, 4)))
    return out


def kwargs_line(row: dict, ratio: float, max_new_tokens: int) -> str:
    """``settings`` as one line of Python keyword arguments, e.g. ``num_beams=5, max_new_tokens=128,
    custom_generate=optimal_beam_search, stopping="optimal"`` followed by the bounded reward's two options."""
    parts = []
    for key, value in settings(row, ratio, max_new_tokens).items():
        if key == "custom_generate":
            parts.append(f"{key}={value}")
        elif isinstance(value, str):
            parts.append(f'{key}="{value}"')
        else:
            parts.append(f"{key}={value!r}")
    return ", ".join(parts)


def snippet(row: dict, ratio: float, max_new_tokens: int) -> str:
    """What ``--kwargs FILE`` holds: a comment line naming the row, then ``kwargs_line``."""
    from onmt_optimal.tools.sweep_report import label

    return (f"# best on the sweep's dev set: {label(row)}, BLEU {row['bleu']:.2f}, length ratio "
            f"{row['length_ratio']:.3f}, mean steps {row['mean_steps']:.2f}; pass to model.generate(**inputs, ...) "
            f"with: from onmt_optimal.hf import optimal_beam_search\n" + kwargs_line(row, ratio, max_new_tokens) + "\n")


def parse_kwargs_line(line: str) -> dict:
    """The keyword arguments of a ``kwargs_line`` (``custom_generate`` as the name it carries)."""
    import ast

    call = ast.parse(f"f({line})", mode="eval").body
    return {kw.arg: (kw.value.id if isinstance(kw.value, ast.Name) else ast.literal_eval(kw.value))
            for kw in call.keywords}
