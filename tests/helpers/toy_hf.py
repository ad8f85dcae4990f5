"""Tiny transformers models trained in the test run, with a tokenizer trained by the ``tokenizers`` library.

Data: ``toy``'s synthetic task (source letters ``a..p``; each maps to one or two upper-case letters).

* ``encoder_decoder``: a Marian model (``MarianMTModel`` from a ``MarianConfig``: one encoder and one decoder
  layer, 32 dimensions) trained on the task; the tokenizer appends ``</s>`` to a source, as Marian's does;
* ``decoder_only``: a GPT-2 model (``GPT2LMHeadModel``, two layers) trained on ``letters = MAP </s>`` lines,
  with left-padded prompts ``letters =`` at generation time.

150 Adam steps each (under a minute on two cores): neither learns the task well, both give real, varied
beams that end with ``</s>`` at different steps, which is what the comparisons need.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import GPT2Config, GPT2LMHeadModel, MarianConfig, MarianMTModel, PreTrainedTokenizerFast

from helpers import toy

SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]
PAD, EOS, UNK, BOS = range(4)


@dataclass
class Toy:
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerFast
    kind: str

    def inputs(self, lines: list[str]) -> dict:
        """The model's inputs for ``lines`` (source letters), padded as the model needs (decoder-only: on the left,
        with the prompt's ``=``)."""
        if self.kind == "decoder_only":
            lines = [f"{line} =" for line in lines]
        return dict(self.tokenizer(lines, return_tensors="pt", padding=True))


def sources(n: int, seed: int, max_len: int = 8) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(toy.LETTERS) for _ in range(rng.randint(1, max_len))) for _ in range(n)]


def tokenizer(kind: str) -> PreTrainedTokenizerFast:
    """A word-level tokenizer trained on the task's words (``tokenizers``' ``WordLevelTrainer``)."""
    words = [" ".join(toy.LETTERS), " ".join(toy.LETTERS.upper()), "="]
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(words, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    if kind == "encoder_decoder":
        tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", EOS)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   bos_token="<s>")
    fast.padding_side = "left" if kind == "decoder_only" else "right"
    return fast


def train(kind: str, steps: int = 150, seed: int = 0, width: int = 32) -> Toy:
    """``width``: the GPT-2's embedding size (two heads of ``width / 2``; vLLM's CPU attention needs 32 or more)."""
    torch.manual_seed(seed)
    tok = tokenizer(kind)
    V = len(tok)
    if kind == "encoder_decoder":
        config = MarianConfig(vocab_size=V, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                              decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                              max_position_embeddings=64, pad_token_id=PAD, eos_token_id=EOS,
                              decoder_start_token_id=PAD, forced_eos_token_id=EOS, dropout=0.0)
        model = MarianMTModel(config)
    else:
        config = GPT2Config(vocab_size=V, n_embd=width, n_layer=2, n_head=2, n_inner=2 * width, n_positions=64,
                            activation_function="gelu", bos_token_id=BOS,
                            eos_token_id=EOS, pad_token_id=PAD, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = GPT2LMHeadModel(config)
    model.generation_config.pad_token_id = PAD
    optim = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    model.train()
    for _ in range(steps):
        batch = [" ".join(rng.choice(toy.LETTERS) for _ in range(rng.randint(1, 8))) for _ in range(32)]
        targets = [" ".join(toy.target_of(line.split())) for line in batch]
        if kind == "encoder_decoder":
            enc = tok(batch, return_tensors="pt", padding=True)
            labels = tok(targets, return_tensors="pt", padding=True).input_ids
            labels[labels == PAD] = -100
            loss = model(**enc, labels=labels).loss
        else:
            tok.padding_side = "right"
            enc = tok([f"{s} = {t} </s>" for s, t in zip(batch, targets)], return_tensors="pt", padding=True)
            tok.padding_side = "left"
            labels = enc.input_ids.clone()
            labels[enc.attention_mask == 0] = -100
            loss = model(**enc, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    model.eval()
    return Toy(model, tok, kind)
