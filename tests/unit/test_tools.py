"""The package's tools and its installation: length ratio, metadata, the benchmark's variants, the scripts
(the ``ratio`` and ``sweep`` commands on a trained model: ``tests/e2e/test_tool_commands.py``)."""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from onmt_optimal.tools.evaluate import corpus_score
from onmt_optimal.tools.length_ratio import estimate


def test_installing_never_asks_for_torch_or_opennmt():
    """OpenNMT-py 3.5.1 pins torch<2.3: depending on it (or on torch) would let pip downgrade torch."""
    requires = [r.split(";")[0].strip().lower() for r in metadata.requires("onmt-optimal") or []]
    assert not [r for r in requires if r.startswith(("torch", "opennmt"))], requires


def test_length_ratio_corpus_and_sentence_means():
    est = estimate([2, 4, 0], [[3, 4, 5], [3, 8, 9]])  # the empty source is left out
    assert est.sentences == 2
    assert est.corpus == pytest.approx((3 + 6) / 6)
    assert est.sentence == pytest.approx((3 / 2 + 6 / 4) / 2)
    with pytest.raises(ValueError):
        estimate([0], [[1]])


def test_moses_escapes_are_told_and_what_the_ratio_prints():
    from onmt_optimal.tools.length_ratio import RatioEstimate, escape_warning
    from onmt_optimal.tools.text import moses_escaped

    assert moses_escaped(["it &apos;s", "a @-@ b", "x &amp; y &quot;z&quot; &#124;", "me@x.com & you", ""]) == (
        3, ["&apos;", "@-@", "&amp;"])
    assert escape_warning("s", ["r"], ["plain", "it's"], [["a-b", "c & d"]]) is None
    line = escape_warning("s", ["r0", "r1"], ["a", "b"], [["a", "b"], ["it &apos;s", "b"]])
    assert line == "--refs r1 has 1 of 2 lines with Moses escapes (&apos;): add --unescape-moses to count them " \
                   "as the text the model was trained on"
    printed = str(RatioEstimate(1.30594, 1.4, 1086))
    assert printed.split()[:2] == ["-length_ratio", "1.3059"] and "\n" not in printed


TAIL = ("the lengths count other units on each side (and BLEU compares other forms); give the source and the "
        "references in one form, as the model reads and writes text")


def test_references_space_tokenized_against_running_text_are_one_line():
    from onmt_optimal.tools.length_ratio import tokenization_warnings

    src = ["Don't go.", "It's here, now.", "(See below.)", "Fine"]
    ref = ["don 't go .", "it 's here , now .", "( see below . )", "fine"]
    other = ["No.", "Yes, it is.", "OK.", "so"]
    assert tokenization_warnings("dev.src", ["dev.ref", "dev.ok"], src, [ref, other]) == [
        '--refs dev.ref (3 of 4 lines) looks space-tokenized ("don \'t", " ,", "( ") but --src dev.src (3 of 4 '
        f"lines) reads as running text: {TAIL}"]
    # both sides tokenized alike (TVsub: segmented Chinese, tokenized English), or no sign either way: no line
    assert tokenization_warnings("s", ["r"], ["确定 要 这么 做 ?"], [["you sure you wanna do this ?"]]) == []
    assert tokenization_warnings("s", ["r"], ["a b c", "d e"], [["A B C", "D E"]]) == []


def test_sentencepiece_pieces_on_one_side_are_one_line():
    from onmt_optimal.tools.length_ratio import tokenization_warnings

    src = ["\u2581a \u2581b c", "\u2581d"]
    assert tokenization_warnings("s", ["r0", "r1"], src, [["a bc", "d"], ["a bc", "d"]]) == [
        f"--src s (2 of 2 lines) looks split into SentencePiece pieces (\u2581) but --refs r0 (2 of 2 lines), "
        f"--refs r1 (2 of 2 lines) read as running text: {TAIL}"]
    assert tokenization_warnings("s", ["r"], src, [["\u2581a \u2581bc", "\u2581d"]]) == []


def test_bpe_pieces_on_one_side_are_one_line():
    from onmt_optimal.tools.length_ratio import tokenization_warnings

    found = tokenization_warnings("s", ["r"], ["this is", "a word"], [["th@@ is is", "a wo@@ rd"]])
    assert found == [f"--refs r (2 of 2 lines) looks split into BPE pieces (@@) but --src s (2 of 2 lines) reads as "
                     f"running text: {TAIL}"]
    assert tokenization_warnings("s", ["r"], ["write to me@x.com", "at 5@@"], [["write to me@x.com", "at 5"]]) == []


@pytest.mark.parametrize("command", [["ratio"], ["sweep", "--out", "sweep.json"]])
def test_ratio_and_sweep_print_the_warnings_before_the_model_loads(tmp_path, command):
    """Each problem of the files is one warning line on stderr, printed as they are read (before the model, here
    a missing one, is loaded)."""
    import subprocess
    import sys

    (tmp_path / "dev.src").write_text("It's here, now.\nGo.\n")
    (tmp_path / "dev.ref").write_text("it &apos;s here , now .\ngo .\n")
    done = subprocess.run([sys.executable, "-m", "onmt_optimal", *command, "--src", "dev.src", "--refs", "dev.ref",
                           "--", "-model", "missing.pt"], capture_output=True, text=True, cwd=tmp_path)
    warnings = [line for line in done.stderr.splitlines() if ": warning: " in line]
    name = f"onmt-optimal {command[0]}: warning: "
    assert warnings == [name + "--refs dev.ref has 1 of 2 lines with Moses escapes (&apos;): add --unescape-moses to "
                        "count them as the text the model was trained on",
                        name + '--refs dev.ref (2 of 2 lines) looks space-tokenized ("don \'t", " ,", "( ") but --src '
                        f"dev.src (2 of 2 lines) reads as running text: {TAIL}"], done.stderr[-2000:]
    assert done.returncode != 0 and not (tmp_path / "sweep.json").exists()


def test_corpus_score_uses_every_reference_and_checks_lengths():
    hyps = ["a b c d", "e f"]
    one = corpus_score(hyps, [["a b c d", "x y"]])
    two = corpus_score(hyps, [["a b c d", "x y"], ["w w w w", "e f"]])
    assert two.bleu > one.bleu and "nrefs:2" in two.signature and "case:lc" in two.signature
    with pytest.raises(ValueError):
        corpus_score(hyps, [["only one line"]])


def test_variants_by_name():
    """The benchmark's one factory of search variants: every suffix means what its name says, in any tool."""
    from onmt_optimal_lab.bench.variants import VARIANTS, search
    from onmt_optimal.search.transfer import AUTO
    from onmt_optimal.search.scoring import BoundedWordReward

    assert search("stock").stock and not search("stock").rules
    plain = search("optimal")
    assert not plain.stock and plain.host == AUTO and plain.beam_of_one
    assert type(plain.stopping).__name__ == type(search("optimal-core").stopping).__name__
    reward = search("optimal+r", 1.2, 1.5).scoring
    assert isinstance(reward, BoundedWordReward) and "1.2" in reward.describe()
    assert search("optimal-host").host == "cpu" and search("optimal-device").host is None
    assert not search("optimal-core").beam_of_one and search("optimal-host-core").host == "cpu"
    assert [search(v).stock for v in VARIANTS] == [True, False, False, False, False]
    assert search("optimal+prune").prune_dead and not plain.prune_dead
    assert search("optimal+r+prune", 1.2, 1.5).prune_dead
    for bad in ("fastest", "optimal-gpu", "+r"):
        with pytest.raises(ValueError, match="unknown variant"):
            search(bad)


def test_bench_refuses_an_unknown_model_in_one_line():
    from argparse import Namespace

    from onmt_optimal_lab.bench.models import UsageError, resolve_models

    with pytest.raises(UsageError, match="^--config nope: neither a model name"):
        resolve_models(Namespace(config="nope", src=None, refs=None, data="data", unescape_moses=None))


def test_count_lines(tmp_path):
    from onmt_optimal.progress import count_lines

    (tmp_path / "a").write_text("x\ny\n")
    (tmp_path / "b").write_text("x\ny")
    (tmp_path / "c").write_text("")
    assert [count_lines(tmp_path / n) for n in "abc"] == [2, 2, 0]
    assert count_lines(tmp_path / "missing") is None and count_lines(None) is None


TESTS = Path(__file__).resolve().parents[1]
SCRIPTS = TESTS.parent / "scripts"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_scripts_are_thin_command_lines(script):
    """A script is a command line over package modules: no edit of ``sys.path``, nothing imported from tests/,
    well under 200 lines."""
    import ast

    text = (SCRIPTS / script).read_text()
    assert len(text.splitlines()) < 200, script
    helpers = {"helpers"} | {p.stem for p in TESTS.rglob("*.py")}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert (node.value.id, node.attr) != ("sys", "path"), f"{script}:{node.lineno} edits sys.path"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not {n.split(".")[0] for n in names} & helpers, f"{script}:{node.lineno} imports from tests/"


@pytest.mark.parametrize("spelling", ["proc-root-src", "dotdot-ref", "hard-link-model", "symlink-src"])
def test_sweep_out_is_compared_with_the_files_it_reads_by_identity(tmp_path, spelling):
    """``--out`` spelled otherwise than a file the sweep reads (``/proc/self/root/...``, ``d/../d/x``, a link) is
    that file: refused, as by its own name."""
    import os

    from onmt_optimal.options import OptionError
    from onmt_optimal.tools import args as tool_args

    src, ref, model = tmp_path / "dev.src", tmp_path / "dev.ref", tmp_path / "model.pt"
    for path in (src, ref, model):
        path.write_text("x\n")
    out = {"proc-root-src": f"/proc/self/root{src}", "dotdot-ref": f"{tmp_path}/../{tmp_path.name}/dev.ref",
           "hard-link-model": str(tmp_path / "hard"), "symlink-src": str(tmp_path / "soft")}[spelling]
    os.link(model, tmp_path / "hard")
    (tmp_path / "soft").symlink_to(src)
    with pytest.raises(OptionError, match="writing it would destroy it"):
        tool_args.check_out(out, str(src), [str(ref)], ["-model", str(model)])
    assert all(path.read_text() == "x\n" for path in (src, ref, model))
