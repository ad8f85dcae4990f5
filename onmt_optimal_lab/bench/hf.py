"""The transformers benchmark: ``optimal_beam_search`` beside transformers' own beam search on the same model.

Models: a Marian encoder-decoder and a GPT-2 decoder, either trained here for a few hundred steps on a synthetic
task (source letters ``a..p``, each mapped to one upper-case letter, or two for ``i..p``) with a word-level
tokenizer trained by ``tokenizers``: small, but real models whose beams end at different steps; or, with
``model_dir``, the Multi30k German-English models of ``onmt_optimal_lab.bench.hf_models`` (translation-like outputs),
decoding the first ``lines`` sentences of ``src``.

Per model, beam size ``b`` and batch size, over the same inputs, each decode timed as the CPU time of the
decoding thread on the CPU (``time.thread_time``: the machine's other jobs do not count), as wall time between
two ``torch.cuda.synchronize`` on CUDA, rounds alternating the order (one untimed decode first warms the
device up):

* ``hf``: transformers' default beam search (``early_stopping=False``; at ``b = 1`` its greedy search);
* ``hf-never``: transformers' exact beam search (``early_stopping="never"``);
* ``optimal``: ``custom_generate=optimal_beam_search, stopping="optimal"`` (the batch keeps its shape);
* ``optimal-drop``: the same with ``drop_finished=True`` (done inputs leave the batch);

each under transformers' ``length_penalty`` 0 (the log-probability) and 1.0 (its default normalization).

Reported: sentences per second, decoder steps per sentence (transformers: the steps of the sentence's batch,
which runs until its last sentence is done; ours: the step the certificate held), and how often the default
heuristic's answer scores below the certificate's (the same beam, the same score; an answer is checked equal
to ``hf-never``'s, as the tests do).
"""
from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, MarianConfig, MarianMTModel, PreTrainedTokenizerFast

from onmt_optimal_lab.bench import hf_models as bench_models
from onmt_optimal.hf.generate import optimal_beam_search

LETTERS = "abcdefghijklmnop"
SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]


def target_of(words: list[str]) -> list[str]:
    return [w.upper() for w in words for _ in range(2 if w >= "i" else 1)]


def sources(n: int, seed: int, longest: int = 12) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(LETTERS) for _ in range(rng.randint(1, longest))) for _ in range(n)]


@dataclass
class Model:
    name: str
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerFast
    decoder_only: bool
    separator: str = "="

    def inputs(self, lines: list[str]) -> dict:
        lines = [f"{line} {self.separator}" for line in lines] if self.decoder_only else lines
        device = self.model.device
        return {k: v.to(device) for k, v in self.tokenizer(lines, return_tensors="pt", padding=True).items()}


def load(model_dir: Path, name: str, device: str) -> Model:
    """``model_dir/name`` as written by ``scripts/train_hf_multi30k.py`` (``bench_models.save``)."""
    model, tok = bench_models.load(model_dir / name)
    return Model(name, model.to(device), tok, name == "gpt2", "<sep>")


def _tokenizer(decoder_only: bool) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator([" ".join(LETTERS), " ".join(LETTERS.upper()), "="],
                            trainers.WordLevelTrainer(special_tokens=SPECIALS))
    if not decoder_only:
        tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   bos_token="<s>")
    fast.padding_side = "left" if decoder_only else "right"
    return fast


def train(decoder_only: bool, steps: int, width: int = 128, seed: int = 0) -> Model:
    """A model trained on the synthetic task (Adam, batches of 32)."""
    torch.manual_seed(seed)
    tok = _tokenizer(decoder_only)
    if decoder_only:
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=width, n_layer=2, n_head=4, n_positions=128,
                                           activation_function="gelu", bos_token_id=3, eos_token_id=1,
                                           pad_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    else:
        model = MarianMTModel(MarianConfig(vocab_size=len(tok), d_model=width, encoder_layers=2, decoder_layers=2,
                                           encoder_attention_heads=4, decoder_attention_heads=4,
                                           encoder_ffn_dim=2 * width, decoder_ffn_dim=2 * width,
                                           max_position_embeddings=128, pad_token_id=0, eos_token_id=1,
                                           decoder_start_token_id=0, forced_eos_token_id=1, dropout=0.0))
    model.generation_config.pad_token_id = 0
    optim = torch.optim.Adam(model.parameters(), lr=2e-3)
    rng = random.Random(seed)
    model.train()
    for _ in range(steps):
        batch = [" ".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 12))) for _ in range(32)]
        targets = [" ".join(target_of(line.split())) for line in batch]
        if decoder_only:
            tok.padding_side = "right"
            enc = tok([f"{s} = {t} </s>" for s, t in zip(batch, targets)], return_tensors="pt", padding=True)
            tok.padding_side = "left"
            labels = enc.input_ids.masked_fill(enc.attention_mask == 0, -100)
        else:
            enc = tok(batch, return_tensors="pt", padding=True)
            labels = tok(targets, return_tensors="pt", padding=True).input_ids
            labels = labels.masked_fill(labels == 0, -100)
        loss = model(**enc, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    model.eval()
    return Model("gpt2" if decoder_only else "marian", model, tok, decoder_only)


def saved_gpt2(steps: int, prefix: str, log=print) -> tuple[Model, Path]:
    """The synthetic task's GPT-2 trained ``steps`` steps (``train``) and saved, model and tokenizer, in a new
    temporary folder named ``prefix...``: what an engine that loads from a folder (vLLM) is given."""
    log(f"training the GPT-2 ({steps} steps)")
    model = train(True, steps)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    model.model.save_pretrained(folder)
    model.tokenizer.save_pretrained(folder)
    return model, folder


VARIANTS = {
    "hf": dict(),
    "hf-never": dict(early_stopping="never"),
    "optimal": dict(custom_generate=optimal_beam_search, stopping="optimal"),
    "optimal-drop": dict(custom_generate=optimal_beam_search, stopping="optimal", drop_finished=True),
}


def decode(m: Model, lines: list[str], variant: str, beam: int, batch: int, max_new_tokens: int,
           length_penalty: float):
    """Decode ``lines`` in batches; returns (CPU seconds, per-line scores, per-line steps, per-line sequences)."""
    calls = [0]
    hook = m.model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    seconds, scores, steps, texts = 0.0, [], [], []
    try:
        for i in range(0, len(lines), batch):
            chunk = lines[i:i + batch]
            inputs = m.inputs(chunk)
            calls[0] = 0
            start = clock(m.model.device)
            out = m.model.generate(**inputs, num_beams=beam, max_new_tokens=max_new_tokens,
                                   length_penalty=length_penalty, return_dict_in_generate=True, output_scores=not variant.startswith("optimal"),
                                   **VARIANTS[variant])
            seconds += clock(m.model.device) - start
            if variant.startswith("optimal"):
                steps += [s["steps"] for s in out.search_stats]
            else:
                steps += [calls[0]] * len(chunk)
            if getattr(out, "sequences_scores", None) is not None:  # (not from greedy search, b = 1)
                scores += out.sequences_scores.tolist()
            texts += out.sequences.tolist()
    finally:
        hook.remove()
    return seconds, scores, steps, texts


def clock(device: torch.device) -> float:
    """Seconds: the decoding thread's CPU time on the CPU; wall time after the queued kernels finish on CUDA."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return time.perf_counter()
    return time.thread_time()


def run(lines: int = 64, beams=(1, 5, 10), batches=(1, 16), rounds: int = 3, max_new_tokens: int = 48,
        train_steps: int = 400, models_=("marian", "gpt2"), length_penalties=(0.0, 1.0), log=print,
        model_dir: Path | None = None, src: list[str] | None = None, device: str = "cpu",
        max_seconds: float | None = None, dtype: str = "float32") -> dict:
    """The table's rows; with ``max_seconds``, no row starts after that many seconds (the rows done are kept).
    ``dtype``: each model is converted to it before decoding (``torch_dtype`` as users load models in;
    transformers and the search both cast each step's logits to float32)."""
    began = time.monotonic()
    torch.set_num_threads(1)
    if model_dir is None:
        src = sources(lines, seed=7)
    else:
        src = src[:lines]
        lines = len(src)
    results = {"lines": lines, "rounds": rounds, "max_new_tokens": max_new_tokens, "train_steps": train_steps,
               "torch": torch.__version__, "device": device, "dtype": dtype,
               "clock": "perf_counter, cuda.synchronize" if device == "cuda" else "thread_time",
               "models_from": str(model_dir) if model_dir is not None else None, "rows": []}
    import transformers

    results["transformers"] = transformers.__version__
    if device == "cuda":
        results["gpu"] = torch.cuda.get_device_name(0)
    loaded = {}
    for name in models_:
        if model_dir is None:
            log(f"training {name} ({train_steps} steps)")
            m = train(name == "gpt2", train_steps)
        else:
            m = load(model_dir, name, device)
        m.model.to(device=device, dtype=getattr(torch, dtype))
        decode(m, src[:max(batches)], "hf", max(beams), max(batches), max_new_tokens, 0.0)  # warm-up, untimed
        loaded[name] = m
    # the models alternate row by row, so that a time limit leaves out the same settings of each
    settings = [(lp, beam, batch, name) for lp in length_penalties for beam in beams for batch in batches
                for name in models_]
    for lp, beam, batch, name in settings:
        m = loaded[name]
        if max_seconds is not None and time.monotonic() - began > max_seconds:
            log(f"stopping: {max_seconds:g} s passed; {name} lp {lp:g} b {beam} batch {batch} and later rows left out")
            results["truncated"] = True
            break
        row = _row(m, src, lines, name, lp, beam, batch, rounds, max_new_tokens)
        log(json.dumps(row))
        results["rows"].append(row)
    results["rows"].sort(key=lambda r: list(models_).index(r["model"]))  # by model, each in the order above
    return results


def _row(m, src: list[str], lines: int, name: str, lp: float, beam: int, batch: int, rounds: int,
         max_new_tokens: int) -> dict:
    """One setting's row (``lines``: the inputs of ``src``): every variant decoded ``rounds`` times (the order
    reversed every other round), its best speed and mean steps, the ratios, and how the answers compare."""
    times = {v: [] for v in VARIANTS}
    answers = {}
    for r in range(rounds):
        order = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))
        for variant in order:
            seconds, scores, steps, texts = decode(m, src, variant, beam, batch, max_new_tokens, lp)
            times[variant].append(seconds)
            answers[variant] = (scores, steps, texts)
    row = {"model": name, "length_penalty": lp, "beam": beam, "batch": batch}
    for variant in VARIANTS:
        best = min(times[variant])
        row[f"{variant}_sent_per_s"] = lines / best
        row[f"{variant}_steps"] = statistics.mean(answers[variant][1])
    row["optimal_over_hf"] = row["optimal_sent_per_s"] / row["hf_sent_per_s"]
    row["optimal_over_hf_never"] = row["optimal_sent_per_s"] / row["hf-never_sent_per_s"]
    row["drop_over_hf"] = row["optimal-drop_sent_per_s"] / row["hf_sent_per_s"]
    if beam > 1:
        certified, default = answers["optimal"][0], answers["hf"][0]
        row["hf_worse"] = sum(d < c for d, c in zip(default, certified))
        row["same_as_hf_never"] = answers["optimal"][2] == answers["hf-never"][2]
    return row


def render(results: dict) -> str:
    cuda = results.get("device") == "cuda"
    where = f"CUDA, {results.get('gpu', 'GPU')}" if cuda else "CPU"
    clock = "wall time, CUDA synchronized" if cuda else "CPU time of the decoding thread"
    if results.get("models_from"):
        what = (f"the first {results['lines']} Multi30k dev sentences (German), models trained on Multi30k "
                f"German-English ({results['models_from']}; scripts/train_hf_multi30k.py)")
    else:
        what = (f"{results['lines']} inputs of the synthetic task, models trained {results['train_steps']} steps "
                "(onmt_optimal_lab/bench/hf.py)")
    lines = [
        f"# optimal_beam_search beside transformers' beam search ({where}"
        + (f", {results['dtype']} weights)" if results.get("dtype", "float32") != "float32" else ")"),
        "",
        f"transformers {results['transformers']}, torch {results['torch']}, one CPU thread; {what}, "
        f"max_new_tokens {results['max_new_tokens']}, best of {results['rounds']} rounds ({clock})"
        f"{'; stopped early at its time limit, rows after the last are missing' if results.get('truncated') else ''}. "
        "`hf`: transformers' default beam search "
        "(early_stopping=False; greedy search at b = 1); `hf-never`: its exact beam search; `optimal`: "
        "custom_generate=optimal_beam_search, stopping='optimal' (`-drop`: drop_finished=True); lp: transformers' length_penalty (its default "
        "1.0; 0: the log-probability), the score of all three. Steps: decoder steps per sentence (transformers: its batch's). `hf worse`: inputs where the "
        "default heuristic's answer scores below the certificate's; `= never`: the certificate's sequences are "
        "transformers' exact ones.",
        "",
        "| model | lp | b | batch | hf sent/s | hf-never sent/s | optimal sent/s | optimal-drop sent/s | optimal/hf "
        "| optimal/hf-never | optimal-drop/hf | steps hf | steps never | steps optimal | hf worse | = never |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        lines.append(
            f"| {r['model']} | {r['length_penalty']:g} | {r['beam']} | {r['batch']} | {r['hf_sent_per_s']:.1f} | "
            f"{r['hf-never_sent_per_s']:.1f} | {r['optimal_sent_per_s']:.1f} | {r['optimal-drop_sent_per_s']:.1f} | "
            f"{r['optimal_over_hf']:.3f} | {r['optimal_over_hf_never']:.3f} | {r['drop_over_hf']:.3f} | {r['hf_steps']:.1f} | {r['hf-never_steps']:.1f} | "
            f"{r['optimal_steps']:.1f} | {r.get('hf_worse', '-')} / {results['lines']} | "
            f"{r.get('same_as_hf_never', '-')} |")
    return "\n".join(lines) + "\n"

