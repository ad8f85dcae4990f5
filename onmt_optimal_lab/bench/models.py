"""The benchmark's models: ``--config`` names with their dev sets in the shared data folder, or config paths."""
from __future__ import annotations

from pathlib import Path

DATA = "../shared/data"
# --config shortcuts: translate config, raw dev source, raw dev references, Moses-escaped training data
MODELS = {
    "tvsub": ("configs/tvsub-zh-en/translate.yaml", f"{DATA}/tvsub-zh-en/dev.zh", [f"{DATA}/tvsub-zh-en/dev.en"],
              True),
    "multi30k": ("configs/multi30k-de-en/translate.yaml", f"{DATA}/multi30k-de-en/val.de",
                 [f"{DATA}/multi30k-de-en/val.en"], False),
    "transformer": ("configs/multi30k-de-en-transformer/translate.yaml", f"{DATA}/multi30k-de-en/val.de",
                    [f"{DATA}/multi30k-de-en/val.en"], False),
}


class UsageError(ValueError):
    """A ``--config`` (or its data) that cannot be benchmarked; the message is the command line's one line."""


def resolve_models(args) -> list[dict]:
    """``--config`` names (``MODELS``) or one translate config path; the dev data comes from the name, or from a
    path's matching name, unless ``--src``/``--refs`` say otherwise. One clear line on a bad name or path."""
    models = []
    for item in [c.strip() for c in args.config.split(",") if c.strip()]:
        name = item if item in MODELS else next((n for n, m in MODELS.items() if m[0] == item), None)
        if name is None and not Path(item).is_file():
            raise UsageError(f"--config {item}: neither a model name ({', '.join(MODELS)}) nor a config file")
        config, src, refs, unescape = MODELS[name] if name else (item, None, None, False)
        src, refs = args.src or src, args.refs or refs
        if src is None or not refs:
            raise UsageError(f"--config {item}: give its dev data with --src and --refs")
        src = src.replace(DATA, args.data, 1) if not args.src else src
        refs = [r.replace(DATA, args.data, 1) for r in refs] if not args.refs else refs
        for path in [config, src, *refs, model_path(config)]:
            if path and not Path(path).is_file():
                raise UsageError(f"--config {item}: no such file: {path}")
        models.append({"name": name or Path(item).parent.name, "config": config, "src": src, "refs": refs,
                       "unescape_moses": unescape if args.unescape_moses is None else args.unescape_moses})
    if not models:
        raise UsageError("--config: no model given")
    return models


def model_path(config: str) -> str | None:
    """The checkpoint a translate config names (None if it names none, e.g. a -model flag comes later)."""
    import yaml

    try:
        model = (yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}).get("model")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return model[0] if isinstance(model, list) and model else model if isinstance(model, str) else None

