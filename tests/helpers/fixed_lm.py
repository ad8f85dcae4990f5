"""A real transformers model whose next-token log-probabilities are a fixed function of the prefix.

``FixedLM`` is a ``PreTrainedModel`` with ``GenerationMixin``: ``generate`` drives it as any decoder-only model
(its own beam search, or ``custom_generate=optimal_beam_search``), but its logits come from
``synthetic``'s ``SyntheticModel`` (the core's reference distributions: one pseudo-random
distribution per (example, prefix), the same in any batch). The prompt is one token, the example's id;
the generated tokens are the prefix. No cache (``use_cache=False``): each call sees the whole sequence.
"""
from __future__ import annotations

import torch
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput

from helpers.synthetic import BOS, EOS, PAD, SyntheticModel


class FixedConfig(PretrainedConfig):
    model_type = "onmt_optimal_fixed_lm"

    def __init__(self, vocab_size=10, seed=0, eos_bias=0.0, sharpness=2.0, **kwargs):
        kwargs.setdefault("pad_token_id", PAD)
        kwargs.setdefault("bos_token_id", BOS)
        kwargs.setdefault("eos_token_id", EOS)
        super().__init__(**kwargs)
        self.vocab_size, self.seed, self.eos_bias, self.sharpness = vocab_size, seed, eos_bias, sharpness


class FixedLM(PreTrainedModel, GenerationMixin):
    config_class = FixedConfig

    def __init__(self, config: FixedConfig):
        super().__init__(config)
        self.unused = torch.nn.Parameter(torch.zeros(1))  # a model has parameters (its device and dtype)
        self.synthetic = SyntheticModel(config.vocab_size, config.seed, config.eos_bias, config.sharpness)
        self.generation_config.use_cache = False
        self.calls = 0

    def forward(self, input_ids, attention_mask=None, **kwargs):
        self.calls += 1
        rows = [self.synthetic.log_probs(row[0], tuple(row[1:])) for row in input_ids.tolist()]
        last = torch.stack(rows).unsqueeze(1)  # (rows, 1, V): only the last position is read
        logits = last.expand(-1, input_ids.shape[1], -1)
        return CausalLMOutput(logits=logits)


def fixed_lm(seed: int, vocab_size: int = 10, eos_bias: float = 0.0, sharpness: float = 2.0) -> FixedLM:
    return FixedLM(FixedConfig(vocab_size=vocab_size, seed=seed, eos_bias=eos_bias, sharpness=sharpness)).eval()


def prompts(examples: list[int]) -> dict:
    """One prompt token a row: the example's id (any id; ``SyntheticModel`` hashes it)."""
    ids = torch.tensor([[e] for e in examples])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
