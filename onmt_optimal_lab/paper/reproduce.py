"""The paper's experiments on one corpus (``scripts/reproduce.py``): the dev sweep, each decoder tuned on dev, and
the test decodes at the tuned and the fixed settings, as the rows and per-sentence records the report reads.

Decoders that share a beam decode together (``sweep.decode_all``): one decode per beam size for the ordinary beam
and one for the shrinking beam. Every family is tuned to its highest dev BLEU, ties going to the smaller beam, then
the smaller reward; that includes the historical rule (``HISTORICAL``, OpenNMT-py's search of early 2017, the
paper's baseline), since the paper tuned every decoder of its Table 3 on dev. Besides the tuned settings, test is
decoded at fixed ones (``fixed_settings``): the stock default and the historical rule at ``fixed_beams``
(OpenNMT-py's b = 5, the paper's b = 16), and default, optimal stopping and the historical rule at ``steps_beams``
for the steps saved per sentence.
"""
from __future__ import annotations

from pathlib import Path

from tqdm import tqdm

from onmt_optimal_lab.paper.report.paper import HISTORICAL
from onmt_optimal.search.registry import STOPPING_RULES
from onmt_optimal.tools.sweep import Decoder, decode_all, paper_decoders, summarize


def decoders(rewards: list[float]) -> list[Decoder]:
    """The paper's comparison (``paper_decoders``), and the historical rule where the search core has it."""
    out = paper_decoders(rewards)
    if HISTORICAL in STOPPING_RULES:
        out.append(Decoder(HISTORICAL, HISTORICAL, "logprob"))
    return out


def output_key(decoder: Decoder, beam: int) -> str:
    """File-name key of one test output: family, reward where it has one, beam size (``optimal_reward.r1.2.b19``)."""
    return decoder.family + (f".r{decoder.reward:g}" if decoder.reward is not None else "") + f".b{beam}"


def fixed_settings(by_family: dict, fixed_beams: list[int], steps_beams: list[int]) -> list[tuple[str, int]]:
    """(family, beam) decoded on test besides the tuned settings: the stock default (and the historical rule
    where present) at ``fixed_beams``; default, optimal and historical at ``steps_beams``."""
    out = []
    for beam in fixed_beams:
        out += [(f, beam) for f in ("default", HISTORICAL) if f in by_family]
    for beam in steps_beams:
        out += [(f, beam) for f in ("default", "optimal", HISTORICAL) if f in by_family]
    return list(dict.fromkeys(out))


def best_setting(rows: list[dict]) -> dict:
    """Highest dev BLEU; ties go to the smaller beam, then the smaller reward."""
    return max(rows, key=lambda r: (r["bleu"], -r["beam"], -(r["reward"] or 0.0)))


def tuned_and_fixed(decoders: list[Decoder], dev_rows: list[dict], fixed_beams: list[int], steps_beams: list[int]):
    """(tuned: {family: its best dev row}, settings: [(decoder, beam, "tuned" or "fixed")]). Every family is
    tuned, the historical rule (the paper's baseline) too."""
    tuned = {}
    for decoder in decoders:
        tuned[decoder.family] = best_setting([r for r in dev_rows if r["family"] == decoder.family])
    settings = []
    for family, row in tuned.items():
        decoder = next(d for d in decoders if d.family == family and d.reward == row["reward"])
        settings.append((decoder, row["beam"], "tuned"))
    by_family = {d.family: d for d in decoders if d.reward is None}
    for family, beam in fixed_settings(by_family, fixed_beams, steps_beams):
        settings.append((by_family[family], beam, "fixed"))
    return tuned, settings


def decode_test(session, src: Path, refs: list[list[str]], settings, ratio: float, hyp_dir: Path):
    """Decode ``src`` once per beam size for every setting's decoder (a tqdm bar over the beam sizes) and write
    each output to ``hyp_dir/test.KEY.txt`` (stale ones removed first). Returns ``({key: (summary, records)},
    the BLEU signature, decodes run)``."""
    wanted = {}
    for decoder, beam, _ in settings:
        if decoder not in wanted.setdefault(beam, []):
            wanted[beam].append(decoder)
    hyp_dir.mkdir(exist_ok=True)
    for stale in hyp_dir.glob("test.*.txt"):
        stale.unlink()
    decoded, signature, n_decodes = {}, "", 0
    for beam, group in tqdm(sorted(wanted.items()), desc="test decodes (beam sizes)"):
        results = decode_all(session, src, beam, group, ratio)
        n_decodes += len({d.shrinks for d in group})
        for decoder, records in results.items():
            summary = summarize(decoder, beam, records, refs)
            signature = summary["signature"]
            key = output_key(decoder, beam)
            decoded[key] = (summary, records)
            (hyp_dir / f"test.{key}.txt").write_text("".join(r["text"] + "\n" for r in records), encoding="utf-8")
    return decoded, signature, n_decodes


def eval_rows(decoders: list[Decoder], settings, tuned: dict, dev_rows: list[dict], decoded: dict) -> list[dict]:
    """One row per setting: its dev numbers (the tuned row, or the sweep's at that beam) and its test numbers,
    tuned settings first, then in the decoders' order and by beam."""
    rows = []
    for decoder, beam, setting in settings:
        summary, _ = decoded[output_key(decoder, beam)]
        dev = tuned[decoder.family] if setting == "tuned" else next(
            (r for r in dev_rows if r["family"] == decoder.family and r["beam"] == beam), None)
        rows.append({
            "family": decoder.family, "beam": beam, "reward": decoder.reward, "setting": setting,
            "dev_bleu": dev["bleu"] if dev else None, "dev_length_ratio": dev["length_ratio"] if dev else None,
            "test_bleu": summary["bleu"], "test_length_ratio": summary["length_ratio"],
            "test_mean_steps": summary["mean_steps"], "test_mean_log_prob": summary["mean_log_prob"],
            "hyp": f"hyps/test.{output_key(decoder, beam)}.txt",
        })
    order = [d.family for d in decoders]
    rows.sort(key=lambda r: (r["setting"] != "tuned", order.index(r["family"]), r["beam"]))
    return rows


def sentences(src_lines: list[str], decoded: dict) -> dict:
    """Per-sentence records for the statistics: source tokens, and each output's steps, lengths and
    log-probabilities (``test_sentences.json``)."""
    return {
        "src_tokens": [len(line.split()) for line in src_lines],
        "outputs": {key: {"steps": [r["steps"] for r in records], "length": [r["length"] for r in records],
                          "log_prob": [round(float(r["log_prob"]), 4) for r in records]}
                    for key, (_, records) in sorted(decoded.items())},
    }
