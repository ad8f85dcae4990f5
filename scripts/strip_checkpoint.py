#!/usr/bin/env python3
"""Remove the optimizer state from an OpenNMT-py checkpoint.

OpenNMT-py saves ``model``, ``generator``, ``vocab``, ``opt`` and ``optim`` (Adam moments,
about twice the size of the parameters).  Translation needs everything but ``optim``.
Loading uses ``weights_only=True`` with ``argparse.Namespace`` allow-listed, which is what
torch >= 2.6 requires for OpenNMT checkpoints.

    python scripts/strip_checkpoint.py [--half] IN.pt OUT.pt

``--half`` also stores the floating-point weights as fp16 (half the size); OpenNMT-py casts them to its
``-precision`` on loading (fp32 by default).
"""

import argparse
import os

import torch


def load_checkpoint(path):
    """Load an OpenNMT checkpoint on CPU (safe loader, Namespace allow-listed)."""
    torch.serialization.add_safe_globals([argparse.Namespace])
    return torch.load(path, map_location="cpu", weights_only=True)


def strip_optimizer(checkpoint):
    """Return a shallow copy of ``checkpoint`` without its ``optim`` entry."""
    return {k: v for k, v in checkpoint.items() if k != "optim"}


def halve(checkpoint):
    """Return a shallow copy of ``checkpoint`` whose ``model`` and ``generator`` floating-point tensors are fp16.

    Tensors that are views of the same memory (tied weights) stay one tensor, so the file keeps one copy.
    """
    out, halves = dict(checkpoint), {}
    for key in ("model", "generator"):
        if out.get(key) is not None:
            state = {}
            for name, t in out[key].items():
                if t.is_floating_point():
                    view = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride())
                    t = halves.setdefault(view, t.half())
                state[name] = t
            out[key] = state
    return out


def count_parameters(checkpoint):
    """Number of distinct scalar parameters in the model and generator state dicts.

    Tied weights (``share_decoder_embeddings``) share storage and are counted once.
    """
    seen, total = set(), 0
    for key in ("model", "generator"):
        for tensor in (checkpoint.get(key) or {}).values():
            ptr = tensor.untyped_storage().data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                total += tensor.numel()
    return total


def main(argv=None):
    """Strip ``optim`` from IN and write OUT; print sizes and parameter count."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="OpenNMT checkpoint (.pt)")
    p.add_argument("output", help="where to write the stripped checkpoint")
    p.add_argument("--half", action="store_true", help="store the floating-point weights as fp16")
    args = p.parse_args(argv)

    ckpt = load_checkpoint(args.input)
    stripped = strip_optimizer(ckpt)
    if args.half:
        stripped = halve(stripped)
    torch.save(stripped, args.output)
    print(f"{args.input} ({os.path.getsize(args.input) / 1e6:.1f} MB, keys {sorted(ckpt)}) -> "
          f"{args.output} ({os.path.getsize(args.output) / 1e6:.1f} MB, keys {sorted(stripped)}); "
          f"{count_parameters(stripped):,} parameters")


if __name__ == "__main__":
    main()
