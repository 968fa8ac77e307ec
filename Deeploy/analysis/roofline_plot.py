"""The roofline report as one self-contained HTML page: a log-log SVG plot (x: arithmetic
intensity in ops per byte, y: ops per cycle) with every engine peak as a horizontal roof and
every memory bandwidth as a diagonal roof, one point per layer (colour: engine; ring: its data
come from L3 or another level than the most common one; orange outline: overhead-bound,
its profile's cycles mostly overhead or under a quarter of its roof), the layers with the most cycles
numbered, a box describing the layer under the pointer, and the table below."""

from __future__ import annotations

import html
import math
from pathlib import Path

from Deeploy.analysis.roofline import OVERHEAD_BOUND, ROOF_EXPLAINS, Roofline

__all__ = ["roofline_html", "write_roofline_html"]

W, H = 1040, 620                 # plot area
ML, MR, MT, MB = 90, 230, 30, 60  # margins (right: roof labels and legend)
OVERHEAD = "#ff9900"             # outline of the overhead-bound layers
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
LABELLED = 10                    # layers with the most cycles get their index written beside them


def _decades(lo: float, hi: float) -> tuple[float, float]:
    return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))


def _scale(lo: float, hi: float, size: float, flip: bool):
    a, b = math.log10(lo), math.log10(hi)
    return lambda v: (size - (math.log10(v) - a) / (b - a) * size) if flip else (math.log10(v) - a) / (b - a) * size


def _fmt(v: float) -> str:
    return f"{v:g}" if v >= 0.01 else f"{v:.0e}"


def _svg(r: Roofline) -> str:
    pts = r.layers
    xs = [p.intensity for p in pts if p.intensity] or [1.0]
    ys = [p.achieved for p in pts] or [1.0]
    peaks = sorted(r.peaks.values(), key=lambda roof: roof.value)
    bws = sorted(r.bandwidths.values(), key=lambda roof: roof.value)
    ridges = [pk.value / bw.value for pk in peaks for bw in bws]
    x0, x1 = _decades(min(xs + ridges) / 2, max(xs + ridges) * 2)
    y0, y1 = _decades(min(ys) / 2, max([pk.value for pk in peaks] + ys) * 2)
    sx, sy = _scale(x0, x1, W, False), _scale(y0, y1, H, True)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W + ML + MR}" height="{H + MT + MB}" '
           f'font-family="sans-serif" font-size="13"><g transform="translate({ML},{MT})">',
           f'<rect width="{W}" height="{H}" fill="#fff" stroke="#444"/>']
    for e in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        x = sx(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{H}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="{H + 18}" text-anchor="middle">{_fmt(10 ** e)}</text>')
    for e in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        y = sy(10 ** e)
        out.append(f'<line x1="0" y1="{y:.1f}" x2="{W}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="-8" y="{y + 4:.1f}" text-anchor="end">{_fmt(10 ** e)}</text>')
    out.append(f'<text x="{W / 2}" y="{H + 45}" text-anchor="middle" font-size="15">arithmetic intensity '
               f'(ops per byte moved from the level its data come from)</text>'
               f'<text transform="translate(-65,{H / 2}) rotate(-90)" text-anchor="middle" font-size="15">'
               f'achieved ops per cycle</text>')
    out.append('<defs><clipPath id="area"><rect width="%d" height="%d"/></clipPath></defs><g clip-path="url(#area)">'
               % (W, H))
    for bw in bws:           # y = bw * x, up to the highest peak
        xa, xb = x0, min(x1, peaks[-1].value / bw.value)
        out.append(f'<line class="roof" x1="{sx(xa):.1f}" y1="{sy(bw.value * xa):.1f}" x2="{sx(xb):.1f}" '
                   f'y2="{sy(bw.value * xb):.1f}" stroke="#555" stroke-width="2"><title>{html.escape(bw.name)}: '
                   f'{bw.value:g} B/cycle ({html.escape(bw.why)})</title></line>')
    for pk in peaks:         # from the ridge with the widest bandwidth on
        xa = pk.value / bws[-1].value if bws else x0
        out.append(f'<line class="roof" x1="{sx(max(xa, x0)):.1f}" y1="{sy(pk.value):.1f}" x2="{W}" '
                   f'y2="{sy(pk.value):.1f}" stroke="#222" stroke-width="2.5"><title>{html.escape(pk.name)}: '
                   f'{pk.value:g} ops/cycle ({html.escape(pk.why)})</title></line>')
    engines = sorted({p.engine for p in pts})
    colour = {e: COLOURS[k % len(COLOURS)] for k, e in enumerate(engines)}
    levels = [lv for lv, _ in sorted(((lv, sum(p.level == lv for p in pts)) for lv in {p.level for p in pts}),
                                     key=lambda t: -t[1])]
    groups: dict[tuple[int, int], list] = {}   # layers drawn at the same spot share one label
    for p in sorted(pts, key=lambda p: -p.cycles):
        x, y = sx(p.intensity), sy(p.achieved)
        groups.setdefault((round(x / 4), round(y / 4)), []).append((x, y, p))
        ring = p.level != (levels[0] if levels else None)
        fill = "none" if ring else colour[p.engine]
        info = (f"#{p.index} {p.name} ({p.op}, {p.engine}): {p.ops} ops, {p.intensity:.3g} ops/B from {p.level}, "
                f"{p.cycles:.0f} cycles, {p.achieved:.3g} ops/cycle = {100 * p.of_roof:.1f}% of its roof "
                f"{p.roof:.3g} ({p.bound}-bound)")
        slow = p.bound == "overhead"
        out.append(f'<circle class="pt{" overhead" if slow else ""}" cx="{x:.1f}" cy="{y:.1f}" r="{6 if slow else 5}" '
                   f'fill="{fill}" fill-opacity="0.75" stroke="{OVERHEAD if slow else colour[p.engine]}" '
                   f'stroke-width="{2.5 if slow else 2 if ring else 1}" data-info="{html.escape(info)}">'
                   f'<title>{html.escape(info)}</title></circle>')
    placed: list[tuple[float, float, float]] = []   # (x, y, width) of the labels written
    for members in sorted(groups.values(), key=lambda g: -sum(m[2].cycles for m in g))[:LABELLED]:
        x, y, p = members[0]
        ops = sorted({m[2].op for m in members})
        text = f"{ops[0]}{' etc.' if len(ops) > 1 else ''}" + (f" x{len(members)}" if len(members) > 1 else f" #{p.index}")
        width = 7 * len(text)
        spots = [(lx, y + dy) for dy in (4, -12, 20, -28, 36, -44, 52)
                 for lx in (x + 8, x - 8 - width) if 0 <= lx and lx + width <= W]
        free = [(lx, ly) for lx, ly in spots
                if not any(lx < px + pw and px < lx + width and abs(ly - py) < 14 for px, py, pw in placed)]
        if not free:
            continue   # no room beside the point: pointing at it still tells its numbers
        lx, ly = free[0]
        placed.append((lx, ly, width))
        out.append(f'<text class="label" x="{lx:.1f}" y="{ly:.1f}">{html.escape(text)}</text>')
    out.append("</g>")
    for bw in bws:           # labels outside the clip, at the right edge or where the diagonal ends
        xb = min(x1, peaks[-1].value / bw.value)
        y = sy(bw.value * xb)
        out.append(f'<text x="{min(sx(xb), W) - 4:.1f}" y="{y - 6:.1f}" text-anchor="end" fill="#555">'
                   f'{html.escape(bw.name)} {bw.value:g} B/cycle</text>')
    for pk in peaks:
        out.append(f'<text x="{W + 8}" y="{sy(pk.value) + 4:.1f}">{html.escape(pk.name)}: {pk.value:g} ops/cycle</text>')
    slow = any(p.bound == "overhead" for p in pts)
    ly = H - 20 * (len(engines) + len(levels[1:]) + 2 * slow) - 10
    for k, e in enumerate(engines):
        out.append(f'<circle cx="{W + 16}" cy="{ly + 20 * k}" r="5" fill="{colour[e]}"/>'
                   f'<text x="{W + 28}" y="{ly + 20 * k + 4}">{html.escape(e)}, data from {levels[0]}</text>')
    for k, lv in enumerate(levels[1:], start=len(engines)):
        out.append(f'<circle cx="{W + 16}" cy="{ly + 20 * k}" r="5" fill="none" stroke="#444" stroke-width="2"/>'
                   f'<text x="{W + 28}" y="{ly + 20 * k + 4}">ring: data from {html.escape(str(lv))}</text>')
    if slow:
        k = len(engines) + len(levels[1:])
        out.append(f'<circle cx="{W + 16}" cy="{ly + 20 * k}" r="6" fill="none" stroke="{OVERHEAD}" stroke-width="2.5"/>'
                   f'<text x="{W + 28}" y="{ly + 20 * k + 4}">overhead-bound: &#8805; {100 * OVERHEAD_BOUND:.0f}% '
                   f'overhead</text><text x="{W + 28}" y="{ly + 20 * k + 22}">or &lt; {100 * ROOF_EXPLAINS:.0f}% of '
                   'its roof</text>')
    out.append("</g></svg>")
    return "\n".join(out)


def _table(r: Roofline) -> str:
    levels = sorted({lv for p in r.layers for lv in p.bytes})
    head = ["#", "layer", "op", "engine", "ops", *(f"{lv} B" for lv in levels), "from", "ops/B", "cycles",
            "ops/cycle", "roof", "% of roof", "bound"]
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
        p.index, p.name, p.op, p.engine, p.ops, *(p.bytes.get(lv, 0) for lv in levels), p.level,
        f"{p.intensity:.3g}", f"{p.cycles:.0f}", f"{p.achieved:.3g}", f"{p.roof:.3g}", f"{100 * p.of_roof:.1f}",
        p.bound)) + "</tr>" for p in r.layers)
    return ("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>" + rows + "</table>")


def roofline_html(r: Roofline, title: str) -> str:
    cycles = ("modelled cycles from the run's profile" if r.cycles == "profile"
              else "cycles estimated by the tiler's cost model (the network did not run)")
    roofs = "".join(f"<li><b>{html.escape(x.name)}</b>: {x.value:g} {unit} ({html.escape(x.why)})</li>"
                    for group, unit in ((r.peaks, "ops/cycle"), (r.bandwidths, "B/cycle")) for x in group.values())
    regions = "".join(f"<li>region <b>{html.escape(s.name)}</b>: {s.iterations} iterations of {s.body_layers} layers; "
                      f"{s.parameter_bytes} B of parameters per iteration in {s.body_cycles:.0f} cycles need "
                      f"{s.needed:.3g} B/cycle of {html.escape(s.available_name)}'s {s.available:g} B/cycle "
                      f"({100 * s.share:.1f}%)</li>" for s in r.regions)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in r.notes)
    skipped = "".join(f"<p>Not plotted: {len(names)} layers {why}.</p>" for names, why in (
        (r.skipped, "without arithmetic (data movement)"), (r.no_cycles, "without cycles")) if names)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #111; }}
#info {{ min-height: 2.6em; font-size: 14px; background: #f4f4f4; padding: 6px 10px; border-radius: 4px; max-width: 1300px; }}
text.label {{ font-size: 12px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }}
th {{ text-align: left; }}
circle.pt:hover {{ stroke: #000; stroke-width: 3; r: 8; }}
line.roof:hover {{ stroke-width: 5; }}
table {{ border-collapse: collapse; font-size: 12px; margin-top: 12px; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: right; }}
td:nth-child(2), td:nth-child(3), td:nth-child(4) {{ text-align: left; }}
</style></head><body>
<h2>{html.escape(title)}</h2>
<p>{html.escape(r.source)} on {html.escape(r.platform)}, {r.cores} cores, {'tiled' if r.tiled else 'untiled'}:
{cycles}. Ops: a MAC counts 2. Each layer sits at its arithmetic intensity towards the level whose roof is
lowest for it; its roof is min(engine peak, intensity &times; that level's bandwidth).</p>
<div id="info">Point at a layer or a roof.</div>
{_svg(r)}
<ul>{roofs}{regions}{notes}</ul>
{skipped}
{_table(r)}
<script>
const info = document.getElementById('info');
document.querySelectorAll('circle.pt').forEach(c => c.addEventListener('mouseover', () => {{
  info.textContent = c.dataset.info; }}));
document.querySelectorAll('line.roof').forEach(l => l.addEventListener('mouseover', () => {{
  info.textContent = l.querySelector('title').textContent; }}));
</script>
</body></html>
"""


def write_roofline_html(path: Path, r: Roofline, title: str) -> Path:
    path = Path(path)
    path.write_text(roofline_html(r, title))
    return path
