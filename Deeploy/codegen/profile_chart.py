"""A self-contained HTML page (inline SVG, no JavaScript, no network) of a profile
(``profile.json``, ``Deeploy/targets/siracusa/trace_export.py``): on top the network total split
into compute, exposed DMA and overhead and the largest loss; then one horizontal bar, split the
same way, per op type, per group of alike layers (the largest), and per layer in execution order.
Hovering a bar shows its parts in cycles."""

from __future__ import annotations

import html
import math

__all__ = ["profile_chart_html", "PART_COLOURS"]

PART_COLOURS = {"compute": "#4e79a7", "exposed_dma": "#e15759", "overhead": "#bab0ac"}
_PART_NAMES = {"compute": "compute", "exposed_dma": "exposed DMA", "overhead": "overhead"}
_LABEL_W, _BAR_W, _NUM_W, _ROW, _BAR_H = 470, 680, 200, 18, 13
_LABEL_CHARS = 72        # what _LABEL_W holds at 11 px


def _cut(text: str, chars: int = _LABEL_CHARS) -> str:
    """``text``, cut in the middle only when longer than ``chars``."""
    if len(text) <= chars:
        return text
    return text[:chars // 2] + "\u2026" + text[len(text) - (chars - chars // 2 - 1):]


def _bar(y: float, values: dict, scale: float, title: str) -> list[str]:
    out, x = [], _LABEL_W
    for part, colour in PART_COLOURS.items():
        w = values[part] * scale
        if w > 0:
            out.append(f'<rect class="{part}" x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{_BAR_H}" '
                       f'fill="{colour}"><title>{html.escape(title)}</title></rect>')
            x += w
    return out


def _title(head: str, entry: dict) -> str:
    parts = ", ".join(f"{_PART_NAMES[p]} {entry[p]:.0f}" for p in PART_COLOURS)
    return f"{head}: {entry['cycles']:.0f} cycles ({parts})"


def _layer_row(entry: dict) -> tuple[str, dict, str]:
    label = f"{entry['index']} {entry['name']}" + (f" ({entry['op']})" if entry["op"] else "")
    return label, entry, _title(f"[{entry['index']}] {entry['op']} '{entry['name']}' -> {entry['kernel']}", entry)


def _group_row(entry: dict, name: str) -> tuple[str, dict, str]:
    label = f"{name} x{entry['layers']}" if entry["layers"] > 1 else name
    return label, entry, _title(f"{label}, {entry['cycles'] / entry['layers']:.0f} cycles each", entry)


def _axis(top: float) -> tuple[float, int]:
    """(tick step, ticks): a 1-2-5 step giving 4 to 8 ticks up to at least ``top``."""
    step = 10 ** math.floor(math.log10(max(top, 1.0) / 4))
    for factor in (1, 2, 5, 10):
        if top / (step * factor) <= 8:
            step *= factor
            break
    return step, max(1, math.ceil(top / step))


def _rows(rows: list[tuple[str, dict, str]], total: float) -> str:
    """One labelled, stacked bar per (label, parts, hover title), on a common cycles axis."""
    step, ticks = _axis(max((entry["cycles"] for _, entry, _ in rows), default=1.0))
    scale = _BAR_W / (step * ticks)
    width, height = _LABEL_W + _BAR_W + _NUM_W, 30 + _ROW * len(rows)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{_LABEL_W - 6}" y="10" text-anchor="end" fill="#555">cycles</text>']
    for k in range(ticks + 1):
        x = _LABEL_W + k * step * scale
        svg.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height}" stroke="#ddd"/>')
        svg.append(f'<text x="{x:.1f}" y="10" text-anchor="middle" fill="#555">{k * step:,.0f}</text>')
    for row, (label, entry, title) in enumerate(rows):
        y = 20 + row * _ROW
        svg.append(f'<text x="{_LABEL_W - 6}" y="{y + 10}" text-anchor="end">{html.escape(_cut(label))}'
                   f'<title>{html.escape(title)}</title></text>')
        svg += _bar(y, entry, scale, title)
        share = 100 * entry["cycles"] / total if total else 0.0
        svg.append(f'<text x="{_LABEL_W + entry["cycles"] * scale + 6:.2f}" y="{y + 10}" fill="#333">'
                   f'{entry["cycles"]:,.0f} ({share:.1f}%)</text>')
    svg.append("</svg>")
    return "".join(svg)


def profile_chart_html(profile: dict) -> str:
    """The page for ``profile`` (the dict written to profile.json)."""
    layers = profile["layers"]
    total = ", ".join(f'<span class="key" style="background:{c}"></span>{_PART_NAMES[p]} {profile[p]:,.0f} '
                      f'({100 * profile[p] / profile["cycles"] if profile["cycles"] else 0:.1f}%)'
                      for p, c in PART_COLOURS.items())
    dma = "; ".join(f"{e['name']} DMA busy {e['busy']:,.0f} cycles ({e['transfers']} transfers, {e['bytes']:,} B)"
                    for e in profile["engines"]["dma"] if e["transfers"])
    total_bar = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="16">'.format(_LABEL_W + _BAR_W)]
    whole = _BAR_W / profile["cycles"] if profile["cycles"] else 0.0
    total_bar += _bar(1, {p: profile[p] * whole for p in PART_COLOURS}, 1.0, _title("network", profile))
    total_bar.append("</svg>")
    name = html.escape(f"{profile['platform']}: {profile['network']}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Cycles per layer - {name}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
header {{ position: sticky; top: 0; background: #fff; padding-bottom: 6px; border-bottom: 1px solid #ccc; }}
h1 {{ font-size: 18px; margin: 0 0 4px 0; }}
h2 {{ font-size: 15px; margin: 14px 0 4px 0; }}
p {{ margin: 2px 0; font-size: 13px; }}
.loss {{ margin: 6px 0; padding: 4px 8px; background: #fff4e5; border-left: 4px solid #e8a33d; }}
.key {{ display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 10px; vertical-align: -1px; }}
</style></head><body>
<header><h1>Cycles per layer - {name}</h1>
<p><b>Network: {profile['cycles']:,.0f} {'modelled ' if 'modelled' in profile.get('cycles_are', '') else ''}cycles</b>
 over {len(layers)} layers: {total}</p>
<p>{html.escape(dma) or 'no DMA'}; {profile['engines']['cores']['count']} cores.
 Exposed DMA: cycles the cores spent issuing and waiting for transfers; the engines' other busy cycles are hidden
 behind compute. Hover a bar for its parts.</p>
{''.join(total_bar)}
<p class="loss">{html.escape(profile['largest_loss'])}</p>
</header>
<h2>Cycles per op type</h2>
{_rows([_group_row(e, e['op']) for e in profile['op_types']], profile['cycles'])}
<h2>The largest layers (alike layers, their names equal but for numbers, together)</h2>
{_rows([_group_row(e, f"{e['name']} ({e['op']})") for e in profile['largest']], profile['cycles'])}
<h2>Every layer, in execution order</h2>
{_rows([_layer_row(e) for e in layers], profile['cycles'])}
</body></html>
"""
