"""The table of options (``option_table``) is what every toolkit takes: OpenNMT-py's ``onmt_translate`` flags
(the real parser, through the import hook), transformers' ``optimal_beam_search`` keyword arguments (their
names and defaults), ``options.Flags``; its choices are the search's rules and bounds, each accepted by the one
validation (``options.check_search``) and any other refused with the table's list; and each toolkit's page of
the docs names every option it takes and every allowed value. (eole's config fields and vLLM's keyword
arguments are checked in their own environments: ``tests/eole``, ``tests/vllm``.)"""
from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path

import pytest

from onmt_optimal import options
from onmt_optimal.option_table import EOLE, HF, OPENNMT, TABLE, VLLM, taken_by
from onmt_optimal.search import scoring
from onmt_optimal.search.registry import STOPPING_RULES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_choices_are_the_search_rules_and_bounds():
    stopping, bound = (next(o for o in TABLE if o.name == n) for n in ("stopping", "bound"))
    assert stopping.choices == tuple(STOPPING_RULES)
    assert bound.choices == tuple(scoring.BOUNDS)
    for toolkit in (HF, VLLM):
        assert set(stopping.choices_for(toolkit)) <= set(STOPPING_RULES)


def test_flags_are_the_table():
    assert [(f.name, f.default) for f in fields(options.Flags)] == [(o.name, o.default) for o in TABLE]


def test_onmt_translate_flags_are_the_table():
    from onmt import opts
    from onmt.utils.parse import ArgumentParser

    parser = ArgumentParser()
    opts.translate_opts(parser)  # patched by the import hook: ours are added
    actions = {a.dest: a for a in parser._actions}
    for option in TABLE:
        if OPENNMT not in option.toolkits:
            assert option.name not in actions, option.name
            continue
        action = actions[option.name]
        assert action.option_strings == [f"--{option.name}", f"-{option.name}"]
        assert action.default == option.default_for(OPENNMT)
        assert action.help == option.help_for(OPENNMT)
        if option.type is bool:
            assert action.nargs == 0 and action.const is True
        else:
            assert (action.type or str) is option.type
            choices = option.choices_for(OPENNMT)
            assert action.metavar == ("{" + ",".join(choices) + "}" if choices else option.metavar)


def _search_keywords(function, usual) -> dict:
    """The keyword arguments of ``function`` that ``usual`` (the toolkit's own search) does not have."""
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if name not in usual and p.kind is not inspect.Parameter.VAR_KEYWORD}


def test_transformers_keyword_arguments_are_the_table():
    from transformers.generation.utils import GenerationMixin

    from onmt_optimal.hf.generate import optimal_beam_search

    usual = {*inspect.signature(GenerationMixin._sample).parameters, "model"}  # _sample's self
    assert _search_keywords(optimal_beam_search, usual) == {o.name: o.default_for(HF) for o in taken_by(HF)}


@pytest.mark.parametrize("toolkit", [OPENNMT, EOLE, HF, VLLM])
def test_every_choice_is_validated_once(toolkit):
    for option in taken_by(toolkit):
        choices = option.choices_for(toolkit)
        if not choices:
            continue
        for value in choices:
            flags = options.Flags.of(toolkit, **{option.name: value, "length_ratio": 1.0})
            options.check_search(flags, toolkit, normalized=True)
        with pytest.raises(options.OptionError) as caught:
            options.check_search(options.Flags.of(toolkit, **{option.name: "bogus"}), toolkit)
        assert f"must be one of {', '.join(choices)}" in str(caught.value)
        assert str(caught.value).startswith("-" if toolkit in (OPENNMT, EOLE) else option.name)


#: each toolkit's page, and how it writes an option's name and a value
PAGES = {OPENNMT: ("usage.md", "`-{}", "`{}`"), EOLE: ("eole.md", "`--{}`", "`{}`"),
         HF: ("hf.md", "`{}", '`"{}"`'), VLLM: ("vllm.md", "`{}", '`"{}"`')}


@pytest.mark.parametrize("toolkit", list(PAGES))
def test_docs_name_every_option_and_value(toolkit):
    page, name, value = PAGES[toolkit]
    text = (DOCS / page).read_text()
    for option in taken_by(toolkit):
        assert name.format(option.name) in text, (page, option.name)
        if toolkit != EOLE:  # eole's page refers to onmt_translate's table for the values
            for choice in option.choices_for(toolkit) or ():
                assert value.format(choice) in text, (page, option.name, choice)
