"""What the golden check decodes: the models, their input slices and the flag sets, as a list of ``Job``.

A job is one command of one toolkit on one model: ``onmt_translate`` or ``eole predict`` arguments, a
transformers ``generate`` call (``generate_worker``'s arguments) or a vLLM beam search (``vllm_worker``'s).
Every argument is either a path both sides share (models, inputs: absolute) or a file the run writes (``{out}``,
``{stats}``: relative to the side's run folder, so the two sides' commands and logs read the same).

The flag sets cover each option of the plugin and the stock path: no flag at all; every ``-stopping`` rule;
every ``-length_penalty``; the length reward with and without ``-length_ratio``; ``-bp_norm``; ``-bound
predicted``; ``-n_best 3``; batches of 1 and 32; beams of 1, 5 and 10; a run without ``-stats_file``; the dead
rows skipped (``-prune_dead``, batches of 8 so that one batch follows another, and of 1), and unasked (no
statistics file, batches of 8); a bad flag value and a missing ``-src`` (exit status and error line).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SHIPPED = ("tvsub-zh-en", "multi30k-de-en", "multi30k-de-en-transformer")
DEV = {"tvsub-zh-en": "tvsub-zh-en/dev.zh", "multi30k-de-en": "multi30k-de-en/val.de",
       "multi30k-de-en-transformer": "multi30k-de-en/val.de"}
SLICE_LINES = 30  # the first 28 dev lines, an empty line, the longest dev line
STATS = ["-stats_file", "{stats}"]
RATIO = ["-length_ratio", "1.2"]
NONE = ["-length_penalty", "none"]
BAD_VALUE = "bad-value"
MISSING_SRC = "missing-src"

# (name, flags) for onmt_translate and eole predict; the model's own beam 5 and batch 32 unless a set says
FLAG_SETS: list[tuple[str, list[str]]] = [
    ("stock", []),
    ("stock-nbest3-beam1", ["-n_best", "3", "-beam_size", "1"]),
    ("default", ["-stopping", "default", *STATS]),
    ("optimal", ["-stopping", "optimal", *STATS]),
    ("optimal-no-stats", ["-stopping", "optimal"]),
    ("exhaustive", ["-stopping", "exhaustive", *STATS]),
    ("shrinking", ["-stopping", "shrinking", *NONE, *STATS]),
    ("opennmt2017", ["-stopping", "opennmt2017", *STATS]),
    ("lp-none", [*NONE, "-stopping", "optimal", *STATS]),
    ("lp-avg", ["-length_penalty", "avg", "-stopping", "optimal", *STATS]),
    ("lp-wu", ["-length_penalty", "wu", "-alpha", "0.6", "-stopping", "optimal", *STATS]),
    ("reward", [*NONE, "-length_reward", "0.8", *STATS]),
    ("reward-ratio", [*NONE, "-length_reward", "1.2", *RATIO, *STATS]),
    ("shrinking-reward", ["-stopping", "shrinking", *NONE, "-length_reward", "1.2", *RATIO, *STATS]),
    ("bp-norm", [*NONE, "-bp_norm", *RATIO, *STATS]),
    ("bound-predicted", ["-length_penalty", "avg", "-bound", "predicted", *RATIO, *STATS]),
    ("nbest3", [*NONE, "-stopping", "optimal", "-n_best", "3", "-length_reward", "1.2", *RATIO, *STATS]),
    ("batch1", ["-batch_size", "1", *NONE, "-length_reward", "1.2", *RATIO, *STATS]),
    ("beam1", ["-beam_size", "1", "-stopping", "optimal", *STATS]),
    ("beam10", ["-beam_size", "10", *NONE, "-length_reward", "1.2", *RATIO, *STATS]),
    ("prune", [*NONE, "-stopping", "optimal", "-prune_dead", "-beam_size", "10", "-batch_size", "8", *STATS]),
    ("prune-reward-nbest3", [*NONE, "-prune_dead", "-n_best", "3", "-length_reward", "1.2", *RATIO,
                             "-batch_size", "8", *STATS]),
    ("prune-bp-norm-batch1", ["-batch_size", "1", *NONE, "-prune_dead", "-bp_norm", *RATIO, *STATS]),
    # no statistics file: onmt_translate skips the dead rows unasked (batches of 8; its output must not show it)
    ("quiet-optimal", [*NONE, "-stopping", "optimal", "-beam_size", "10", "-batch_size", "8"]),
    ("quiet-reward-nbest2", [*NONE, "-length_reward", "1.2", *RATIO, "-n_best", "2", "-batch_size", "8"]),
    (BAD_VALUE, ["-stopping", "bogus", *STATS]),
    (MISSING_SRC, ["-stopping", "optimal", *STATS]),
]

# transformers' generate: (name, keyword arguments); "custom": False is transformers' own beam search
HF_SETS: list[tuple[str, dict]] = [
    ("stock", {"custom": False}),
    ("stock-lp0", {"custom": False, "length_penalty": 0.0}),
    ("optimal", {"stopping": "optimal", "length_penalty": 0.0}),
    ("optimal-lp1", {"stopping": "optimal"}),
    ("exhaustive", {"stopping": "exhaustive", "length_penalty": 0.0}),
    ("shrinking", {"stopping": "shrinking", "length_penalty": 0.0}),
    ("default", {"stopping": "default"}),
    ("rules", {"stopping": ["optimal", "default", "exhaustive"], "length_penalty": 0.0}),
    ("reward", {"stopping": "optimal", "length_penalty": 0.0, "length_reward": 0.8}),
    ("reward-ratio", {"stopping": "optimal", "length_penalty": 0.0, "length_reward": 1.2, "length_ratio": 1.2}),
    ("bp-norm", {"stopping": "optimal", "bp_norm": True, "length_ratio": 1.2}),
    ("bound-predicted", {"stopping": "optimal", "bound": "predicted", "length_ratio": 1.2}),
    ("nbest3", {"stopping": "optimal", "length_penalty": 0.0, "num_return_sequences": 3}),
    ("batch1", {"stopping": "optimal", "length_penalty": 0.0, "length_reward": 1.2, "length_ratio": 1.2,
                "batch": 1}),
    ("beam1", {"stopping": "optimal", "length_penalty": 0.0, "num_beams": 1}),
    ("beam10", {"stopping": "optimal", "length_penalty": 0.0, "length_reward": 1.2, "length_ratio": 1.2,
                "num_beams": 10}),
    ("drop-finished", {"stopping": "optimal", "length_penalty": 0.0, "drop_finished": True}),
    (BAD_VALUE, {"stopping": "bogus"}),
]
HF_DEFAULTS = {"num_beams": 5, "max_new_tokens": 20, "batch": 32}

# vLLM: (name, settings) for ``vllm_worker``; "custom": False is vLLM's own ``LLM.beam_search``
VLLM_SETS: list[tuple[str, dict]] = [
    ("stock", {"custom": False}),
    ("stock-lp0", {"custom": False, "length_penalty": 0.0}),
    ("optimal", {"stopping": "optimal"}),
    ("optimal-lp0", {"stopping": "optimal", "length_penalty": 0.0}),
    ("exhaustive", {"stopping": "exhaustive"}),
    ("reward-ratio", {"stopping": "optimal", "length_reward": 1.2, "length_ratio": 1.2}),
    ("bp-norm", {"stopping": "optimal", "bp_norm": True, "length_ratio": 1.2}),
    ("beam1", {"stopping": "optimal", "length_penalty": 0.0, "beam_width": 1}),
    (BAD_VALUE, {"stopping": "bogus"}),
]
VLLM_DEFAULTS = {"beam_width": 4, "max_tokens": 16}
VLLM_PROMPTS = 5  # the toy slice's first 3 lines, an empty line, the longest line


@dataclass
class Job:
    toolkit: str  # "opennmt", "eole", "hf" or "vllm"
    model: str  # the model's name (a folder of the run)
    name: str  # the flag set's name
    argv: list[str] = field(default_factory=list)  # with {out} and {stats} still to fill in

    @property
    def key(self) -> str:
        return f"{self.toolkit}/{self.model}/{self.name}"

    def args(self) -> list[str]:
        return [a.replace("{out}", f"{self.key}.out").replace("{stats}", f"{self.key}.stats.jsonl")
                for a in self.argv]


def slice_of(dev: Path, dest: Path, n: int = SLICE_LINES) -> Path:
    """``dest``: the first ``n - 2`` lines of ``dev``, an empty line, then ``dev``'s longest line."""
    lines = dev.read_text(encoding="utf-8").splitlines()
    longest = max(lines, key=len)
    dest.write_text("\n".join([*lines[: n - 2], "", longest]) + "\n", encoding="utf-8")
    return dest


def shipped_config(root: Path, model: str, dest: Path) -> Path:
    """The model's ``configs/<model>/translate.yaml`` with its paths made absolute (they are relative to
    ``root``), so a run can work in any folder."""
    config = yaml.safe_load((root / "configs" / model / "translate.yaml").read_text())
    for key in ("model", "src_subword_model", "tgt_subword_model"):
        config[key] = str((root / config[key]).resolve())
    dest.write_text(yaml.safe_dump(config))
    return dest


def _cli_jobs(toolkit: str, model: str, head: list[str], src: Path, sets) -> list[Job]:
    jobs = []
    for name, flags in sets:
        source = [] if name == MISSING_SRC else ["-src", str(src)]
        jobs.append(Job(toolkit, model, name, [*head, *source, "-output", "{out}", "-verbose", *flags]))
    return jobs


def opennmt_jobs(config: Path, model: str, src: Path, sets=FLAG_SETS) -> list[Job]:
    """``onmt_translate -config <shipped config>`` jobs (beam 5, batch 32, max_length 100, no length cap)."""
    return _cli_jobs("opennmt", model, ["-config", str(config)], src, sets)


def toy_opennmt_jobs(checkpoint: Path, src: Path, sets=FLAG_SETS) -> list[Job]:
    head = ["-model", str(checkpoint), "-beam_size", "5", "-batch_size", "32", "-max_length", "30",
            "-max_length_ratio", "0"]
    return _cli_jobs("opennmt", "toy", head, src, sets)


def eole_jobs(model_dir: Path, model: str, src: Path, sets=FLAG_SETS) -> list[Job]:
    head = ["predict", "-model_path", str(model_dir), "-beam_size", "5", "-batch_size", "32", "-max_length",
            "30", "-max_length_ratio", "0"]
    return _cli_jobs("eole", model, head, src, sets)


def hf_jobs(model_dir: Path, model: str, kind: str, src: Path, sets=HF_SETS) -> list[Job]:
    jobs = []
    for name, kwargs in sets:
        settings = {**HF_DEFAULTS, **kwargs}
        jobs.append(Job("hf", model, name, ["--model", str(model_dir), "--kind", kind, "--src", str(src),
                                             "--output", "{out}", "--stats", "{stats}",
                                             "--settings", json.dumps(settings)]))
    return jobs


def vllm_jobs(model_dir: Path, model: str, src: Path, sets=VLLM_SETS) -> list[Job]:
    return [Job("vllm", model, name, ["--model", str(model_dir), "--src", str(src), "--output", "{out}",
                                      "--stats", "{stats}", "--settings", json.dumps({**VLLM_DEFAULTS, **kwargs})])
            for name, kwargs in sets]
