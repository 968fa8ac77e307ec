"""A self-contained HTML picture of each memory level's buffers over the schedule.

One panel per memory level, each an inline SVG: the x axis is the schedule (one column per step,
i.e. per layer), the y axis the address in the level's arena (growing upwards), and every buffer a
rectangle spanning the steps it is live for and the bytes it occupies. Hovering a rectangle shows
its label, offset, size and steps (an SVG ``<title>``); hovering an empty column shows the step.
A dashed line marks the level's capacity and the panel heading gives the peak usage.

Standard library only, no network: the file opens in any browser, offline. Long schedules stay
readable: every step keeps at least ``_STEP_MIN`` pixels and a panel scrolls sideways; a small
inline script (optional: without it the page shows everything) adds zoom buttons and a layer
filter (a name, an op or a step range such as ``40-80``: buffers live at the matching steps stay,
the others fade; ``memory_allocation.html#filter=MatMul&zoom=2`` opens filtered and zoomed).
L1 tile slots are coloured by their operand's role (input, weight, output tile) and kernel
scratch apart. The output is a function of the input alone (no timestamps, no
hash-order dependence), so two runs over the same plan produce the same bytes.

Scales. Each panel's ``<svg>`` carries its scales as data attributes, so a reader (or a test) can
map a rectangle back to steps and bytes::

    x      = data-x0 + first * data-step-px
    width  = (last + 1 - first) * data-step-px
    bottom = data-y0 - offset * data-byte-px          (address 0 at data-y0, addresses grow up)
    height = max(size * data-byte-px, data-min-h)     (tiny buffers stay visible)
    y      = bottom - height

with every coordinate written rounded to two decimals. The address range plotted is the larger of
the capacity and the highest end address used, rounded up to a whole y tick; when the capacity is
more than ``CAPACITY_OFF_SCALE`` times the highest end address (a large L3, say) the range follows
the buffers instead and the capacity is noted above the plot rather than drawn.
"""

from __future__ import annotations

import html
import math
import os
import re
import tempfile
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import Sequence

from Deeploy.manifest import Manifest
from Deeploy.memory.report import memory_levels

__all__ = ["PlotBuffer", "PlotLevel", "write_memory_plot", "write_manifest_plot", "KIND_COLOURS",
           "CAPACITY_OFF_SCALE"]

# Colours per kind (Tableau 10 hues: distinct, readable on white, fine with most colour-vision
# deficiencies when combined with the tooltips). Unknown kinds take EXTRA_COLOURS in sorted order.
KIND_COLOURS: dict[str, str] = {
    "input": "#4e79a7",
    "output": "#e15759",
    "constant": "#59a14f",
    "weight": "#9c755f",          # a weight memory's contents (NPU weights read in place)
    "activation": "#f28e2b",
    "tile": "#76b7b2",
    "input tile": "#76b7b2",
    "weight tile": "#8cd17d",
    "output tile": "#ff9da7",
    "scratch": "#edc948",
    "staging": "#b07aa1",
    "streamed": "#79706e",        # a rolled region's parameters, two iterations' worth
    "": "#bab0ac",
}
EXTRA_COLOURS = ("#ff9da7", "#9c755f", "#a0cbe8", "#8cd17d", "#d37295", "#fabfd2", "#86bcb6", "#d4a6c8")

CAPACITY_OFF_SCALE = 4.0   # capacity above this many times the highest end address is not drawn

# Layout, in pixels.
_LEFT = 100         # room for the address labels and the first step label
_RIGHT = 28
_TOP = 22           # room for the capacity label
_PLOT_H = 340
_PLOT_W = 960       # target width of the step axis
_STEP_MIN = 7.0     # below this a panel grows wider than _PLOT_W and scrolls
_STEP_MAX = 120.0
_LABEL_GAP = 13.0   # minimum distance between two step labels
_LABEL_CHARS = 30   # step labels longer than this are cut in the middle (the full text is in the column tooltip)
_CHAR_W = 5.8       # rough advance of one 10 px character
_MIN_H = 1.0        # minimum drawn height of a buffer


@dataclass(frozen=True)
class PlotBuffer:
    """One buffer of a memory level: live over steps [first, last], at [offset, offset + size)."""

    label: str        # e.g. tensor name, or "conv1: x tile (slot 2/2)"
    offset: int       # bytes from the start of the level's arena
    size: int         # bytes
    first: int        # first schedule step (layer index) during which it is live, inclusive
    last: int         # last step, inclusive
    kind: str = ""    # category for the colour: input, output, constant, activation, scratch, staging, tile
                      # (or by role: input tile, weight tile, output tile)

    def __post_init__(self) -> None:
        for field in ("offset", "size", "first", "last"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, Integral):
                raise ValueError(f"buffer {self.label!r}: {field} must be an integer, got {value!r}")
            object.__setattr__(self, field, int(value))
        object.__setattr__(self, "label", str(self.label))
        object.__setattr__(self, "kind", str(self.kind))
        if self.size < 0:
            raise ValueError(f"buffer {self.label!r}: negative size {self.size}")
        if self.offset < 0:
            raise ValueError(f"buffer {self.label!r}: negative offset {self.offset}")
        if self.first < 0:
            raise ValueError(f"buffer {self.label!r}: negative first step {self.first}")
        if self.last < self.first:
            raise ValueError(f"buffer {self.label!r}: last step {self.last} before first step {self.first}")


@dataclass(frozen=True)
class PlotLevel:
    """One memory level: its name, capacity in bytes (None: unbounded) and buffers."""

    name: str                 # "L1", "L2", "L3"
    capacity: int | None      # bytes available (None: unbounded)
    buffers: tuple[PlotBuffer, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "buffers", tuple(self.buffers))
        cap = self.capacity
        if cap is not None:
            if isinstance(cap, bool) or not isinstance(cap, Integral):
                raise ValueError(f"level {self.name!r}: capacity must be an integer or None, got {cap!r}")
            if cap < 0:
                raise ValueError(f"level {self.name!r}: negative capacity {cap}")
            object.__setattr__(self, "capacity", int(cap))
        for b in self.buffers:
            if not isinstance(b, PlotBuffer):
                raise ValueError(f"level {self.name!r}: expected PlotBuffer, got {type(b).__name__}")


def write_memory_plot(path: Path, title: str, steps: Sequence[str], levels: Sequence[PlotLevel]) -> Path:
    """One panel per level: x axis = schedule steps (labelled with steps[i], e.g. 'k: op name'),
    y axis = address (bytes); each buffer a rectangle [first, last+1) x [offset, offset+size) with a
    tooltip (<title>) giving label, offset, size, steps; a dashed line at the capacity and the peak
    usage written in the panel heading. Writes the file atomically (temp file + rename) and returns the path.

    Raises ValueError when a buffer lives at a step outside ``range(len(steps))`` (and, from the
    dataclasses, on negative sizes, offsets, steps or capacities and on last < first)."""
    path = Path(path)
    steps = [str(s) for s in steps]
    levels = list(levels)
    for level in levels:
        if not isinstance(level, PlotLevel):
            raise ValueError(f"expected PlotLevel, got {type(level).__name__}")
        for b in level.buffers:
            if b.last >= len(steps):
                raise ValueError(
                    f"level {level.name!r}, buffer {b.label!r}: steps {b.first}..{b.last} out of range, "
                    f"the schedule has {len(steps)} step(s)" + (f" (0..{len(steps) - 1})" if steps else ""))

    text = _render(str(title), steps, levels)
    _write_atomic(path, text.encode("utf-8"))
    return path


def write_manifest_plot(path: Path, title: str, manifest: Manifest) -> Path:
    """The plot of a compiled network's buffers as its manifest lists them (``memory_levels``)."""
    steps, levels = memory_levels(manifest)
    return write_memory_plot(path, title, steps, [
        PlotLevel(level.name, level.capacity,
                  tuple(PlotBuffer(b.name, b.offset, b.size, b.first, b.last,
                                   f"{b.role} tile" if b.kind == "tile" and b.role else b.kind)
                        for b in level.buffers))
        for level in levels])


# ---------------------------------------------------------------------------------------------
# Rendering


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _esc(s: str) -> str:
    """Escaped for HTML and XML text and attributes; characters XML forbids become U+FFFD."""
    return html.escape(_XML_BAD.sub("\ufffd", s), quote=True)


def _num(v: float) -> str:
    """A coordinate: two decimals at most, no trailing zeros, no '-0'."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _bytes(n: int) -> str:
    """Human-readable byte count: '512 B', '1.5 KiB', '64 KiB', '8 MiB'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def _kind_classes(levels: Sequence[PlotLevel]) -> dict[str, tuple[str, str]]:
    """kind -> (css class, colour), known kinds in the canonical order, then the others sorted."""
    present = {b.kind for level in levels for b in level.buffers}
    ordered = [k for k in KIND_COLOURS if k in present] + sorted(present - KIND_COLOURS.keys())
    out, extra = {}, 0
    for i, kind in enumerate(ordered):
        colour = KIND_COLOURS.get(kind)
        if colour is None:
            colour = EXTRA_COLOURS[extra % len(EXTRA_COLOURS)]
            extra += 1
        out[kind] = (f"k{i}", colour)
    return out


_CSS = """\
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;margin:16px 20px}
h1{font-size:18px;margin:0 0 6px}
h2{font-size:15px;margin:18px 0 4px}
h2 .d{font-weight:normal;color:#555}
h2 .over{color:#c00;font-weight:bold}
p.note{color:#555;margin:2px 0 8px}
p.empty{color:#777;font-style:italic;margin:2px 0 8px 12px}
ul.legend{list-style:none;padding:0;margin:6px 0 4px;display:flex;flex-wrap:wrap;gap:4px 16px}
ul.legend li{display:flex;align-items:center;gap:5px}
.sw{display:inline-block;width:14px;height:11px;border:1px solid rgba(0,0,0,.45)}
.sw.cap{border:0;border-top:2px dashed #c00;height:0;margin-top:2px}
svg{display:block;overflow:visible}
svg text{font:10px system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;fill:#333}
.frame{fill:none;stroke:#888;stroke-width:1}
.col{fill:#000;fill-opacity:0}
.col.alt{fill-opacity:.035}
.col:hover{fill-opacity:.09}
.grid{stroke:#000;stroke-opacity:.09;stroke-width:1}
.b{stroke:#000;stroke-opacity:.45;stroke-width:.5}
.b:hover{stroke:#000;stroke-opacity:1;stroke-width:1.5}
.cap{stroke:#c00;stroke-width:1.5;stroke-dasharray:6 4}
text.caplab{fill:#c00}
text.ax{fill:#555}
div.scroll{overflow-x:auto;padding-bottom:4px}
.b.dim{fill-opacity:.08;stroke-opacity:.1}
.col.hit{fill:#fc0;fill-opacity:.25}
div.tools{margin:6px 0;display:flex;gap:8px;align-items:center}
div.tools input{width:22em}
"""

_SCRIPT = r"""//<![CDATA[
(function () {
  var zoom = 1, svgs = Array.prototype.slice.call(document.querySelectorAll("svg[data-steps]"));
  svgs.forEach(function (s) { s.dataset.w = s.getAttribute("width"); s.dataset.h = s.getAttribute("height"); });
  function setZoom(z) {
    zoom = Math.max(0.25, Math.min(8, z));
    svgs.forEach(function (s) { s.setAttribute("width", s.dataset.w * zoom); s.setAttribute("height", s.dataset.h * zoom); });
    document.getElementById("zoomv").textContent = Math.round(zoom * 100) + " %";
  }
  function matcher(q) {
    var r = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(q);
    if (r) { var a = +r[1], b = r[2] === undefined ? a : +r[2]; return function (i) { return i >= a && i <= b; }; }
    q = q.toLowerCase();
    return function (i, label) { return label.toLowerCase().indexOf(q) >= 0; };
  }
  function filter(q) {
    var hits = 0;
    svgs.forEach(function (s) {
      var cols = s.querySelectorAll("rect.col"), hit = [], m = matcher(q), first = -1;
      for (var i = 0; i < cols.length; i++) {
        hit[i] = q !== "" && m(i, cols[i].textContent);
        cols[i].classList.toggle("hit", hit[i]);
        if (hit[i] && first < 0) first = i;
      }
      s.querySelectorAll("rect.b").forEach(function (b) {
        var keep = q === "", f = +b.dataset.first, l = +b.dataset.last;
        for (var i = f; !keep && i <= l; i++) keep = hit[i];
        if (!keep && q !== "" && !/^[\d\s-]+$/.test(q)) keep = b.textContent.toLowerCase().indexOf(q.toLowerCase()) >= 0;
        b.classList.toggle("dim", !keep);
      });
      if (first >= 0) {
        s.parentNode.scrollLeft = (+s.dataset.x0 + first * s.dataset.stepPx) * zoom - 40;
        hits = hit.filter(Boolean).length;
      }
    });
    document.getElementById("hits").textContent = q === "" ? "" : hits + " step(s) match";
  }
  document.getElementById("zin").onclick = function () { setZoom(zoom * 1.5); };
  document.getElementById("zout").onclick = function () { setZoom(zoom / 1.5); };
  document.getElementById("zfit").onclick = function () { setZoom(1); };
  document.getElementById("filter").oninput = function (e) { filter(e.target.value.trim()); };
  document.querySelector("div.tools").style.display = "flex";
  var h = /[#&]filter=([^&]*)/.exec(location.hash), z = /[#&]zoom=([\d.]+)/.exec(location.hash);
  if (z) setZoom(+z[1]);
  if (h) { document.getElementById("filter").value = decodeURIComponent(h[1]); filter(decodeURIComponent(h[1]).trim()); }
})();
//]]>
"""


def _render(title: str, steps: list[str], levels: list[PlotLevel]) -> str:
    kinds = _kind_classes(levels)
    css = _CSS + "".join(f".{cls}{{fill:{col};background:{col}}}\n" for cls, col in kinds.values())
    parts = [
        "<!DOCTYPE html>\n",
        '<html lang="en">\n<head>\n<meta charset="utf-8"/>\n',
        f"<title>{_esc(title)}</title>\n<style>\n{css}</style>\n</head>\n<body>\n",
        f"<h1>{_esc(title)}</h1>\n",
        f'<p class="note">{len(steps)} schedule step(s) left to right; addresses grow upwards; '
        "hover a rectangle for the buffer, an empty column for the step.</p>\n",
        '<div class="tools" style="display:none"><button id="zout" type="button">\u2212</button>'
        '<span id="zoomv">100 %</span><button id="zin" type="button">+</button>'
        '<button id="zfit" type="button">100 %</button>'
        '<label>layers: <input id="filter" type="search" placeholder="name, op or steps, e.g. MatMul or 40-80"/>'
        '</label><span id="hits"></span></div>\n',
    ]
    legend = [f'<li><span class="sw {cls}"></span>{_esc(kind or "other")}</li>' for kind, (cls, _) in kinds.items()]
    legend.append('<li><span class="sw cap"></span>capacity</li>')
    parts.append('<ul class="legend">' + "".join(legend) + "</ul>\n")
    for level in levels:
        parts.append(_panel(level, steps, kinds))
    parts.append(f"<script>\n{_SCRIPT}</script>\n</body>\n</html>\n")
    return "".join(parts)


def _panel(level: PlotLevel, steps: list[str], kinds: dict[str, tuple[str, str]]) -> str:
    bufs = level.buffers
    cap = level.capacity
    name = _esc(level.name)
    cap_txt = "unbounded" if cap is None else f"{_bytes(cap)} ({cap} B)"

    if not bufs:
        return (f'<section class="level" data-level="{name}">\n'
                f'<h2>{name} <span class="d">— no buffers; capacity {cap_txt}</span></h2>\n'
                f'<p class="empty">no buffers</p>\n</section>\n')

    # Peak: the highest end address (what must fit the capacity), and the most bytes live at once.
    top_buf = max(bufs, key=lambda b: b.offset + b.size)   # first of the highest, deterministic
    extent = top_buf.offset + top_buf.size
    delta = [0] * (len(steps) + 1)
    for b in bufs:
        delta[b.first] += b.size
        delta[b.last + 1] -= b.size
    live, live_max, live_step = 0, -1, 0
    for i in range(len(steps)):
        live += delta[i]
        if live > live_max:
            live_max, live_step = live, i

    over = cap is not None and extent > cap
    cap_drawn = cap is not None and cap <= CAPACITY_OFF_SCALE * max(extent, 1)
    heading = [f"{name} <span class=\"d\">— peak {_bytes(extent)} ({extent} B)"]
    if cap is not None:
        pct = 100.0 * extent / cap if cap else math.inf
        heading.append(f" of {cap_txt}, {pct:.1f} %" if cap else f" of {cap_txt}")
    else:
        heading.append(", capacity unbounded")
    heading.append(f"; at most {_bytes(live_max)} live, at step {_esc(steps[live_step])}; {len(bufs)} buffer(s)</span>")
    if over:
        heading.append(f' <span class="over">exceeds capacity by {extent - cap} B</span>')

    # Scales.
    n = len(steps)
    step_px = min(_STEP_MAX, max(_STEP_MIN, _PLOT_W / n))
    plot_w = n * step_px
    ymax = max(extent, cap if cap_drawn else 0, 1)
    tick = 1 << max(0, math.ceil(math.log2(ymax / 8)))    # 4..8 ticks, powers of two suit byte sizes
    while tick * 8 < ymax:
        tick *= 2
    axis_max = math.ceil(ymax / tick) * tick
    byte_px = _PLOT_H / axis_max
    x0, y0 = float(_LEFT), float(_TOP + _PLOT_H)

    stride = max(1, math.ceil(_LABEL_GAP / step_px))
    short = [s if len(s) <= _LABEL_CHARS else s[: _LABEL_CHARS // 2] + "…" + s[len(s) - _LABEL_CHARS // 2 + 1:]
             for s in steps]
    longest = max((len(short[i]) for i in range(0, n, stride)), default=0)
    bottom = 14 + math.ceil(longest * _CHAR_W * math.sin(math.radians(60))) + 10
    width = _LEFT + plot_w + _RIGHT
    height = _TOP + _PLOT_H + bottom

    out = [
        f'<section class="level" data-level="{name}">\n<h2>{"".join(heading)}</h2>\n<div class="scroll">',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" role="img" aria-label="{name} buffers over the schedule" '
        f'data-level="{name}" data-x0="{_num(x0)}" data-step-px="{step_px!r}" data-y0="{_num(y0)}" '
        f'data-byte-px="{byte_px!r}" data-min-h="{_num(_MIN_H)}" data-steps="{n}" '
        f'data-peak="{extent}" data-capacity="{"" if cap is None else cap}">\n',
    ]

    # Step columns (behind the buffers): alternate shading and a tooltip naming the step.
    out.append("<g>")
    for i, s in enumerate(steps):
        cls = "col alt" if i % 2 else "col"
        out.append(f'<rect class="{cls}" x="{_num(x0 + i * step_px)}" y="{_num(_TOP)}" '
                   f'width="{_num(step_px)}" height="{_PLOT_H}"><title>step {_esc(s)}</title></rect>')
    out.append("</g>\n")

    # Address grid and labels.
    out.append("<g>")
    for k in range(axis_max // tick + 1):
        y = y0 - k * tick * byte_px
        out.append(f'<line class="grid" x1="{_num(x0)}" x2="{_num(x0 + plot_w)}" y1="{_num(y)}" y2="{_num(y)}"/>'
                   f'<text class="ax" x="{_num(x0 - 6)}" y="{_num(y + 3.5)}" text-anchor="end">{_bytes(k * tick)}</text>')
    out.append("</g>\n")

    # Buffers, in the order given.
    out.append("<g>\n")
    for b in bufs:
        cls = kinds[b.kind][0]
        h = max(b.size * byte_px, _MIN_H)
        y = y0 - b.offset * byte_px - h
        span = f"live at step {b.first} ({_esc(steps[b.first])})" if b.first == b.last else \
            f"live over steps {b.first}..{b.last} ({_esc(steps[b.first])} … {_esc(steps[b.last])})"
        human = f" ({_bytes(b.size)})" if b.size >= 1024 else ""
        tip = (f"{_esc(b.label)}\n{_esc(b.kind or 'other')} · offset {b.offset} (0x{b.offset:x}) · "
               f"size {b.size} B{human} · end {b.offset + b.size}\n{span}")
        out.append(f'<rect class="b {cls}" data-first="{b.first}" data-last="{b.last}" '
                   f'x="{_num(x0 + b.first * step_px)}" y="{_num(y)}" '
                   f'width="{_num((b.last + 1 - b.first) * step_px)}" height="{_num(h)}"><title>{tip}</title></rect>\n')
    out.append("</g>\n")

    # Capacity.
    if cap is not None and cap_drawn:
        y = y0 - cap * byte_px
        out.append(f'<line class="cap" x1="{_num(x0)}" x2="{_num(x0 + plot_w)}" y1="{_num(y)}" y2="{_num(y)}">'
                   f'<title>capacity {cap_txt}</title></line>'
                   f'<text class="caplab" x="{_num(x0 + plot_w)}" y="{_num(y - 4)}" text-anchor="end">'
                   f'capacity {_bytes(cap)}</text>\n')
    elif cap is not None:
        out.append(f'<text class="caplab capoff" x="{_num(x0 + plot_w)}" y="{_num(_TOP - 6)}" text-anchor="end">'
                   f'capacity {_bytes(cap)} ({cap} B), above the plotted range</text>\n')

    # Frame and step labels.
    out.append(f'<rect class="frame" x="{_num(x0)}" y="{_num(_TOP)}" width="{_num(plot_w)}" height="{_PLOT_H}"/>\n<g>')
    for i in range(0, n, stride):
        cx = x0 + (i + 0.5) * step_px
        out.append(f'<line class="grid" x1="{_num(cx)}" x2="{_num(cx)}" y1="{_num(y0)}" y2="{_num(y0 + 4)}"/>'
                   f'<text class="ax" transform="translate({_num(cx + 3)},{_num(y0 + 10)}) rotate(-60)" '
                   f'text-anchor="end">{_esc(short[i])}</text>')
    out.append("</g>\n</svg>\n</div>\n</section>\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Output


def _write_atomic(path: Path, data: bytes) -> None:
    """Write data to path through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
