"""Self-contained HTML reports: image grids, line charts (inline SVG), tables."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from hardneg._typing import ArrayLike

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
figure{margin:.5em 0} figcaption{font-size:.9em;color:#555;max-width:560px}
"""


def _integer_ticks(lo: float, hi: float, max_ticks: int = 11) -> list[int]:
    """Whole-number ticks between ``lo`` and ``hi``: an iteration axis has no t = 1.5."""
    first, last = math.ceil(lo), math.floor(hi)
    if last < first:
        return [int(round(lo))]
    step = max(1, math.ceil((last - first) / (max_ticks - 1)))
    return list(range(first, last + 1, step))


def svg_line_chart(series: dict, *, x_label: str = "", y_label: str = "", title: str = "", integer_x: bool = False,
                   width: int = 560, height: int = 300) -> str:
    """An inline SVG line chart; ``series`` maps a name to a list of (x, y).

    Every point is drawn with a marker. A series of a single point (a method
    with no iterations, e.g. a pooled classifier beside bootstrap curves) is
    drawn as a dashed line across the whole x range at its value, with markers,
    so it reads as a reference level rather than a stray dot. ``title`` is
    shown above the plot and as the SVG's ``<title>`` (what a screen reader
    says); ``integer_x`` puts the x ticks on whole numbers only (iteration axes).

    Parameters
    ----------
    series : dict of str to list of (float, float)
        One line per name.
    x_label, y_label, title : str
        Axis labels and title.
    integer_x : bool
        Ticks on whole x values only.
    width, height : int
        Size in pixels.

    Returns
    -------
    str
        The ``<svg>`` element.

    Examples
    --------
    >>> from hardneg.report import svg_line_chart
    >>> svg = svg_line_chart({"a": [(1, 0.5), (2, 0.7)], "b": [(1, 0.6)]}, title="AP per iteration", integer_x=True)
    >>> svg.startswith("<svg") and "<title>AP per iteration</title>" in svg
    True
    """
    pts = [p for s in series.values() for p in s]
    if not pts:
        return "<p>(no data)</p>"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys)
    pad_y = (y1 - y0) * 0.1 or 0.05
    y0, y1 = y0 - pad_y, y1 + pad_y
    L, R, T, B = 55, 170, 32 if title else 15, 40
    pw, ph = width - L - R, height - T - B

    def px(x):
        return L + (x - x0) / (x1 - x0) * pw

    def py(y):
        return T + (1 - (y - y0) / (y1 - y0)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11" role="img">']
    if title:
        out.append(f"<title>{html.escape(title)}</title>")
        out.append(f'<text class="chart-title" x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="12" '
                   f'font-weight="bold">{html.escape(title)}</text>')
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    for k in range(5):
        yv = y0 + (y1 - y0) * k / 4
        out.append(f'<text class="ytick" x="{L - 5}" y="{py(yv) + 4:.1f}" text-anchor="end">{yv:.3f}</text>')
        out.append(f'<line x1="{L}" x2="{L + pw}" y1="{py(yv):.1f}" y2="{py(yv):.1f}" stroke="#eee"/>')
    xticks = _integer_ticks(min(xs), max(xs)) if integer_x else [x0 + (x1 - x0) * k / 4 for k in range(5)]
    for xv in xticks:
        label = str(int(xv)) if integer_x else f"{xv:g}"
        out.append(f'<text class="xtick" x="{px(xv):.1f}" y="{T + ph + 15}" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{height - 5}" text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text x="12" y="{T + ph / 2}" transform="rotate(-90 12 {T + ph / 2})" text-anchor="middle">{html.escape(y_label)}</text>')
    for i, (name, s) in enumerate(series.items()):
        color = _PALETTE[i % len(_PALETTE)]
        out.append(f'<g class="series" data-name="{html.escape(str(name))}">')
        if len(s) == 1:
            (x, y), = s
            out.append(f'<line x1="{L}" x2="{L + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="{color}" '
                       f'stroke-width="2" stroke-dasharray="6 4"/>')
            marks = [(L, py(y)), (px(x), py(y)), (L + pw, py(y))]
        else:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
            marks = [(px(x), py(y)) for x, y in s]
        for cx, cy in marks:
            out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{color}" stroke="#fff" stroke-width="1"/>')
        ly = T + 14 + 16 * i
        dash = ' stroke-dasharray="6 4"' if len(s) == 1 else ""
        out.append(f'<line x1="{L + pw + 8}" x2="{L + pw + 26}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<circle cx="{L + pw + 17}" cy="{ly - 4}" r="3" fill="{color}"/>')
        out.append(f'<text x="{L + pw + 30}" y="{ly}" fill="{color}">{html.escape(str(name))}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


class HTMLReport:
    """Build a single-file HTML page section by section, then :meth:`write` it.

    Parameters
    ----------
    title : str
        The page's title and heading.

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
        """Add a section heading (``<h2>``).

        Parameters
        ----------
        text : str
            The heading (HTML-escaped).
        """
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def paragraph(self, text: str) -> None:
        """Add a paragraph of text.

        Parameters
        ----------
        text : str
            The text (HTML-escaped).
        """
        self.parts.append(f"<p>{html.escape(text)}</p>")

    def table(self, header: Sequence[object], rows: Iterable[Sequence[object]]) -> None:
        """Add a table; floats are shown with 4 decimals.

        Parameters
        ----------
        header : sequence
            Column names.
        rows : iterable of sequence
            The rows' cells, one value per column.
        """
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in rows)
        self.parts.append(f"<table><tr>{head}</tr>{body}</table>")

    def image_grid(self, images: Sequence[ArrayLike], captions: Sequence[str] | None = None,
                   relevant: Sequence[bool | None] | None = None, size: int = 64,
                   titles: Sequence[str] | None = None) -> None:
        """A row of thumbnails; ``relevant[i]`` True/False draws a green/red frame (None: none);
        ``titles`` are shown on hover.

        Parameters
        ----------
        images : sequence of array-like
            Images of shape (H, W), (H, W, 3 or 4), or (H * W,) for a square one
            (see :func:`~hardneg.report._png.to_uint8_image`).
        captions : sequence of str or None, default=None
            Text under each image.
        relevant : sequence of bool or None, or None, default=None
            Per image: True for a green frame, False for a red one, None for none.
        size : int, default=64
            Side in pixels of each thumbnail (small images are upscaled).
        titles : sequence of str or None, default=None
            Tooltip of each image.
        """
        cells = []
        for i, img in enumerate(images):
            cls = "" if relevant is None or relevant[i] is None else (" hit" if relevant[i] else " miss")
            cap = html.escape(captions[i]) if captions is not None else ""
            tip = f' title="{html.escape(titles[i])}"' if titles is not None else ""
            cells.append(f'<div class="cell{cls}"{tip}><img src="{png_data_uri(img, size)}" width="{size}" height="{size}"/>{cap}</div>')
        self.parts.append('<div class="grid">' + "".join(cells) + "</div>")

    def svg(self, svg: str) -> None:
        """Add an inline SVG element as it is (e.g. :func:`svg_line_chart`'s).

        Parameters
        ----------
        svg : str
            The ``<svg>`` element (not escaped).
        """
        self.parts.append(svg)

    def figure(self, svg: str, caption: str) -> None:
        """A chart with a caption under it that says what it shows (concept, data, setting).

        Parameters
        ----------
        svg : str
            The chart's ``<svg>`` element (not escaped).
        caption : str
            The caption (HTML-escaped).
        """
        self.parts.append(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>")

    def render(self) -> str:
        """The whole page.

        Returns
        -------
        str
            A self-contained HTML document (CSS and images inline).
        """
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                f"<style>{_CSS}</style></head><body>" + "\n".join(self.parts) + "</body></html>")

    def write(self, path: str | os.PathLike) -> Path:
        """Write the page (UTF-8), creating missing parent folders.

        Parameters
        ----------
        path : str or path-like
            The HTML file to write.

        Returns
        -------
        Path
            ``path``.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.render(), encoding="utf-8")
        return path


def _fmt(c) -> str:
    if isinstance(c, float):
        return f"{c:.4f}"
    return str(c)
