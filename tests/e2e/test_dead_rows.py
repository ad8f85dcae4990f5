"""End to end: ``onmt_translate -stopping optimal -prune_dead`` (the dead rows skipped, ``search.dead``: the decoder
runs only for the rows the search needs) against the same decode without, in the same process, on a tiny model
trained in the run (an RNN, and a transformer, whose decoder keeps a cache per row).

The outputs (n-best lists with ``-with_score``) are byte-identical; so is every statistic of every line but
``completed`` (completed hypotheses seen, which counts children of dead items in the unpruned search) and
``stop_reason`` (``certificate`` against ``all_finished``: the live items left at the stop need not be the same
ones), which ``search.dead``'s docstring explains; the test prints how many lines they differ on. The pruned run's
lines have one key more, ``rows_skipped``, which the unpruned run's lack. With pruning asked for but not applicable
(OpenNMT-py's own rule), the output's bytes are all equal, and so is every statistic, each line skipping 0 rows.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import pruned, toy

pytestmark = pytest.mark.slow

CASES = [
    ["-beam_size", "5", "-batch_size", "1"],
    ["-beam_size", "5", "-batch_size", "16"],
    ["-beam_size", "5", "-batch_size", "16", "-n_best", "3", "-with_score"],
    ["-beam_size", "6", "-batch_size", "16", "-block_ngram_repeat", "2", "-n_best", "2"],
    ["-beam_size", "4", "-batch_size", "16", "-length_reward", "1.0", "-length_ratio", "1.1"],
    ["-beam_size", "4", "-batch_size", "1", "-bp_norm", "-length_ratio", "1.1", "-n_best", "2", "-with_score"],
    ["-beam_size", "5", "-batch_size", "64", "-n_best", "2", "-with_score"],
    ["-beam_size", "5", "-batch_size", "16", "-precision", "fp16", "-with_score"],
    ["-beam_size", "5", "-batch_size", "16", "-precision", "int8", "-with_score"],
]


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    d = tmp_path_factory.mktemp("dead_data")
    toy.write_corpus(d / "test", 40, seed=5, max_len=14)
    return d / "test.src"


@pytest.fixture(scope="module")
def rnn(tmp_path_factory):
    """A toy RNN trained briefly: unsure enough that items die before the certificate holds (the well-trained
    ``toy_model`` is so sure that its certificate holds as its first hypothesis completes, with nothing dead)."""
    return toy.train_toy_model(tmp_path_factory.mktemp("dead_rnn"), steps=40, n_train=600)


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    return toy.train_toy_model(tmp_path_factory.mktemp("dead_transformer"), steps=60, n_train=600,
                               arch="transformer")


def _decode(worker, model, src, out, args):
    argv = ["-model", model, "-src", src, "-output", out / "hyp", "-stats_file", out / "stats",
            "-length_penalty", "none", "-max_length_ratio", "0", *args]
    done = worker.run(*[str(a) for a in argv])
    assert done.returncode == 0, done.stderr[-3000:]
    return (out / "hyp").read_bytes(), [json.loads(line) for line in (out / "stats").read_text().splitlines()]


def _compare(worker, model, src, tmp_path, args):
    (tmp_path / "plain").mkdir()
    (tmp_path / "pruned").mkdir()
    hyp, stats = _decode(worker, model, src, tmp_path / "plain", args)
    pruned_hyp, pruned_stats = _decode(worker, model, src, tmp_path / "pruned", [*args, "-prune_dead"])
    return pruned.compare(hyp, stats, pruned_hyp, pruned_stats, " ".join(args))


@pytest.mark.parametrize("args", CASES, ids=" ".join)
def test_pruned_decode_answers_as_the_unpruned_one(our_worker, rnn, src, tmp_path, args):
    differ, skipped = _compare(our_worker, rnn, src, tmp_path, ["-stopping", "optimal", *args])
    if args == CASES[1]:  # rows were skipped (else the comparison would pass vacuously)
        assert differ["completed"] > 0 and skipped > 0


@pytest.mark.parametrize("args", CASES[1:3], ids=" ".join)
def test_pruned_transformer_answers_as_the_unpruned_one(our_worker, transformer, src, tmp_path, args):
    _compare(our_worker, transformer, src, tmp_path, ["-stopping", "optimal", *args])


@pytest.mark.parametrize("arch", list(toy.SHAPES))
def test_pruned_transformers_of_other_shapes_answer_as_the_unpruned_one(our_worker, src, tmp_path_factory, arch):
    """Relative positions and rotary embeddings take other products over the batch's rows: each row's numbers must
    not depend on which rows share its step."""
    model = toy.train_toy_model(tmp_path_factory.mktemp(arch), steps=60, n_train=600, arch=arch)
    out = tmp_path_factory.mktemp(f"{arch}_decodes")
    _, skipped = _compare(our_worker, model, src, out,
                          ["-stopping", "optimal", "-beam_size", "8", "-batch_size", "40", "-with_score"])
    assert skipped > 0


#: ``onmt_translate`` in a process of its own, the batches its pruning decode loop ran (sentences each) written to
#: ``sys.argv[1]`` as JSON: the loop is counted as it runs, and the test's process stays as it was
COUNTING = """
import json, sys
from onmt.bin.translate import main
from onmt_optimal.opennmt.translator import CertifiedTranslator
loops, decode, out = [], CertifiedTranslator._decode_needed_rows, sys.argv.pop(1)
def counted(self, batch, strategy):
    loops.append(len(batch["srclen"]))
    return decode(self, batch, strategy)
CertifiedTranslator._decode_needed_rows = counted
sys.argv[0] = "onmt_translate"
main()
open(out, "w").write(json.dumps(loops))
"""


def test_onmt_translate_skips_the_dead_rows_where_its_output_shows_nothing(rnn, src, tmp_path):
    """Without ``-prune_dead``, ``onmt_translate -stopping optimal`` skips the dead rows where nothing it writes
    shows it: no ``-stats_file``, on a CPU, in batches of several sentences (``CertifiedTranslator._prunes``). The
    translations and scores are those of the same run with a statistics file, which decodes every row, as does a
    batch of one (unless ``-prune_dead`` asks). The decode loop that skips rows is counted as it runs."""
    import subprocess
    import sys

    outputs = {}
    for name, more in [("quiet", []), ("stats", ["-stats_file", str(tmp_path / "records.jsonl")]),
                       ("batch1", ["-batch_size", "1"]), ("asked", ["-batch_size", "1", "-prune_dead"])]:
        argv = [sys.executable, "-c", COUNTING, str(tmp_path / f"{name}.json"), "-model", str(rnn), "-src", str(src),
                "-output", str(tmp_path / name), "-beam_size", "5", "-batch_size", "16", "-length_penalty", "none",
                "-max_length_ratio", "0", "-stopping", "optimal", "-with_score", "-log_file", str(tmp_path / "log"),
                *more]
        done = subprocess.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs[name] = ((tmp_path / name).read_bytes(), json.loads((tmp_path / f"{name}.json").read_text()))
    assert outputs["quiet"][1] == [16, 16, 8] and outputs["stats"][1] == outputs["batch1"][1] == []
    assert outputs["asked"][1] == [1] * 40  # -prune_dead: every batch, one sentence or many
    # (a batch's size changes its products' last bits, in stock's decode too: compare within a size)
    assert outputs["quiet"][0] == outputs["stats"][0] and outputs["batch1"][0] == outputs["asked"][0]


def test_not_applicable_is_byte_identical(our_worker, rnn, src, tmp_path):
    differ, skipped = _compare(our_worker, rnn, src, tmp_path,
                               ["-stopping", "default", "-beam_size", "5", "-batch_size", "16"])
    assert differ == {"completed": 0, "stop_reason": 0} and skipped == 0


#: German lines of mixed lengths (written for this test): a batch of 8 whose last step decodes fewer rows than the
#: next batch's first step reads
GERMAN = """Ein Hund läuft.
Zwei Männer spielen Fußball auf einer großen grünen Wiese neben einem alten Haus in der Stadt.
Eine Frau liest.
Kinder spielen im Park.
Ein Mann mit einem roten Hut sitzt auf einer Bank und isst einen Apfel, während neben ihm ein kleiner Hund schläft.
Ein Junge springt.
Eine Gruppe von Menschen steht vor einem Gebäude.
Ein Mädchen in einem blauen Kleid tanzt auf der Straße.
Zwei Hunde rennen durch den Schnee.
Ein Mann fährt Fahrrad.
Eine ältere Frau mit grauen Haaren verkauft Obst und Gemüse auf einem Markt in einer kleinen Stadt.
Ein Koch bereitet Essen zu.
Leute sitzen in einem Café.
Ein Kind schwimmt im Pool.
Ein Arbeiter repariert eine Straße.
Eine Katze schläft.
"""


def test_a_transformers_caches_from_the_previous_batch_are_left_alone(our_worker, tmp_path):
    """OpenNMT-py's transformer decoder keeps the previous batch's layer caches until its first step rebuilds
    them: the pruned loop's first selection of rows must not index them (it did, and failed with an IndexError
    where the previous batch ended on fewer rows than this one starts with). The shipped Multi30k transformer."""
    shipped = Path(__file__).resolve().parents[2] / "models" / "multi30k-de-en-transformer"
    src = tmp_path / "src.de"
    src.write_text(GERMAN, encoding="utf-8")
    args = ["-transforms", "sentencepiece", "-src_subword_model", str(shipped / "src.spm.model"), "-tgt_subword_model",
            str(shipped / "tgt.spm.model"), "-stopping", "optimal", "-beam_size", "10", "-batch_size", "8",
            "-max_length", "100"]
    differ, skipped = _compare(our_worker, shipped / "model.pt", src, tmp_path, args)
    assert skipped > 0


def test_onmt_server_decodes_every_row_without_a_statistics_file(our_worker, rnn, src, tmp_path):
    """A served model's answers carry its records (``serving.FIELD``), so ``onmt_server`` skips no dead row unasked,
    statistics file or not (``Options.records_read``): each answer's record is that of ``onmt_translate`` with a
    statistics file, ``completed`` (completed hypotheses seen) included, where the pruned decode's differs."""
    from helpers import onmt_server

    opt = {"beam_size": 5, "batch_size": 16, "length_penalty": "none", "max_length_ratio": 0, "stopping": "optimal"}
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "model.pt").symlink_to(rnn)
    conf = onmt_server.write_config(tmp_path / "root", onmt_server.entry(1, opt))
    lines = Path(src).read_text(encoding="utf-8").splitlines()
    served = onmt_server.start(conf, tmp_path / "server.log", cwd=tmp_path)
    try:
        answer = served.post(f"{onmt_server.ROOT}/translate", [{"id": 1, "src": line} for line in lines])
    finally:
        served.stop()
    assert answer.status == 200, answer.body
    got = [item["onmt_optimal"] for item in answer.body[0]]
    # stock's server decodes a request's lines in one batch, whatever the model's batch_size
    args = ["-stopping", "optimal", "-beam_size", "5", "-batch_size", str(len(lines))]
    (tmp_path / "plain").mkdir()
    (tmp_path / "pruned").mkdir()
    _, every_row = _decode(our_worker, rnn, src, tmp_path / "plain", args)
    _, pruned_rows = _decode(our_worker, rnn, src, tmp_path / "pruned", [*args, "-prune_dead"])
    assert [item["tgt"] for item in answer.body[0]] == (tmp_path / "plain" / "hyp").read_text().splitlines()
    assert got == every_row  # no ``rows_skipped``, every float equal
    assert [r["completed"] for r in got] != [r["completed"] for r in pruned_rows]  # (the test could fail)
