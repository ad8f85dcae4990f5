"""The keys and values the docs list for the statistics are the ones the code writes, no more and no fewer.

* the statistics file (docs/usage.md's table, in order): ``Record.json``'s keys (``rows_skipped`` included, which
  a record has only with ``-prune_dead``);
* its ``stop_reason`` values (docs/usage.md's table and README's sentence): ``StopReason``'s, but for
  transformers' own rule's;
* transformers' ``search_stats[i]`` (docs/hf.md's "Statistics"): the keys of a real ``generate`` answer on
  ``fixed_lm`` (a transformers model with synthetic log-probabilities).
"""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from helpers.doc_blocks import ROOT
from onmt_optimal.search.record import Record, StopReason


def _section(page: str, title: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    start = re.search(rf"^#+ {re.escape(title)}\s*$", text, re.M)
    assert start, f"{page} has no section {title!r}"
    end = re.search(r"^#+ ", text[start.end():], re.M)
    return text[start.end():start.end() + end.start() if end else None]


def _without_parentheses(text: str) -> str:
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def _table_keys(section: str) -> list[str]:
    """The first column of the section's first table (``| `key` | meaning |`` rows)."""
    return re.findall(r"^\| `(\w+)` \|", section, re.M)


def test_the_statistics_file_keys_are_the_records():
    """Every key a record may write, ``rows_skipped`` (``-prune_dead``'s) included."""
    written = list(json.loads(replace(Record.empty(0.0), rows_skipped=0).json(1)))
    assert _table_keys(_section("docs/usage.md", "Statistics file")) == written


def _stop_reasons(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", text))


# stop reasons of transformers' own rule alone (``stopping="default"`` in generate): no onmt_translate flag has it
TRANSFORMERS_ONLY = {"early_stopping"}


def test_the_stop_reasons_listed_are_stop_reason_s():
    reasons = {reason.value for reason in StopReason} - TRANSFORMERS_ONLY
    row = re.search(r"^\| `stop_reason` \|(.*)\|$", _section("docs/usage.md", "Statistics file"), re.M)
    assert _stop_reasons(_without_parentheses(row[1])) == reasons
    sentence = re.search(r"`stop_reason` is (.*?);", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert _stop_reasons(sentence[1]) == reasons


def test_search_stats_keys_are_what_generate_answers():
    pytest.importorskip("transformers")
    from helpers.fixed_lm import fixed_lm, prompts
    from onmt_optimal.hf import optimal_beam_search

    out = fixed_lm(2, eos_bias=1.0).generate(**prompts([4, 5]), num_beams=3, max_new_tokens=6, length_penalty=0.0,
                                             custom_generate=optimal_beam_search, return_dict_in_generate=True)
    answered = {key for stats in out.search_stats for key in stats}
    paragraph = _section("docs/hf.md", "Statistics").split("`search_stats[i]`:", 1)[1]
    listed = _without_parentheses(paragraph).split(". ", 1)[0]
    assert set(re.findall(r"`(\w+)`", listed)) == answered
