"""A tiny GPT-2 for vLLM, trained in the test run and saved in transformers' format with its tokenizer.

``toy_hf``'s decoder-only model and task (``letters = MAP </s>``), 64 wide: vLLM's CPU attention takes heads of
32 dimensions or more. vLLM loads the folder as any Hub model (``LLM(model=folder)``).
"""
from __future__ import annotations

from pathlib import Path

from helpers import toy_hf


def train(folder: Path, steps: int = 150, seed: int = 0) -> toy_hf.Toy:
    """Train the model, save it and its tokenizer into ``folder``; return it."""
    trained = toy_hf.train("decoder_only", steps=steps, seed=seed, width=64)
    trained.model.save_pretrained(folder)
    trained.tokenizer.save_pretrained(folder)
    return trained


def prompts(toy: toy_hf.Toy, n: int, seed: int, max_len: int = 8) -> list[dict]:
    """``n`` token prompts ``letters =`` (vLLM's ``TokensPrompt`` form) of random sources."""
    return [{"prompt_token_ids": toy.tokenizer(f"{line} =").input_ids}
            for line in toy_hf.sources(n, seed, max_len)]
