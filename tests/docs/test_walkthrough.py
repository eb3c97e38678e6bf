"""The README's "Your own images" walkthrough, run command by command on generated images.

The commands are read from the README section itself (every ```bash block
under the heading), so the section cannot rot: a renamed option or a broken
step fails here.
"""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hardneg.cli.main import app, main

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Your own images"

pytest.importorskip("cv2")
pytest.importorskip("PIL")


def _section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    if HEADING in text:
        body = text.split(HEADING, 1)[1]
        return re.split(r"\n## ", body, maxsplit=1)[0]
    pytest.fail(f"no section {HEADING!r} in README.md")


def _commands(section: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    lines = [ln.strip() for block in blocks for ln in block.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def _make_images(root: Path) -> None:
    """Three visually distinct classes of small JPEGs (stripes, rings, checks) and a new query image."""
    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:64, 0:64]

    def draw(kind):
        f, ph = rng.uniform(0.2, 0.35), rng.uniform(0, 6.28)
        if kind == "cats":
            img = np.sin(np.hypot(xx - 32, yy - 32) * f + ph)
        elif kind == "dogs":
            img = np.sin(xx * f + ph)
        else:
            img = np.sign(np.sin(xx * f + ph) * np.sin(yy * f))
        img = (img + 1) * 110 + rng.normal(0, 10, img.shape)
        return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).convert("RGB")

    for kind in ("cats", "dogs", "boats"):
        (root / "photos" / kind).mkdir(parents=True)
        for i in range(1, 9):
            draw(kind).save(root / "photos" / kind / f"{kind[:-1]}{i:02d}.jpg", quality=95)
    draw("cats").save(root / "new-photo.jpg", quality=95)


def _run(line: str, cwd: Path, capsys) -> str:
    argv = shlex.split(line, comments=True)
    if argv[0] != "hardneg":
        return subprocess.run(line, shell=True, cwd=cwd, check=True, capture_output=True, text=True).stdout
    code = main(argv[1:])
    out, err = capsys.readouterr()
    assert code == 0, f"{line!r} exited {code}: {err}"
    return out


@pytest.fixture
def knn_registered():
    """`hardneg knn` until main.py registers it (then this is a no-op)."""
    from hardneg.cli.knn import knn

    added = not any(c.name == "knn" for c in app.registered_commands)
    if added:
        app.command("knn")(knn)
    yield
    if added:
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != "knn"]


def test_readme_own_images_walkthrough(tmp_path, capsys, monkeypatch, knn_registered):
    commands = _commands(_section())
    assert len(commands) >= 10, commands
    # the section goes folder -> store -> tags -> concept -> search -> sheet -> hashing -> query by image
    steps = ["extract images", "store tag", "store split", "concept train", "concept search", "--html", "hash train",
             "hash index", "--query-image"]
    where = [next((i for i, c in enumerate(commands) if s in c), None) for s in steps]
    assert None not in where and where == sorted(where), dict(zip(steps, where))

    _make_images(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    outputs = {}
    for line in commands:
        outputs[line] = _run(line, tmp_path, capsys)

    # the results are real: the contact sheet shows the ranked images, hits marked
    sheet = (tmp_path / "cats.html").read_text()
    assert sheet.count("<img") == 12 and 'class="cell hit"' in sheet
    assert (tmp_path / "similar.html").read_text().count("<img") == 6  # the query and its 5 results
    search_out = outputs[next(c for c in commands if c.startswith("hardneg concept search"))]
    header = search_out.splitlines()[2]
    assert all(col in header for col in ("rank", "id", "score", "label", "tags")), header
    assert "image files: " in search_out and "/<id>" in search_out  # the folder, once, not in every row
    # the concept ranks its own class first (the classes are easy to tell apart)
    top = json.loads(_run("hardneg concept search cats.npz photos.store -k 4 --json", tmp_path, capsys))
    assert [r["label"] for r in top] == ["cats"] * 4 and all(r["relevant"] for r in top)
    knn_json = json.loads(outputs[next(c for c in commands if "--query-id" in c and "--json" in c)])
    assert len(knn_json) == 5 and all(r["id"] != "cats/cat01.jpg" for r in knn_json)  # the query left out
    assert {"label", "tags", "path", "score"} <= set(knn_json[0])
    assert os.path.isfile(knn_json[0]["path"])  # a path that opens from here
    # paths resolve from any other working directory too
    monkeypatch.chdir("/")
    assert _run(f"hardneg knn {tmp_path / 'photos.store'} --query-id cats/cat02.jpg -k 3 --json", tmp_path, capsys)
