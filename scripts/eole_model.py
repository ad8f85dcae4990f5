"""An eole 0.6.4 model directory made from an OpenNMT-py 3.5.1 attentional LSTM checkpoint (``make eole-model``:
``models/tvsub-zh-en`` -> ``models/tvsub-zh-en-eole``), in eole's environment.

eole 0.6.4 has no converter for OpenNMT-py checkpoints: ``eole convert`` takes Hugging Face, T5, COMET, MetricX
and GGUF models, and ``eole convert onmt_config`` converts a training YAML, not its weights. The two toolkits
keep an RNN's weights under the same names, but for the embeddings, so the weights move over as they are; the
model's config is eole's description of the same network, built and checked by eole's own ``build_model_config``:

* eole's ``rnn`` architecture forces a one-directional encoder (``RnnModelConfig`` sets ``encoder_type: rnn``),
  so the bidirectional encoder (OpenNMT-py's ``brnn``) is described with eole's ``custom`` architecture;
* eole's embeddings add a sinusoidal position encoding unless ``position_encoding_type`` is null (its default
  applies to RNNs too); OpenNMT-py's RNN has none: it is set to null.

The directory holds ``config.json`` (the model, and the ``sentencepiece`` transform on the two SentencePiece
models copied beside it, found through eole's ``${MODEL_PATH}``), ``vocab.json`` (the checkpoint's vocabularies
and decoder start token) and ``model.00.safetensors``. Written into a new directory, renamed into place whole.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile

#: OpenNMT-py 3.5.1's name -> eole 0.6.4's, where they differ
RENAMES = {"encoder.embeddings.make_embedding.emb_luts.0.weight": "src_emb.embeddings.weight",
           "decoder.embeddings.make_embedding.emb_luts.0.weight": "tgt_emb.embeddings.weight"}
SPECIALS = {"unk_token": "<unk>", "pad_token": "<blank>", "bos_token": "<s>", "eos_token": "</s>"}


def model_config(opt) -> dict:
    """eole's ``model`` section for the checkpoint's options ``opt`` (an attentional LSTM with input feeding)."""
    if (opt.encoder_type, opt.decoder_type, opt.rnn_type) not in (("brnn", "rnn", "LSTM"), ("rnn", "rnn", "LSTM")):
        raise SystemExit(f"eole_model: only LSTM encoder-decoders are converted (got {opt.encoder_type}/"
                         f"{opt.decoder_type}/{opt.rnn_type})")
    return {"architecture": "custom", "hidden_size": opt.hidden_size, "layers": opt.dec_layers,
            "embeddings": {"word_vec_size": opt.word_vec_size, "src_word_vec_size": opt.src_word_vec_size,
                           "tgt_word_vec_size": opt.tgt_word_vec_size, "position_encoding_type": None},
            "encoder": {"encoder_type": opt.encoder_type, "rnn_type": opt.rnn_type, "hidden_size": opt.hidden_size,
                        "layers": opt.enc_layers, "src_word_vec_size": opt.src_word_vec_size, "bridge": opt.bridge},
            "decoder": {"decoder_type": "rnn", "rnn_type": opt.rnn_type, "hidden_size": opt.hidden_size,
                        "layers": opt.dec_layers, "tgt_word_vec_size": opt.tgt_word_vec_size,
                        "bidirectional_encoder": opt.encoder_type == "brnn", "bridge": opt.bridge,
                        "global_attention": opt.global_attention, "context_gate": opt.context_gate,
                        "coverage_attn": opt.coverage_attn, "with_cross_attn": True},
            "share_decoder_embeddings": opt.share_decoder_embeddings, "input_feed": opt.input_feed,
            "generator_function": opt.generator_function}


def convert(source: str, target: str) -> None:
    """``source`` (an OpenNMT-py model directory: ``model.pt``, ``src.spm.model``, ``tgt.spm.model``) as the eole
    model directory ``target``."""
    import torch
    from eole.config.models import build_model_config
    from safetensors.torch import save_file

    checkpoint = torch.load(os.path.join(source, "model.pt"), map_location="cpu", weights_only=False)
    opt, vocab = checkpoint["opt"], checkpoint["vocab"]
    model = model_config(opt)
    build_model_config(dict(model))  # eole's own check of the description
    # (copies: the generator shares its weight with the target embeddings, and safetensors keeps no shared tensor)
    weights = {RENAMES.get(name, name): tensor.clone() for name, tensor in checkpoint["model"].items()}
    weights.update({f"generator.{name}": tensor.clone() for name, tensor in checkpoint["generator"].items()})
    spm = {"src_subword_model": "${MODEL_PATH}/src.spm.model", "tgt_subword_model": "${MODEL_PATH}/tgt.spm.model"}
    config = {"model": model, "transforms": ["sentencepiece"], "transforms_configs": {"sentencepiece": spm},
              "training": {"compute_dtype": "fp32"}, "share_vocab": False,
              # (eole's TrainConfig, which eole reads the file with, requires them; inference reads vocab.json)
              "src_vocab": "${MODEL_PATH}/vocab.json", "tgt_vocab": "${MODEL_PATH}/vocab.json"}
    parent = os.path.dirname(os.path.abspath(target))
    work = tempfile.mkdtemp(prefix=".eole-model-", dir=parent)
    try:
        save_file(weights, os.path.join(work, "model.00.safetensors"))
        with open(os.path.join(work, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
        with open(os.path.join(work, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump({"src": vocab["src"], "tgt": vocab["tgt"], "decoder_start_token": vocab["decoder_start_token"],
                       "specials": SPECIALS}, f, ensure_ascii=False)
        for name in ("src.spm.model", "tgt.spm.model"):
            shutil.copyfile(os.path.join(source, name), os.path.join(work, name))
        if os.path.isdir(target):
            shutil.rmtree(target)
        umask = os.umask(0)
        os.umask(umask)
        for name in os.listdir(work):  # (mkdtemp and safetensors make them private)
            os.chmod(os.path.join(work, name), 0o666 & ~umask)
        os.chmod(work, 0o777 & ~umask)
        os.rename(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="the OpenNMT-py model directory (model.pt, src.spm.model, tgt.spm.model)")
    parser.add_argument("target", help="the eole model directory to make (replaced whole if it exists)")
    args = parser.parse_args(argv)
    convert(args.source, args.target)
    print(f"eole model written to {args.target}")


if __name__ == "__main__":
    main()
