"""eole's side of ``docs/seams.md``: the attributes the page names exist once the patches ran, and the modules
holding them are eole 0.6.4's byte for byte, so a new release fails here, naming the rows of the page to
re-audit. Reads source files and imports eole's modules; trains nothing, starts no process (the tier's conftest
marks it slow with the rest)."""
import importlib.metadata

import pytest

from helpers import seams

TOOLKIT = "eole"
TESTED = "eole 0.6.4"
VERSION = "0.6.4"

#: module -> sha256 of its source file in eole 0.6.4
STOCK = {
    "eole.bin.run.predict": "485a6197efc1c2799c2f03786096128c4fc1931ae3ad9478d3c2fac24ce3b68c",
    "eole.bin.run.serve": "ec53d342338a71eace8c65afb5ee6d8809a7ae7b8fdb910d00de4d2c64cac43e",
    "eole.inference_engine": "0542d3c5a8f410793c7f89a03ff39455891d815a63c5981f7ec115b2b5d06bca",
    "eole.inputters.dynamic_iterator": "9b0659f606c4aebf902976cab620a796a780ab9a1d87201c8c4aaa56997cc0ad",
    "eole.inputters.text_corpus": "19d184e81c59e82c081fd550642d17e42574076327a5eaf08f9c121fd6822c9e",
    "eole.predict": "a3a64cd488c91c1e1e366335bd260c4ab5c153dc77bb77feda24ad9042c2ea6d",
    "eole.server.app": "716bd33b1bafa56f38e4ef1f418c2b04dd0280e559e7beea04fb99c8e506ea97",
    "eole.server.model": "7dd882171d506981d0efbe796c8ef88582d68c157f6784580c5d6d0d8bdd1250",
    "eole.server.streaming": "b5b9be8d7cd49e72001729e7d1d3e7f832c8ebf5d140616676533c881a113300",
    "eole.server.anthropic": "3099ec9b1e550452eed930c60467a245f5730a331c2225a232c26062418a08b3",
    "eole.server.openai_chat": "6662858a8449372fbb22f5d931350775713a63b1133659303de7d249650d1a7c",
    "eole.server.responses": "592345d66f4ea8b2c5d9bb4a7fe71cfc6c6978f700aba6059d30864d2c87a165",
    "eole.server.ui_runtime": "c3cd29cad7356af6ba93ef341311eb08216a28ac4cbdc200c08f9ed273e65f7b",
    "eole.server.ui_ocr": "cf25821c54d17ff3581353026815256247e29db60dadfee90a4e72c3632aa579",
}

eole = pytest.importorskip("eole", reason="eole is not installed in this environment")


def _patched():
    from onmt_optimal.eole import patch, server

    patch.apply_cli()
    server.patch_server_model()
    server.patch_server_app()
    server.patch_serve_command()
    server.patch_streaming()


def test_the_installed_eole_is_the_tested_release():
    assert importlib.metadata.version("eole") == VERSION, f"the stock fingerprints are {TESTED}'s"


def test_every_module_holding_a_replaced_attribute_is_fingerprinted():
    assert seams.modules(TOOLKIT) == set(STOCK), "docs/seams.md's modules and this table differ"


def test_stock_sources_are_the_tested_releases():
    problems = seams.mismatches(TOOLKIT, STOCK, TESTED)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("row", seams.rows(TOOLKIT), ids=lambda row: row.attribute)
def test_every_attribute_on_the_page_exists(row):
    _patched()
    seams.resolve(row.attribute)


def test_patched_attributes_are_the_ones_the_page_names():
    """Every attribute of eole that holds one of our marked functions after the patches is on the page (a new
    replacement without a row fails here)."""
    _patched()
    named = {row.attribute for row in seams.rows(TOOLKIT)}
    found = seams.marked("eole")
    assert found - named == set(), f"replaced but not on docs/seams.md: {sorted(found - named)}"
