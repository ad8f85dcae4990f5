#!/usr/bin/env python3
"""Prepare a parallel corpus for OpenNMT-py training with on-the-fly SentencePiece.

Steps, in order (every count lands in ``OUT/prep.json``):

1. read the training pair files (plain text or ``.gz``) and the dev/test files;
2. optionally undo Moses escapes (``--unescape-moses``) on every side;
3. drop training pairs with an empty side, then pairs longer than ``--max-len``
   whitespace tokens on either side;
4. drop training pairs whose source sentence also occurs among the dev or test
   sources (after the same normalisation);
5. draw a deterministic random subsample of ``--max-train`` pairs (``--seed``),
   written in the sampled (shuffled) order;
6. learn one SentencePiece model per side on that subsample (or, with ``--spm-from DIR``, copy
   ``DIR/src.spm.model`` and ``DIR/tgt.spm.model``: the same segmentation as an existing model).

Outputs in ``OUT``: ``train.src``/``train.tgt`` (the subsample), ``dev.src``,
``dev.ref0..``, ``test.src``, ``test.ref0..`` (raw, unescaped when asked, ready
to be scored against detokenized output), ``src.spm.model``/``.vocab``,
``tgt.spm.model``/``.vocab`` and ``prep.json``.  Subword segmentation is not
applied here: OpenNMT's ``sentencepiece`` transform does it at train and
translate time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

from onmt_optimal_lab.paper.corpus import (CorpusError, filter_pairs, read_eval_set, read_parallel, subsample, train_spm,
                                 write_eval_set, write_lines)
from onmt_optimal.tools.text import normalize


def build_parser():
    """Command-line interface."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-src", required=True, help="training source (plain or .gz)")
    p.add_argument("--train-tgt", required=True, help="training target (plain or .gz)")
    p.add_argument("--dev-src", required=True, help="dev source")
    p.add_argument("--dev-ref", required=True, nargs="+", help="dev reference(s)")
    p.add_argument("--test-src", required=True, help="test source")
    p.add_argument("--test-ref", required=True, nargs="+", help="test reference(s), any number")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--max-train", type=int, default=0,
                   help="subsample this many training pairs after filtering (0 = all)")
    p.add_argument("--max-len", type=int, default=80,
                   help="drop training pairs with more whitespace tokens on either side (0 = off)")
    p.add_argument("--vocab-size", type=int, default=8000,
                   help="SentencePiece vocabulary size, per side")
    p.add_argument("--src-vocab-size", type=int, default=None, help="override --vocab-size for the source")
    p.add_argument("--tgt-vocab-size", type=int, default=None, help="override --vocab-size for the target")
    p.add_argument("--src-coverage", type=float, default=0.9995,
                   help="SentencePiece character_coverage for the source (0.9995 suits CJK)")
    p.add_argument("--tgt-coverage", type=float, default=1.0,
                   help="SentencePiece character_coverage for the target")
    p.add_argument("--spm-type", default="unigram", choices=["unigram", "bpe"],
                   help="SentencePiece model type")
    p.add_argument("--spm-max-sentences", type=int, default=1000000,
                   help="at most this many sentences are sampled to train SentencePiece")
    p.add_argument("--spm-from", metavar="DIR",
                   help="copy DIR/src.spm.model and DIR/tgt.spm.model instead of learning SentencePiece models")
    p.add_argument("--unescape-moses", action="store_true",
                   help="undo Moses escapes (&apos; &quot; &amp; ... and @-@) on every side")
    p.add_argument("--seed", type=int, default=1234, help="seed for subsampling and SentencePiece")
    return p


def main(argv=None):
    """Run the preparation and print a short summary."""
    args = build_parser().parse_args(argv)
    if args.spm_from:
        missing = [f for f in ("src.spm.model", "tgt.spm.model") if not os.path.isfile(os.path.join(args.spm_from, f))]
        if missing:
            sys.exit(f"error: --spm-from {args.spm_from}: no {' or '.join(missing)}")
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    counts = {}

    try:
        src, tgt = read_parallel(args.train_src, args.train_tgt)
        dev_src, dev_refs = read_eval_set(args.dev_src, args.dev_ref, args.unescape_moses)
        test_src, test_refs = read_eval_set(args.test_src, args.test_ref, args.unescape_moses)
    except CorpusError as err:
        sys.exit(f"error: {err}")
    counts["train_read"] = len(src)
    src = [normalize(s, args.unescape_moses) for s in src]
    tgt = [normalize(t, args.unescape_moses) for t in tgt]

    held_out = set(dev_src) | set(test_src)

    pairs = filter_pairs(src, tgt, args.max_len, held_out, counts)
    del src, tgt
    pairs = subsample(pairs, args.max_train, args.seed)
    counts["train_written"] = len(pairs)
    counts["train_src_tokens"] = sum(len(s.split()) for s, _ in pairs)
    counts["train_tgt_tokens"] = sum(len(t.split()) for _, t in pairs)

    train_src = os.path.join(args.out, "train.src")
    train_tgt = os.path.join(args.out, "train.tgt")
    write_lines(train_src, (s for s, _ in pairs))
    write_lines(train_tgt, (t for _, t in pairs))
    del pairs
    dev_paths = write_eval_set(args.out, "dev", dev_src, dev_refs)
    test_paths = write_eval_set(args.out, "test", test_src, test_refs)
    counts["dev"] = len(dev_src)
    counts["dev_refs"] = len(dev_refs)
    counts["test"] = len(test_src)
    counts["test_refs"] = len(test_refs)

    src_vocab = args.src_vocab_size or args.vocab_size
    tgt_vocab = args.tgt_vocab_size or args.vocab_size
    for side, path, size, cov in (("src", train_src, src_vocab, args.src_coverage),
                                  ("tgt", train_tgt, tgt_vocab, args.tgt_coverage)):
        if args.spm_from:
            shutil.copyfile(os.path.join(args.spm_from, f"{side}.spm.model"),
                            os.path.join(args.out, f"{side}.spm.model"))
        else:
            train_spm(path, os.path.join(args.out, f"{side}.spm"), size, cov,
                      args.spm_type, args.seed, args.spm_max_sentences)

    info = {
        "args": vars(args),
        "counts": counts,
        "outputs": {
            "train_src": train_src, "train_tgt": train_tgt,
            "dev": dev_paths, "test": test_paths,
            "src_spm": os.path.join(args.out, "src.spm.model"),
            "tgt_spm": os.path.join(args.out, "tgt.spm.model"),
        },
        "seconds": round(time.time() - t0, 1),
    }
    with open(os.path.join(args.out, "prep.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2, ensure_ascii=False)
        f.write("\n")

    c = counts
    print(f"train: read {c['train_read']}, -{c['dropped_empty']} empty, "
          f"-{c['dropped_overlong']} longer than {args.max_len}, "
          f"-{c['dropped_src_in_dev_or_test']} source in dev/test "
          f"= {c['after_filtering']}; wrote {c['train_written']} "
          f"({c['train_src_tokens']} src / {c['train_tgt_tokens']} tgt tokens)")
    print(f"dev: {c['dev']} x {c['dev_refs']} ref(s); test: {c['test']} x {c['test_refs']} ref(s)")
    print(f"spm: {'copied from ' + args.spm_from if args.spm_from else f'src {src_vocab}, tgt {tgt_vocab} ({args.spm_type})'}; "
          f"out: {args.out} ({info['seconds']} s)")
    return info


if __name__ == "__main__":
    main()
