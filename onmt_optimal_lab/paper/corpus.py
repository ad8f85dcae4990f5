"""Reading, filtering, sampling and writing a parallel corpus for training (``scripts/prepare_data.py``), and
learning its SentencePiece models.

Text files are UTF-8, ``.gz`` read transparently; lines are cleaned as the tools clean them
(``onmt_optimal.tools.text.normalize``). Line counts that do not match raise ``CorpusError`` with the one line to say.
"""
from __future__ import annotations

import gzip
import os
import random

from onmt_optimal.tools.text import normalize


class CorpusError(ValueError):
    """Files that do not line up, in one line."""


def open_text(path):
    """Open a UTF-8 text file for reading, transparently decompressing ``.gz``."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, "r", encoding="utf-8", newline="\n")


def read_lines(path):
    """Return the lines of ``path`` without trailing newlines."""
    with open_text(path) as f:
        return [line.rstrip("\r\n") for line in f]


def read_parallel(src_path, tgt_path):
    """Read two line-aligned files; fail loudly if their line counts differ."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise CorpusError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    return src, tgt


def read_eval_set(src_path, ref_paths, unescape):
    """Read an evaluation source and its references, normalised and length-checked."""
    src = [normalize(s, unescape) for s in read_lines(src_path)]
    refs = []
    for path in ref_paths:
        ref = [normalize(r, unescape) for r in read_lines(path)]
        if len(ref) != len(src):
            raise CorpusError(f"{path} has {len(ref)} lines but {src_path} has {len(src)}")
        refs.append(ref)
    return src, refs


def filter_pairs(src, tgt, max_len, held_out_sources, counts):
    """Drop empty, overlong and held-out-source pairs; record each step in ``counts``."""
    nonempty = [(s, t) for s, t in zip(src, tgt) if s and t]
    counts["dropped_empty"] = len(src) - len(nonempty)
    if max_len > 0:
        short = [(s, t) for s, t in nonempty
                 if len(s.split()) <= max_len and len(t.split()) <= max_len]
    else:
        short = nonempty
    counts["dropped_overlong"] = len(nonempty) - len(short)
    clean = [(s, t) for s, t in short if s not in held_out_sources]
    counts["dropped_src_in_dev_or_test"] = len(short) - len(clean)
    counts["after_filtering"] = len(clean)
    return clean


def subsample(pairs, max_train, seed):
    """Return a seeded random sample of at most ``max_train`` pairs, in shuffled order.

    With ``max_train <= 0`` (or larger than the corpus) all pairs are kept, still shuffled.
    """
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    if 0 < max_train < len(order):
        order = order[:max_train]
    return [pairs[i] for i in order]


def write_lines(path, lines):
    """Write ``lines`` to ``path``, one per line."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def train_spm(input_path, prefix, vocab_size, coverage, model_type, seed, max_sentences):
    """Learn a SentencePiece model ``prefix.model``/``prefix.vocab`` from ``input_path``."""
    import sentencepiece as spm

    spm.set_random_generator_seed(seed)  # sentence sampling is otherwise unseeded
    spm.SentencePieceTrainer.train(
        input=input_path,
        model_prefix=prefix,
        vocab_size=vocab_size,
        character_coverage=coverage,
        model_type=model_type,
        input_sentence_size=max_sentences,
        shuffle_input_sentence=True,
        seed_sentencepiece_size=1000000,
        num_threads=1,
        minloglevel=2,
    )


def write_eval_set(out, name, src, refs):
    """Write ``name.src`` and ``name.ref0..N`` into ``out``; return their paths."""
    paths = {"src": os.path.join(out, f"{name}.src"), "refs": []}
    write_lines(paths["src"], src)
    for i, ref in enumerate(refs):
        path = os.path.join(out, f"{name}.ref{i}")
        write_lines(path, ref)
        paths["refs"].append(path)
    return paths
