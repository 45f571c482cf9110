"""``fastsim models``: the model presets, one row each, with what sets their work apart (size,
attention shape, sliding windows, experts) and the Hugging Face repo whose config.json they are."""
from __future__ import annotations

import json

import click

COLUMNS = ("name", "family", "params (B)", "active (B)", "layers", "heads/kv", "head_dim", "sliding window",
           "experts", "kind", "source")


@click.command("models")
@click.option("--json", "as_json", is_flag=True, help="print the rows as a JSON list of objects")
def models_cmd(as_json):
    """The model presets --model accepts (each the stored config.json of the repo named in source).

    Example: fastsim models --json"""
    rows = preset_rows()
    if as_json:
        click.echo(json.dumps(rows))
        return
    cells = [COLUMNS] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    for c in cells:
        click.echo("  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())


def preset_rows() -> list[dict]:
    """One JSON-ready row per preset, in ``SOURCES`` order."""
    from ..llm.presets import MODELS, SOURCES

    return [{"name": name, "family": m.family, "params": m.params, "active_params": m.active_params,
             "layers": m.num_layers, "heads": m.num_heads, "kv_heads": m.num_kv_heads, "head_dim": m.head_dim,
             "sliding_window": windows_text(m), "experts": experts_text(m),
             "kind": "encoder" if m.encoder else "decoder", "source": SOURCES[name]}
            for name, m in MODELS.items()]


def _cells(r: dict) -> tuple[str, ...]:
    return (r["name"], r["family"], f"{r['params'] / 1e9:.2f}", f"{r['active_params'] / 1e9:.2f}", str(r["layers"]),
            f"{r['heads']}/{r['kv_heads']}", str(r["head_dim"]), r["sliding_window"], r["experts"], r["kind"],
            r["source"])


def windows_text(m) -> str:
    """"512 on 22 of 26 layers" (one clause per window size), or "none" when every layer is global."""
    sizes = sorted({w for w in m.windows if w})
    if not sizes:
        return "none"
    return "; ".join(f"{w} on {m.windows.count(w)} of {m.num_layers} layers" for w in sizes)


def experts_text(m) -> str:
    """"8, 2 per token", with "+ shared" for a shared expert and the MoE layers if not all; "-"
    for a dense model."""
    e = m.experts
    if e is None:
        return "-"
    text = f"{e.count}, {e.per_token} per token" + (" + shared" if e.shared_ffn_size else "")
    if m.moe_layers:
        text += f" (on {len(m.moe_layers)} of {m.num_layers} layers)"
    return text
