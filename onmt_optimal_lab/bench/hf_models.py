"""The transformers benchmark's translation models: a Marian encoder-decoder and a GPT-2 decoder trained on
Multi30k German-English, saved with ``save_pretrained`` and loaded back for ``onmt_optimal_lab.bench.hf``.

Tokenizer: one byte-pair-encoding vocabulary for both languages, trained by ``tokenizers`` (``Metaspace``
pre-tokenizer and decoder, so text comes back as written), with the specials ``<pad> </s> <unk> <s> <sep>``
at ids 0-4. The Marian tokenizer appends ``</s>`` to every text (source and labels); Marian's decoder starts
from ``<pad>``, as Marian's do. GPT-2 reads ``SOURCE <sep> TARGET </s>`` and is prompted with ``SOURCE <sep>``
(left-padded).

Training (``train``): Adam, a linear warm-up then the inverse square root of the step, batches of sentences,
cross-entropy on the target tokens, until ``steps`` or ``seconds`` run out. Saved weights are fp16 (half the
size); ``load`` returns them as fp32.
"""
from __future__ import annotations

import gzip
import json
import random
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, MarianConfig, MarianMTModel, PreTrainedTokenizerFast

SPECIALS = ["<pad>", "</s>", "<unk>", "<s>", "<sep>"]
PAD, EOS, UNK, BOS, SEP = range(5)
KINDS = ("marian", "gpt2")


def read_lines(path: Path) -> list[str]:
    """A text file, plain or ``.gz``, one sentence a line (surrounding blanks removed)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.strip() for line in f]


def train_tokenizer(texts: list[str], vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                                       show_progress=False))
    return tok


def wrap(tok: Tokenizer, kind: str) -> PreTrainedTokenizerFast:
    tok = Tokenizer.from_str(tok.to_str())
    if kind == "marian":
        tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", EOS)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   bos_token="<s>", sep_token="<sep>")
    fast.padding_side = "left" if kind == "gpt2" else "right"
    return fast


def build(kind: str, vocab_size: int, width: int, layers: int, max_positions: int) -> torch.nn.Module:
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size, n_embd=width, n_layer=2 * layers, n_head=4,
                                          n_inner=4 * width, n_positions=2 * max_positions,
                                          bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD))
    return MarianMTModel(MarianConfig(vocab_size=vocab_size, d_model=width, encoder_layers=layers,
                                      decoder_layers=layers, encoder_attention_heads=4, decoder_attention_heads=4,
                                      encoder_ffn_dim=4 * width, decoder_ffn_dim=4 * width,
                                      max_position_embeddings=max_positions, pad_token_id=PAD, eos_token_id=EOS,
                                      decoder_start_token_id=PAD, forced_eos_token_id=EOS))


def _batch(kind: str, tok: PreTrainedTokenizerFast, src: list[str], tgt: list[str]) -> dict:
    if kind == "gpt2":
        tok.padding_side = "right"
        enc = dict(tok([f"{s} <sep> {t} </s>" for s, t in zip(src, tgt)], return_tensors="pt", padding=True))
        tok.padding_side = "left"
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        # the loss is on the target only: mask the source and the separator
        sep = (enc["input_ids"] == SEP).int().cumsum(1)
        labels = labels.masked_fill((sep == 0) | (enc["input_ids"] == SEP), -100)
        return dict(enc, labels=labels)
    enc = dict(tok(src, return_tensors="pt", padding=True))
    labels = tok(tgt, return_tensors="pt", padding=True)["input_ids"]
    return dict(enc, labels=labels.masked_fill(labels == PAD, -100))


def train(kind: str, tok: Tokenizer, src: list[str], tgt: list[str], *, steps: int, seconds: float, width: int,
          layers: int, batch: int, max_positions: int, lr: float = 1e-3, warmup: int = 400, seed: int = 1234,
          log=print) -> tuple[torch.nn.Module, PreTrainedTokenizerFast, dict]:
    torch.manual_seed(seed)
    fast = wrap(tok, kind)
    model = build(kind, tok.get_vocab_size(), width, layers, max_positions)
    model.generation_config.pad_token_id = PAD
    optim = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: min((s + 1) / warmup, (warmup / (s + 1)) ** 0.5))
    rng = random.Random(seed)
    order: list[int] = []
    model.train()
    start, step, loss_sum = time.monotonic(), 0, 0.0
    while step < steps and time.monotonic() - start < seconds:
        if len(order) < batch:
            order = list(range(len(src)))
            rng.shuffle(order)
        idx, order = order[:batch], order[batch:]
        loss = model(**_batch(kind, fast, [src[i] for i in idx], [tgt[i] for i in idx])).loss
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        step += 1
        loss_sum += loss.item()
        if step % 200 == 0:
            log(f"{kind}: step {step}, loss {loss_sum / 200:.3f}, {time.monotonic() - start:.0f} s")
            loss_sum = 0.0
    model.eval()
    info = {"kind": kind, "steps": step, "seconds": round(time.monotonic() - start, 1), "batch": batch,
            "sentences_seen": step * batch, "parameters": sum(p.numel() for p in model.parameters()),
            "width": width, "layers": layers}
    return model, fast, info


def save(model: torch.nn.Module, tok: PreTrainedTokenizerFast, info: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(out)
    model.float()
    tok.save_pretrained(out)
    (out / "training.json").write_text(json.dumps(info, indent=1) + "\n")


def load(path: Path) -> tuple[torch.nn.Module, PreTrainedTokenizerFast]:
    """A model folder written by ``save``: the model (fp32, eval mode) and its tokenizer."""
    cls = GPT2LMHeadModel if json.loads((path / "config.json").read_text())["model_type"] == "gpt2" else MarianMTModel
    model = cls.from_pretrained(path, dtype=torch.float32)
    model.generation_config.pad_token_id = PAD
    tok = PreTrainedTokenizerFast.from_pretrained(path)
    tok.padding_side = "left" if cls is GPT2LMHeadModel else "right"
    return model.eval(), tok
