"""Self-contained HTML reports: image grids, line charts (inline SVG), tables."""

from __future__ import annotations

import html
from pathlib import Path

from ._png import png_data_uri

__all__ = ["HTMLReport", "svg_line_chart"]

_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.grid{display:flex;flex-wrap:wrap;gap:6px} .cell{text-align:center;font-size:11px}
.cell{max-width:140px;word-break:break-all} .cell img{display:block;border:3px solid #ccc;image-rendering:pixelated;object-fit:contain}
.hit img{border-color:#2ca02c} .miss img{border-color:#d62728}
"""


def svg_line_chart(series: dict, *, x_label: str = "", y_label: str = "", width: int = 560, height: int = 300) -> str:
    """An inline SVG line chart; ``series`` maps a name to a list of (x, y)."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return "<p>(no data)</p>"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys)
    pad_y = (y1 - y0) * 0.1 or 0.05
    y0, y1 = y0 - pad_y, y1 + pad_y
    L, R, T, B = 55, 150, 15, 40
    pw, ph = width - L - R, height - T - B

    def px(x):
        return L + (x - x0) / (x1 - x0) * pw

    def py(y):
        return T + (1 - (y - y0) / (y1 - y0)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for k in range(5):
        yv = y0 + (y1 - y0) * k / 4
        out.append(f'<text x="{L - 5}" y="{py(yv) + 4:.1f}" text-anchor="end">{yv:.3f}</text>')
        out.append(f'<line x1="{L}" x2="{L + pw}" y1="{py(yv):.1f}" y2="{py(yv):.1f}" stroke="#eee"/>')
    for k in range(5):
        xv = x0 + (x1 - x0) * k / 4
        out.append(f'<text x="{px(xv):.1f}" y="{T + ph + 15}" text-anchor="middle">{xv:g}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{height - 5}" text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text x="12" y="{T + ph / 2}" transform="rotate(-90 12 {T + ph / 2})" text-anchor="middle">{html.escape(y_label)}</text>')
    for i, (name, s) in enumerate(series.items()):
        color = _PALETTE[i % len(_PALETTE)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for x, y in s:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>')
        out.append(f'<text x="{L + pw + 10}" y="{T + 14 + 16 * i}" fill="{color}">{html.escape(str(name))}</text>')
    out.append("</svg>")
    return "\n".join(out)


class HTMLReport:
    """Build a single-file HTML page section by section, then :meth:`write` it.

    Examples
    --------
    >>> import numpy as np, tempfile
    >>> from hardneg.report import HTMLReport
    >>> r = HTMLReport("demo")
    >>> r.table(["a", "b"], [[1, 2]])
    >>> r.image_grid([np.eye(8)], captions=["x"], relevant=[True])
    >>> r.write(tempfile.mkdtemp() + "/r.html").name
    'r.html'
    """

    def __init__(self, title: str):
        self.title = title
        self.parts: list[str] = [f"<h1>{html.escape(title)}</h1>"]

    def heading(self, text: str) -> None:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def paragraph(self, text: str) -> None:
        self.parts.append(f"<p>{html.escape(text)}</p>")

    def table(self, header, rows) -> None:
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in rows)
        self.parts.append(f"<table><tr>{head}</tr>{body}</table>")

    def image_grid(self, images, captions=None, relevant=None, size: int = 64, titles=None) -> None:
        """A row of thumbnails; ``relevant[i]`` True/False draws a green/red frame (None: none);
        ``titles`` are shown on hover."""
        cells = []
        for i, img in enumerate(images):
            cls = "" if relevant is None or relevant[i] is None else (" hit" if relevant[i] else " miss")
            cap = html.escape(captions[i]) if captions is not None else ""
            tip = f' title="{html.escape(titles[i])}"' if titles is not None else ""
            cells.append(f'<div class="cell{cls}"{tip}><img src="{png_data_uri(img, size)}" width="{size}" height="{size}"/>{cap}</div>')
        self.parts.append('<div class="grid">' + "".join(cells) + "</div>")

    def svg(self, svg: str) -> None:
        self.parts.append(svg)

    def render(self) -> str:
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                f"<style>{_CSS}</style></head><body>" + "\n".join(self.parts) + "</body></html>")

    def write(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.render(), encoding="utf-8")
        return path


def _fmt(c) -> str:
    if isinstance(c, float):
        return f"{c:.4f}"
    return str(c)
