"""A loaded OpenNMT-py model and its transforms, for the tools that decode many times (sweep, ratio; chosen by
``onmt_optimal.tools.session.load``).

``Session`` parses ordinary ``onmt_translate`` arguments (CLI flags or ``-config`` YAML), loads the model once
through OpenNMT-py's own ``InferenceEnginePY`` and then decodes any source file with any set of rules sharing
one beam, returning per-line results with detokenized text. It also exposes the model's transforms, so that
lengths are counted in the tokens the model sees.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from onmt_optimal.adapter.decoding import RuleDecoding
from onmt_optimal.opennmt import patch, repairs
from onmt_optimal.opennmt.checkpoint import one_line_loads
from onmt_optimal.errors import OptionError


def parse(translate_args: list[str], writes=(), validate: bool = True):
    """``onmt_translate``'s parsed options of ``translate_args`` (``-src`` and ``-output`` the null device where
    not given), validated as the command validates them (``validate``), before any model loads; ``writes``:
    ``(flag, path)`` pairs of files the caller will write, refused where they are files the run reads
    (``run_files.reads``: wherever they were given, on the command line or in its ``-config``)."""
    patch.apply()
    from onmt.opts import translate_opts

    from onmt_optimal import file_checks
    from onmt_optimal.opennmt import run_files
    from onmt_optimal.opennmt.options import Settings, validate_parsed

    parser = _refusing_parser("onmt-optimal session")
    repairs.guard_config(parser)
    translate_opts(parser)
    args = list(translate_args)
    if "-src" not in args and "--src" not in args:
        args += ["-src", os.devnull]
    if "-output" not in args and "--output" not in args:
        args += ["-output", os.devnull]
    opt = parser.parse_args(args)
    if writes:
        file_checks.check_distinct(run_files.reads(Settings.read(opt)), list(writes))
    if validate:
        validate_parsed(opt)
    return opt


class Session(RuleDecoding):
    def __init__(self, translate_args: list[str], writes=()):
        """The model of ``translate_args`` loaded, once they are checked (``parse``, with ``writes``)."""
        from onmt.inference_engine import InferenceEnginePY
        from onmt.transforms import TransformPipe, make_transforms

        opt = parse(translate_args, writes)
        self.opt = opt
        with one_line_loads():
            self.engine = InferenceEnginePY(opt)
        self.translator = self.engine.translator
        self.vocabs = self.engine.vocabs
        transforms = make_transforms(opt, self.engine.transforms_cls, self.vocabs)
        self.transforms = transforms
        self.pipe = TransformPipe.build_from([transforms[name] for name in transforms]) if transforms else None
        self.detokenize = self.pipe.batch_apply_reverse if self.pipe is not None else None

    # ------------------------------------------------------------------ decoding
    def infer(self, src: str | Path):
        """OpenNMT-py's whole pipeline on ``src`` (read, transform, batch, translate), output discarded."""
        # InferenceEnginePY.infer_file takes no argument: it reads the source file from its options
        self.opt.src = str(src)
        self.engine.opt.src = str(src)
        translator = self.translator
        # OpenNMT-py's InferenceEnginePY built the translator with -output as its ``out_file`` and gives no other
        # way to send one pass's translations elsewhere: for this pass they go to the null device
        with open(os.devnull, "w") as sink:
            out_file, translator.out_file = translator.out_file, sink
            try:
                return self.engine.infer_file()
            finally:
                translator.out_file = out_file

    # ------------------------------------------------------------------ lengths the model sees
    def model_lengths(self, lines: list[str], side: str) -> list[int]:
        """Token counts of raw ``lines`` after the model's transforms (e.g. SentencePiece pieces)."""
        lengths = []
        for line in lines:
            tokens = line.strip().split()
            if self.pipe is None or not tokens:
                lengths.append(len(tokens))
                continue
            example = {"src": tokens, "tgt": tokens, "src_original": tokens, "tgt_original": tokens}
            example = self.pipe.apply(example, is_train=False)
            lengths.append(len(example[side]) if example is not None else 0)
        return lengths


def _refusing_parser(description: str):
    """OpenNMT-py's ``ArgumentParser`` for which a bad flag is an ``OptionError`` (one line), not a usage text and
    an exit."""
    from onmt.utils.parse import ArgumentParser

    class RefusingParser(ArgumentParser):
        def error(self, message):
            raise OptionError(" ".join(str(message).split()))

        def parse_known_args(self, *args, **kwargs):
            try:
                return super().parse_known_args(*args, **kwargs)
            except argparse.ArgumentTypeError as err:  # a deprecated flag (-int8, -fp32): raised by its action
                raise OptionError(str(err)) from None

    return RefusingParser(description=description)
