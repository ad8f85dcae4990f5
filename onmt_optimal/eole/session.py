"""A loaded eole model, for the tools that decode many times (``python -m onmt_optimal sweep|ratio``).

``EoleSession`` is ``onmt_optimal.opennmt.session.Session`` for eole: it parses ordinary ``eole predict`` arguments
(flags or ``-config`` YAML), loads the model once through eole's own ``InferenceEnginePY``, decodes any source file
with any set of rules sharing one beam (``decode``, the same records as ``Session.decode``), and counts lengths in
the tokens the model reads (``model_lengths``), so ``sweep.py`` and ``length_ratio.py`` use it unchanged.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from onmt_optimal.eole import patch
from onmt_optimal.adapter.decoding import RuleDecoding
from onmt_optimal.errors import OptionError


def parse(predict_args: list[str], writes=()):
    """``eole predict``'s checked config of ``predict_args`` (``-src`` and ``-output`` the null device where not
    given), before any model loads; ``writes``: ``(flag, path)`` pairs of files the caller will write, refused
    where they are files the run reads (``files.check``: the config's files, every file of a model directory)."""
    patch.apply_cli()
    from eole.bin.run.predict import Predict

    from onmt_optimal.eole import files, options

    parser = _RefusingParser(prog="eole predict")
    Predict.add_args(parser)
    args = list(predict_args)
    if not any(a in args for a in ("-src", "--src")) and not _config_has(args, "src"):
        args += ["-src", os.devnull]
    args += ["-output", os.devnull]
    parsed = parser.parse_args(args)
    config = Predict.build_config(parsed)
    if writes:
        files.check(*options.read_parsed(config), getattr(parsed, "config", None), list(writes))
    return config


class EoleSession(RuleDecoding):
    def __init__(self, predict_args: list[str], writes=()):
        """The model of ``predict_args`` loaded, once they are checked (``parse``, with ``writes``)."""
        from eole.inference_engine import InferenceEnginePY

        self.config = parse(predict_args, writes)
        self.engine = InferenceEnginePY(self.config)
        self.translator = self.engine.predictor
        self.vocabs = self.engine.vocabs
        self.decoder_only = getattr(self.config.model, "encoder", None) is None
        self.detokenize = self.engine.transform_pipe.batch_apply_reverse if self.engine.transforms else None

    # ------------------------------------------------------------------ decoding
    def infer(self, src: str | Path):
        """eole's whole pipeline on ``src`` (read, transform, batch, predict), output discarded."""
        # InferenceEnginePY.infer_file takes no argument: it reads its files from the config
        self.config.src = str(src)
        self.config.output = os.devnull
        return self.engine.infer_file()

    # ------------------------------------------------------------------ lengths the model sees
    def model_lengths(self, lines: list[str], side: str) -> list[int]:
        """Token counts of raw ``lines`` after the model's transforms, as eole reads them: for a decoder-only
        model a prompt (``side == "src"``) counts its decoder start token, as ``|x|`` does in the search."""
        lengths = {}
        for batch, _ in self.engine._build_inference_iterator(src=[line.strip() for line in lines]):
            for number, length in zip(batch["cid_line_number"], batch["srclen"].tolist()):
                lengths[int(number)] = length
        start = 1 if self.decoder_only else 0  # the decoder start token of a decoder-only model's input
        out = []
        for i, line in enumerate(lines):
            n = lengths.get(i, 0) if line.strip() else 0
            out.append(n if side == "src" or n == 0 else n - start)
        return out


def _config_has(args: list[str], key: str) -> bool:
    """Whether a ``-config``/``--config``/``-c`` YAML among ``args`` sets ``key``."""
    import yaml

    from onmt_optimal.adapter import yaml_guard

    for flag in ("-config", "--config", "-c"):
        if flag in args and args.index(flag) + 1 < len(args):
            path = args[args.index(flag) + 1]
            yaml_guard.check(flag, path)  # not UTF-8, too large, an alias bomb: one line
            with open(path, encoding="utf-8") as f:
                try:
                    parsed = yaml.safe_load(f)
                except yaml.YAMLError:
                    return False  # the toolkit's parser says what is wrong
            return isinstance(parsed, dict) and key in parsed
    return False


def is_eole(args: list[str]) -> bool:
    """Whether ``predict_args`` are eole's (``-model_path``, or a YAML config with ``model_path``) rather than
    OpenNMT-py's (``-model``/``model``)."""
    if any(a in args for a in ("-model_path", "--model_path")):
        return True
    try:
        return _config_has(args, "model_path")
    except OSError:
        return False


class _RefusingParser(argparse.ArgumentParser):
    """A bad flag is an ``OptionError`` (one line), not a usage text and an exit."""

    def error(self, message):
        raise OptionError(" ".join(str(message).split()))
