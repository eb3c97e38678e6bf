"""The concept demo (main job of ``make demo``) and the HTML report pieces."""

import base64
import json
import zlib

import numpy as np

from hardneg.demos.concept import noisy_tags, run_concept_demo
from hardneg.report import encode_png, svg_line_chart


def test_demo_writes_report_and_summary(tmp_path):
    summary = run_concept_demo(tmp_path, n_iter=3)
    html = (tmp_path / "concept_report.html").read_text()
    assert html.count("data:image/png;base64,") == 20 and "<svg" in html
    saved = json.loads((tmp_path / "concept_summary.json").read_text())
    assert saved["mAP"] == summary["mAP"] and set(summary["mAP"]) >= {"negative bootstrap", "asymmetric bagging"}
    assert all(0.0 <= v <= 1.0 for v in summary["mAP"].values())
    comp = summary["compression"]
    assert comp["max_abs_error"] <= comp["error_bound"] + 1e-4


def test_png_decodes_to_the_pixels():
    img = (np.arange(12).reshape(3, 4) * 20).astype(np.uint8)
    png = encode_png(img)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    idat_len = int.from_bytes(png[33:37], "big")
    raw = zlib.decompress(png[41 : 41 + idat_len])
    rows = [raw[r * 5 + 1 : r * 5 + 5] for r in range(3)]
    assert np.array_equal(np.frombuffer(b"".join(rows), np.uint8).reshape(3, 4), img)
    assert base64.b64encode(png)


def test_noisy_tags_fraction_and_chart():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(5), 400)
    tags = noisy_tags(labels, [str(i) for i in range(5)], 0.3, rng)
    clean = np.mean([t == [str(l)] for t, l in zip(tags, labels)])
    assert abs(clean - 0.7) < 0.05 and all(t != [str(l)] for t, l in zip(tags, labels) if t and t != [str(l)])
    assert svg_line_chart({"a": [(1, 0.5), (2, 0.7)]}).startswith("<svg")
