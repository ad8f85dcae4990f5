"""The precision a benchmark decodes in: OpenNMT-py's ``-precision`` for the session, and for ``int8`` the dynamic
quantization OpenNMT-py 3.5.1 means to apply but does not.

OpenNMT-py 3.5.1's ``load_test_model`` tests ``opt.precision == torch.int8`` on the option's string, so
``-precision int8`` loads the float32 model and decodes in float32. ``quantize`` applies what that test guards,
``torch.ao.quantization.quantize_dynamic(model, dtype=torch.qint8, inplace=True)`` (its default layers: linear,
LSTM and LSTM cells), to the session's model, once, before any variant decodes: stock and every variant then
decode the same int8 model.
"""
from __future__ import annotations

import warnings

PRECISIONS = ("fp32", "fp16", "int8")


def session_args(precision: str) -> list[str]:
    """The ``onmt_translate`` flags of ``precision`` (int8: the float32 model, quantized by ``quantize``)."""
    return [] if precision == "fp32" else ["-precision", "fp32" if precision == "int8" else precision]


def quantize(session, precision: str) -> None:
    """Quantize the session's model in place where ``precision`` is ``int8``."""
    if precision != "int8":
        return
    import torch

    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notices
        warnings.simplefilter("ignore")
        torch.ao.quantization.quantize_dynamic(session.translator.model, dtype=torch.qint8, inplace=True)
