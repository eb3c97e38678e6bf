"""Self-contained HTML reports (inline PNG thumbnails and SVG charts, no extra dependencies)."""

from hardneg.report._contact import contact_sheet, thumbnail
from hardneg.report._html import HTMLReport, svg_line_chart
from hardneg.report._png import encode_png, png_data_uri, to_uint8_image

__all__ = ["HTMLReport", "contact_sheet", "encode_png", "png_data_uri", "svg_line_chart", "thumbnail", "to_uint8_image"]
