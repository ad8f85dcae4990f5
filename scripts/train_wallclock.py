#!/usr/bin/env python3
"""Train with OpenNMT-py 3.5.1 for a wall-clock budget, then release the last checkpoint.

OpenNMT-py stops only at ``train_steps``. This runs ``onmt_train -config CONFIG`` (``train_steps`` there is a
ceiling) in its own process group and ends it when ``--budget`` seconds have passed since this script started,
or when this script receives SIGTERM or SIGINT (e.g. from ``timeout``). Checkpoints are written on the way by
OpenNMT-py itself (``save_checkpoint_steps``); at the end the newest one that loads completely (a checkpoint
cut short by the stop does not) is released to ``--out``: optimizer state removed, floating-point weights
stored as fp16 (``scripts/strip_checkpoint.py --half``; OpenNMT-py loads them back as fp32 on the CPU).

Device and precision: with CUDA, ``-world_size 1 -gpu_ranks 0 -model_dtype fp16`` (mixed precision: fp32
master weights, fp16 compute); without, the CPU in fp32 (``-world_size 1 -model_dtype fp32``; fp16 training
needs CUDA). ``--device`` forces either. Arguments after ``--`` go to ``onmt_train`` after these, so they win
(e.g. ``-train_steps 20`` for a dry run, or a smaller model).

    python scripts/train_wallclock.py --config CONFIG --budget SECONDS --out MODEL.pt [--device auto] [-- ARGS]

The training log (``onmt_train``'s output, also echoed) is written beside ``--out`` as ``train.log``.
Exit status: 0 when a checkpoint was released, 1 when none was saved in time, 2 on a bad argument.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
STRIP = ROOT / "scripts" / "strip_checkpoint.py"
TRAIN = "from onmt.bin.train import main; main()"


class Stop(Exception):
    """SIGTERM or SIGINT arrived: stop training and release what is there."""


def _stop(signum, frame):
    raise Stop(signal.Signals(signum).name)


def device_args(device: str) -> list[str]:
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        return ["-world_size", "1", "-gpu_ranks", "0", "-model_dtype", "fp16"]
    return ["-world_size", "1", "-model_dtype", "fp32"]


def checkpoints(save_model: str) -> list[str]:
    """``SAVE_MODEL_step_N.pt`` files, newest step first."""
    paths = glob.glob(f"{glob.escape(save_model)}_step_*.pt")
    return sorted(paths, key=lambda p: int(re.search(r"_step_(\d+)\.pt$", p).group(1)), reverse=True)


def stop_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM to the training's process group (its data-loading workers too), SIGKILL after ``grace`` s."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def release(save_model: str, out: Path) -> str | None:
    """Strip the newest complete checkpoint into ``out`` (fp16 weights); returns its path, or None."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    for ckpt in checkpoints(save_model):
        done = subprocess.run([sys.executable, str(STRIP), "--half", ckpt, str(tmp)], capture_output=True,
                              text=True)
        if done.returncode == 0:
            tmp.replace(out)
            print(done.stdout.strip(), flush=True)
            return ckpt
        print(f"train_wallclock: {ckpt} does not load (cut short?): trying the one before", flush=True)
    tmp.unlink(missing_ok=True)
    return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="OpenNMT-py training config (yaml)")
    p.add_argument("--budget", type=float, required=True, help="wall-clock seconds, from this script's start")
    p.add_argument("--out", type=Path, required=True, help="the released checkpoint (.pt)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    args = p.parse_args(argv)
    start = time.monotonic()
    if not args.config.is_file():
        p.error(f"--config {args.config}: no such file")
    if args.budget <= 0:
        p.error("--budget must be positive")
    save_model = (yaml.safe_load(args.config.read_text()) or {}).get("save_model")
    if not save_model:
        p.error(f"--config {args.config}: no save_model")
    for old in checkpoints(save_model):  # a checkpoint of an earlier run is not this run's
        os.remove(old)
    Path(save_model).parent.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-c", TRAIN, "-config", str(args.config)] + device_args(args.device) + extra
    print("train_wallclock:", " ".join(cmd[3:]), f"(budget {args.budget:g} s)", flush=True)
    log_path = args.out.with_name("train.log")
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    reason = "budget"
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})

        def pump():
            for line in proc.stdout:
                log.write(line)
                log.flush()
                sys.stdout.write(line)
            sys.stdout.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            proc.wait(max(0.0, args.budget - (time.monotonic() - start)))
            reason = f"onmt_train exited ({proc.returncode})"
        except subprocess.TimeoutExpired:
            pass
        except Stop as sig:
            reason = str(sig)
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            stop_group(proc)
            reader.join(10)
        log.write(f"train_wallclock: stopped ({reason}) after {time.monotonic() - start:.0f} s\n")
    print(f"train_wallclock: stopped ({reason}) after {time.monotonic() - start:.0f} s", flush=True)
    ckpt = release(save_model, args.out)
    if ckpt is None:
        print(f"train_wallclock: no complete checkpoint of {save_model} to release (see {log_path})",
              file=sys.stderr)
        return 1
    print(f"train_wallclock: released {ckpt} -> {args.out} ({args.out.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
