"""OpenNMT-py's side of ``docs/seams.md``: the attributes the page names exist, and the modules holding them are
OpenNMT-py 3.5.1's (and configargparse 1.9.0's) byte for byte, so a new release fails here, naming the rows of the
page to re-audit, instead of silently changing what a replaced attribute wraps. Also, for the whole page: the
counts it states are its rows', and every test it cites exists."""
import importlib.metadata

import pytest

from helpers import seams

TOOLKIT = "OpenNMT-py"
TESTED = "OpenNMT-py 3.5.1"
VERSION = "3.5.1"
CONFIGARGPARSE = "1.9.0"

#: module -> sha256 of its source file in OpenNMT-py 3.5.1 (configargparse: ConfigArgParse 1.9.0)
STOCK = {
    "onmt.bin.server": "46b0c4128f137a2e8ffaced821eed68b6d78db1069bd434a6f28b05f1c355e1c",
    "onmt.bin.translate": "89c87a08bc13c6742dd1ca5b8713a6759fb58b61ff16f8bf6a030af8511c61b9",
    "onmt.inputters.dynamic_iterator": "db0fb8f7726c4e2091e4169ff947f5f1caaf15ba9511b2c1ce0adc42d96ede2a",
    "onmt.inputters.text_corpus": "5749753b548952d6159fae74c2478e784d394c21e0350311102ad79ab383d20f",
    "onmt.model_builder": "db06589137d508c9ed8a640be13db9b28442f0fad41785a9272fed9a4df4ad9a",
    "onmt.opts": "22ea45577cd7ff12d1079237a748410381090efcbe3ae5f25fa6a24d7c780991",
    "onmt.translate.translation_server": "3c5480df083037e94a886b62a284f787cace9a8301ec869c12ed1253f2378883",
    "onmt.translate.translator": "93c065830a707c0983cd81d747fbcf2b372d6e2b4044ed9b3d2a3c598dd799dc",
    "onmt.utils.distributed": "2b9e696a47409246da948d5386a7bd85e1a6c3970c9cdac6134c80bbb8847f1e",
    "onmt.utils.parse": "627ca3678e075e3583294789d12a65cd1bbda60d4df7c850fd9ee904a41f51c7",
    "onmt.utils.scoring_utils": "233bd77783057175f78c7e56d2af3d2062b7c4018598b736a3b6735e80d286b1",
    "configargparse": "83dcc5ba7a6a02f982faef04d07e0083184b64c77c00e46185911023dada6e5e",
}
#: configargparse's rows are the parser's instance methods (``onmt.utils.parse.ArgumentParser`` inherits them)
EXTRA_ROWS = {"configargparse": ("configargparse.", "onmt.utils.parse.ArgumentParser.")}
RELEASES = {"configargparse": f"ConfigArgParse {CONFIGARGPARSE}"}

onmt = pytest.importorskip("onmt", reason="OpenNMT-py is not installed in this environment")


def test_the_installed_opennmt_py_is_the_tested_release():
    assert importlib.metadata.version("OpenNMT-py") == VERSION, f"the stock fingerprints are {TESTED}'s"
    assert importlib.metadata.version("ConfigArgParse") == CONFIGARGPARSE, (
        f"the configargparse fingerprint is ConfigArgParse {CONFIGARGPARSE}'s (re-audit the rows of docs/seams.md "
        f"that name onmt.utils.parse.ArgumentParser or configargparse)")


def test_every_module_holding_a_replaced_attribute_is_fingerprinted():
    assert seams.modules(TOOLKIT) == set(STOCK), "docs/seams.md's modules and this table differ"


def test_stock_sources_are_the_tested_releases():
    problems = seams.mismatches(TOOLKIT, STOCK, TESTED, EXTRA_ROWS, RELEASES)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("row", seams.rows(TOOLKIT), ids=lambda row: row.attribute)
def test_every_attribute_on_the_page_exists(row):
    from onmt_optimal.opennmt import patch, server

    patch.apply()
    patch.apply_cli()
    server.patch_translation_server()
    server.patch_command()
    seams.resolve(row.attribute)


def test_the_page_names_only_seams_and_repairs_and_counts_them():
    for toolkit in ("OpenNMT-py", "eole", "vLLM", "transformers"):
        rows = seams.rows(toolkit)
        assert rows, f"docs/seams.md has no table for {toolkit}"
        assert {row.kind for row in rows} <= {"seam", "repair"}
        kinds = (sum(row.kind == "seam" for row in rows), sum(row.kind == "repair" for row in rows))
        assert seams.counts(toolkit) == kinds, f"{toolkit}: the page's counts are not its rows'"


def test_every_test_the_page_cites_exists():
    assert not seams.cited_tests_missing(), seams.cited_tests_missing()


def test_patched_attributes_are_the_ones_the_page_names():
    """Every attribute of OpenNMT-py that holds one of our functions after the patches is on the page (a new
    replacement without a row fails here)."""
    from onmt_optimal.opennmt import patch, server

    patch.apply()
    patch.apply_cli()
    server.patch_translation_server()
    server.patch_command()
    named = {row.attribute for row in seams.rows(TOOLKIT)}
    found = seams.marked("onmt")
    found.discard("onmt.translate.translator.Translator")  # ours only once a translator was built
    assert found - named == set(), f"replaced but not on docs/seams.md: {sorted(found - named)}"
