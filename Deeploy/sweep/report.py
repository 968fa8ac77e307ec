"""``deeploy sweep report DIR -o report.html``: one self-contained HTML page of a results folder.

Per network: the modelled cycles against the L1 and the L2 the point's memory plan uses (its
peak), one panel per platform side by side (e.g. Siracusa and Siracusa_w_neureka: the NPU off
and on), single- and double-buffered points in two colours, the Pareto front (no other point of
the panel uses less memory and fewer cycles) ringed and joined; then the best configuration per
network within the memory budget (``--l1-budget``, ``--l2-budget``: peaks), and every record in
a table sortable by any column (click its header)."""

from __future__ import annotations

import html
import math
from pathlib import Path

from Deeploy.errors import DeeployError
from Deeploy.sweep.store import read_records

__all__ = ["pareto_front", "best_within", "report_html", "write_report"]

W, H = 420, 280                  # a panel's plot area
ML, MR, MT, MB = 78, 16, 34, 46  # its margins
SERIES = {False: ("single buffering", "#1f77b4"), True: ("double buffering", "#ff7f0e")}
FRONT = "#d62728"
COLUMNS = ("network", "platform", "flags", "status", "cycles", "compute", "exposed_dma", "overhead", "peak_L1",
           "peak_L2", "peak_L3", "code_text", "code_rodata", "compile_s", "error")


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats in both coordinates (both minimised), by x."""
    order = sorted(range(len(points)), key=lambda i: points[i])
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def best_within(records: list[dict], l1: int | None = None, l2: int | None = None) -> dict[str, dict]:
    """Per network, the successful record with the fewest cycles whose L1 and L2 peaks fit the budgets."""
    best = {}
    for r in records:
        if r.get("status") != "ok" or r.get("cycles") is None:
            continue
        if (l1 is not None and r.get("peak_L1", 0) > l1) or (l2 is not None and r.get("peak_L2", 0) > l2):
            continue
        if r["network"] not in best or r["cycles"] < best[r["network"]]["cycles"]:
            best[r["network"]] = r
    return best


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering lo..hi (hi > lo)."""
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    return [k * step for k in range(math.floor(lo / step), math.ceil(hi / step) + 1)]


def _num(v: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if abs(v) >= size:
            return f"{v / size:g}{unit}"
    return f"{v:g}"


def _flags(r: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in r.get("flags", {}).items())


def _panel(records: list[dict], level: str, title: str, top: tuple[float, float]) -> str:
    """One scatter panel: cycles against the ``level`` peak up to ``top`` (x, y; shared by the
    panels of a row), the Pareto front ringed and joined."""
    pts = [(r[f"peak_{level}"], r["cycles"]) for r in records]
    tx, ty = _ticks(0, top[0] or 1), _ticks(0, top[1] or 1)
    sx = lambda v: ML + (v - tx[0]) / (tx[-1] - tx[0]) * W       # noqa: E731
    sy = lambda v: MT + H - (v - ty[0]) / (ty[-1] - ty[0]) * H   # noqa: E731
    out = [f'<svg class="panel" width="{ML + W + MR}" height="{MT + H + MB}" xmlns="http://www.w3.org/2000/svg">',
           f'<text x="{ML + W / 2}" y="18" text-anchor="middle" class="ptitle">{html.escape(title)}</text>']
    for v in tx:
        out.append(f'<line x1="{sx(v):.1f}" x2="{sx(v):.1f}" y1="{MT}" y2="{MT + H}" class="grid"/>'
                   f'<text x="{sx(v):.1f}" y="{MT + H + 16}" text-anchor="middle">{_num(v)}</text>')
    for v in ty:
        out.append(f'<line x1="{ML}" x2="{ML + W}" y1="{sy(v):.1f}" y2="{sy(v):.1f}" class="grid"/>'
                   f'<text x="{ML - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{_num(v)}</text>')
    out.append(f'<rect x="{ML}" y="{MT}" width="{W}" height="{H}" class="frame"/>'
               f'<text x="{ML + W / 2}" y="{MT + H + 36}" text-anchor="middle">{level} used (memory plan peak, B)'
               f'</text><text transform="translate(16 {MT + H / 2}) rotate(-90)" text-anchor="middle">'
               f'cycles (modelled)</text>')
    front = pareto_front(pts)
    line = " ".join(f"{sx(pts[i][0]):.1f},{sy(pts[i][1]):.1f}" for i in front)
    out.append(f'<polyline points="{line}" class="front"/>')
    for i, r in enumerate(records):
        _, colour = SERIES[bool(r.get("flags", {}).get("doublebuffer"))]
        tip = html.escape(f"{_flags(r)}: {r['cycles']:.0f} cycles, {level} {pts[i][0]} B"
                          + (" (Pareto front)" if i in front else ""))
        out.append(f'<circle cx="{sx(pts[i][0]):.1f}" cy="{sy(pts[i][1]):.1f}" r="4.5" fill="{colour}">'
                   f'<title>{tip}</title></circle>')
        if i in front:
            out.append(f'<circle cx="{sx(pts[i][0]):.1f}" cy="{sy(pts[i][1]):.1f}" r="8" class="ring"/>')
    out.append("</svg>")
    return "".join(out)


def _network_section(name: str, records: list[dict]) -> str:
    ok = [r for r in records if r.get("status") == "ok" and r.get("cycles") is not None]
    parts = [f'<h2 id="{html.escape(name)}">{html.escape(name)}</h2>',
             f"<p>{len(ok)} of {len(records)} points ran; the others are in the table below.</p>"]
    platforms = list(dict.fromkeys(r["platform"] for r in ok))
    for level in ("L1", "L2"):
        shown = {p: [r for r in ok if r["platform"] == p and f"peak_{level}" in r] for p in platforms}
        row = [r for rs in shown.values() for r in rs]
        top = (max((r[f"peak_{level}"] for r in row), default=0), max((r["cycles"] for r in row), default=0))
        panels = [_panel(rs, level, f"{p}: cycles vs {level}", top) for p, rs in shown.items() if rs]
        if panels:
            parts.append(f'<div class="row">{"".join(panels)}</div>')
    return "".join(parts)


def _cell(column: str, r: dict) -> str:
    value = _flags(r) if column == "flags" else r.get(column)
    if value is None or value == "":
        return '<td data-v=""></td>'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = f"{value:.0f}" if float(value).is_integer() else f"{value:.3f}"
        return f'<td data-v="{value}" class="n">{text}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _table(records: list[dict], columns=COLUMNS, sortable: bool = True) -> str:
    head = "".join(f"<th>{c}</th>" for c in columns)
    rows = "".join(f'<tr class="{html.escape(r.get("status", ""))}">' + "".join(_cell(c, r) for c in columns)
                   + "</tr>" for r in records)
    return f'<table class="{"sortable" if sortable else ""}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


_CSS = """body{font:13px sans-serif;margin:20px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.row{display:flex;flex-wrap:wrap;gap:12px}.panel text{font-size:11px;fill:#333}.panel .ptitle{font-size:13px}
.grid{stroke:#e4e4e4}.frame{fill:none;stroke:#888}.front{fill:none;stroke:#d62728;stroke-width:1.5}
.ring{fill:none;stroke:#d62728;stroke-width:2}.legend span{display:inline-block;margin-right:18px}
.dot{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}
table{border-collapse:collapse;margin-top:8px}th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f0f0f0;cursor:pointer;position:sticky;top:0}td.n{text-align:right}
tr.fail,tr.timeout,tr.crash,tr.lost{background:#fdecea}"""

_SCRIPT = """document.querySelectorAll('table.sortable th').forEach(function(th, col) {
  th.addEventListener('click', function() {
    var body = th.closest('table').tBodies[0], rows = Array.from(body.rows);
    var up = th.dataset.dir !== 'up'; th.dataset.dir = up ? 'up' : 'down';
    function key(r) { var c = r.cells[col], v = c.dataset.v; return v !== undefined && v !== '' ? Number(v) : c.textContent; }
    rows.sort(function(a, b) { var x = key(a), y = key(b);
      var c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
      return up ? c : -c; });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});"""


def report_html(records: list[dict], title: str, l1_budget: int | None = None, l2_budget: int | None = None) -> str:
    networks = list(dict.fromkeys(r["network"] for r in records))
    statuses = [r.get("status") for r in records]
    summary = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    legend = "".join(f'<span><i class="dot" style="background:{c}"></i>{label}</span>'
                     for label, c in SERIES.values())
    legend += f'<span><i class="dot" style="border:2px solid {FRONT};width:8px;height:8px"></i>Pareto front</span>'
    budget = " and ".join(f"{level} peak at most {b} B" for level, b in (("L1", l1_budget), ("L2", l2_budget))
                          if b is not None) or "no memory budget (give --l1-budget / --l2-budget)"
    best = best_within(records, l1_budget, l2_budget)
    best_rows = [best[n] for n in networks if n in best]
    missing = [n for n in networks if n not in best]
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>{len(records)} points: {summary}. Cycles are the virtual platform's modelled cycles of one "
            f"network run.</p><p class=\"legend\">{legend}</p>"
            + "".join(_network_section(n, [r for r in records if r["network"] == n]) for n in networks)
            + f"<h2>Best configuration per network within {html.escape(budget)}</h2>"
            + (_table(best_rows, ("network", "platform", "flags", "cycles", "peak_L1", "peak_L2", "peak_L3",
                                  "code_text"), sortable=False) if best_rows else "")
            + (f"<p>No successful point fits for: {html.escape(', '.join(missing))}.</p>" if missing else "")
            + "<h2>Every point</h2>" + _table(records) + f"<script>{_SCRIPT}</script></body></html>")


def write_report(results: str | Path, out: str | Path, l1_budget: int | None = None,
                 l2_budget: int | None = None) -> Path:
    """The report of the results folder ``results``, written to ``out`` (replaced atomically)."""
    records = list(read_records(results).values())
    if not records:
        raise DeeployError(f"'{results}' holds no finished point yet; run the sweep first")
    out = Path(out)
    if out.is_dir():
        raise DeeployError(f"report '{out}' is a folder; name the HTML file, e.g. -o report.html")
    text = report_html(records, f"Sweep {Path(results).resolve().name}", l1_budget, l2_budget)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DeeployError(f"cannot write the report '{out}': {exc.strerror or exc}") from None
    return out
