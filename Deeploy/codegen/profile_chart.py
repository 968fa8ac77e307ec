"""A self-contained HTML page (inline SVG, no JavaScript, no network) of a profile's cycles per
layer: one horizontal bar per layer in execution order, split into compute, exposed DMA and
overhead (``profile.json``, ``Deeploy/targets/siracusa/trace_export.py``), with the network total
on top. Hovering a bar shows the layer's op, kernel and every part in cycles."""

from __future__ import annotations

import html
import math

__all__ = ["profile_chart_html", "PART_COLOURS"]

PART_COLOURS = {"compute": "#4e79a7", "exposed_dma": "#e15759", "overhead": "#bab0ac"}
_PART_NAMES = {"compute": "compute", "exposed_dma": "exposed DMA", "overhead": "overhead"}
_LABEL_W, _BAR_W, _NUM_W, _ROW, _BAR_H = 340, 740, 200, 18, 13


def _label(entry: dict, chars: int = 46) -> str:
    """'index name (op)', the name cut in the middle to fit ``chars``."""
    head, tail = f"{entry['index']} ", f" ({entry['op']})" if entry["op"] else ""
    name, room = entry["name"], max(chars - len(head) - len(tail), 12)
    if len(name) > room:
        name = name[:room // 2] + "\u2026" + name[len(name) - (room - room // 2 - 1):]
    return head + name + tail


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


def _axis(top: float) -> tuple[float, int]:
    """(tick step, ticks): a 1-2-5 step giving 4 to 8 ticks up to at least ``top``."""
    step = 10 ** math.floor(math.log10(max(top, 1.0) / 4))
    for factor in (1, 2, 5, 10):
        if top / (step * factor) <= 8:
            step *= factor
            break
    return step, max(1, math.ceil(top / step))


def _rows(layers: list[dict], total: float) -> str:
    """One labelled, stacked bar per layer, on a common cycles axis."""
    step, ticks = _axis(max((entry["cycles"] for entry in layers), default=1.0))
    scale = _BAR_W / (step * ticks)
    width, height = _LABEL_W + _BAR_W + _NUM_W, 30 + _ROW * len(layers)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{_LABEL_W - 6}" y="10" text-anchor="end" fill="#555">cycles</text>']
    for k in range(ticks + 1):
        x = _LABEL_W + k * step * scale
        svg.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height}" stroke="#ddd"/>')
        svg.append(f'<text x="{x:.1f}" y="10" text-anchor="middle" fill="#555">{k * step:,.0f}</text>')
    for row, entry in enumerate(layers):
        y = 20 + row * _ROW
        svg.append(f'<text x="{_LABEL_W - 6}" y="{y + 10}" text-anchor="end">{html.escape(_label(entry))}'
                   f'<title>{html.escape(_title(entry))}</title></text>')
        svg += _bar(y, entry, scale, _title(entry))
        share = 100 * entry["cycles"] / total if total else 0.0
        svg.append(f'<text x="{_LABEL_W + entry["cycles"] * scale + 6:.2f}" y="{y + 10}" fill="#333">'
                   f'{entry["cycles"]:,.0f} ({share:.1f}%)</text>')
    svg.append("</svg>")
    return "".join(svg)


def profile_chart_html(profile: dict, largest: int = 12) -> str:
    """The page for ``profile`` (the dict written to profile.json): the network total, the
    ``largest`` layers by cycles, then every layer in execution order."""
    layers = profile["layers"]
    top = sorted(layers, key=lambda e: -e["cycles"])[:largest]
    total = ", ".join(f'<span class="key" style="background:{c}"></span>{_PART_NAMES[p]} {profile[p]:,.0f} '
                      f'({100 * profile[p] / profile["cycles"] if profile["cycles"] else 0:.1f}%)'
                      for p, c in PART_COLOURS.items())
    dma = "; ".join(f"{e['name']} DMA busy {e['busy']:,.0f} cycles ({e['transfers']} transfers, {e['bytes']:,} B)"
                    for e in profile["engines"]["dma"] if e["transfers"])
    total_bar = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="16">'.format(_LABEL_W + _BAR_W)]
    whole = _BAR_W / profile["cycles"] if profile["cycles"] else 0.0
    total_bar += _bar(1, {p: profile[p] * whole for p in PART_COLOURS}, 1.0, _title({**profile, "name": "network"}))
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
<h2>The {len(top)} largest layers</h2>
{_rows(top, profile['cycles'])}
<h2>Every layer, in execution order</h2>
{_rows(layers, profile['cycles'])}
</body></html>
"""
