"""Process-wide state stays bounded and explicit: the search's constant tensors, and patching OpenNMT-py twice."""
from __future__ import annotations

import torch

from onmt_optimal.search import constants


def test_a_constant_is_made_once_per_key_and_the_table_is_bounded():
    constants.clear()
    made = []

    def make():
        made.append(1)
        return torch.zeros(())

    first = constants.once(("test", 0), make)
    assert constants.once(("test", 0), make) is first and len(made) == 1
    for i in range(constants.KEPT + 5):  # more keys than the table keeps: it starts again, never grows past KEPT
        constants.once(("test", "many", i), lambda: torch.zeros(()))
        assert len(constants._made) <= constants.KEPT
    again = constants.once(("test", 0), make)
    assert torch.equal(again, first) and len(made) == 2  # made again, with the same value
    constants.clear()
    assert not constants._made


def test_patching_twice_changes_nothing():
    import onmt.inputters.text_corpus
    import onmt.model_builder
    import onmt.opts
    import onmt.translate.translator
    from onmt.utils.parse import ArgumentParser

    from onmt_optimal.opennmt import patch

    patch.apply()

    def patched():
        return (onmt.opts.translate_opts, ArgumentParser.validate_translate_opts.__func__,
                onmt.inputters.text_corpus.ParallelCorpus.load, onmt.model_builder.load_test_model,
                onmt.translate.translator.build_translator)

    before = patched()
    patch.apply()
    assert patched() == before
