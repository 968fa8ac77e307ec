"""A self-contained HTML page (inline SVG, no JavaScript, no network) of a profile's cycles per
layer: one horizontal bar per layer in execution order, split into compute, exposed DMA and
overhead (``profile.json``, ``Deeploy/targets/siracusa/trace_export.py``), with the network total
on top. Hovering a bar shows the layer's op, kernel and every part in cycles."""

from __future__ import annotations

import html

__all__ = ["profile_chart_html", "PART_COLOURS"]

PART_COLOURS = {"compute": "#4e79a7", "exposed_dma": "#e15759", "overhead": "#bab0ac"}
_PART_NAMES = {"compute": "compute", "exposed_dma": "exposed DMA", "overhead": "overhead"}
_LABEL_W, _BAR_W, _NUM_W, _ROW, _BAR_H = 300, 760, 230, 18, 13


def _cut(text: str, chars: int = 44) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "\u2026"


def _bar(y: float, values: dict, scale: float, title: str) -> list[str]:
    out, x = [], _LABEL_W
    for part, colour in PART_COLOURS.items():
        w = values[part] * scale
        if w > 0:
            out.append(f'<rect class="{part}" x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{_BAR_H}" '
                       f'fill="{colour}"><title>{html.escape(title)}</title></rect>')
            x += w
    return out


def _title(entry: dict) -> str:
    parts = ", ".join(f"{_PART_NAMES[p]} {entry[p]:.0f}" for p in PART_COLOURS)
    head = f"[{entry['index']}] {entry['op']} '{entry['name']}' -> {entry['kernel']}" if "index" in entry else "network"
    return f"{head}: {entry['cycles']:.0f} cycles ({parts})"


def profile_chart_html(profile: dict) -> str:
    """The page for ``profile`` (the dict written to profile.json)."""
    layers = profile["layers"]
    top = max((entry["cycles"] for entry in layers), default=1.0) or 1.0
    scale = _BAR_W / top
    width = _LABEL_W + _BAR_W + _NUM_W
    height = 30 + _ROW * len(layers)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">']
    svg.append(f'<text x="{_LABEL_W - 6}" y="10" text-anchor="end" fill="#555">cycles</text>')
    for k in range(5):
        x = _LABEL_W + k * _BAR_W / 4
        svg.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height}" stroke="#ddd"/>')
        svg.append(f'<text x="{x:.1f}" y="10" text-anchor="middle" fill="#555">{top * k / 4:,.0f}</text>')
    for row, entry in enumerate(layers):
        y = 20 + row * _ROW
        label = f"{entry['index']:>3} {entry['name']} ({entry['op']})"
        svg.append(f'<text x="{_LABEL_W - 6}" y="{y + 10}" text-anchor="end">{html.escape(_cut(label))}'
                   f'<title>{html.escape(_title(entry))}</title></text>')
        svg += _bar(y, entry, scale, _title(entry))
        share = 100 * entry["cycles"] / profile["cycles"] if profile["cycles"] else 0.0
        x = _LABEL_W + entry["cycles"] * scale + 6
        svg.append(f'<text x="{x:.2f}" y="{y + 10}" fill="#333">{entry["cycles"]:,.0f} ({share:.1f}%)</text>')
    svg.append("</svg>")
    total = ", ".join(f'<span class="key" style="background:{c}"></span>{_PART_NAMES[p]} {profile[p]:,.0f} '
                      f'({100 * profile[p] / profile["cycles"] if profile["cycles"] else 0:.1f}%)'
                      for p, c in PART_COLOURS.items())
    dma = "; ".join(f"{e['name']} DMA busy {e['busy']:,.0f} cycles ({e['transfers']} transfers, {e['bytes']:,} B)"
                    for e in profile["engines"]["dma"] if e["transfers"])
    total_bar = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="16">'.format(_LABEL_W + _BAR_W)]
    total_bar += _bar(1, {p: profile[p] * (_BAR_W / profile["cycles"] if profile["cycles"] else 0) for p in PART_COLOURS},
                      1.0, _title({**profile, "name": "network"}))
    total_bar.append("</svg>")
    name = html.escape(f"{profile['platform']}: {profile['network']}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Cycles per layer - {name}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
header {{ position: sticky; top: 0; background: #fff; padding-bottom: 6px; border-bottom: 1px solid #ccc; }}
h1 {{ font-size: 18px; margin: 0 0 4px 0; }}
p {{ margin: 2px 0; font-size: 13px; }}
.key {{ display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 10px; vertical-align: -1px; }}
</style></head><body>
<header><h1>Cycles per layer - {name}</h1>
<p><b>Network: {profile['cycles']:,.0f} {'modelled ' if 'modelled' in profile.get('cycles_are', '') else ''}cycles</b>
 over {len(layers)} layers: {total}</p>
<p>{html.escape(dma) or 'no DMA'}; {profile['engines']['cores']['count']} cores.
 Exposed DMA: cycles the cores spent issuing and waiting for transfers; the engines' other busy cycles are hidden
 behind compute. Hover a bar for its parts.</p>
{''.join(total_bar)}
</header>
{''.join(svg)}
</body></html>
"""
