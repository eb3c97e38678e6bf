"""First image upload after the service starts: extractor loaded lazily vs at start-up.

A FeatureStore of EfficientNet-Lite0 features (1280-d) of scikit-image's sample
photos; the service's app is created in a fresh process per run (so each run pays
the torch import and the weight loading once, as a real start does), then:

* ``lazy`` (the service before issue 26): the extractor is built by the first
  upload, so the first upload waits for it;
* ``preload`` (now): ``create_app`` starts loading it in a background thread;
  the client waits until ``/api/info`` says ``extractor: ready`` (what the page
  does while it shows "loading the feature extractor") and then uploads.

Reported per run: seconds from the app's creation to the extractor being ready
(preload), the first and the second upload's latency, side by side in one run
(the machine is shared: compare the ratio, not the absolute seconds):

    .venv/bin/python benchmarks/serve_first_upload.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, write_results  # noqa: E402

IMAGES = ("astronaut", "camera", "coffee", "chelsea", "rocket", "coins", "immunohistochemistry", "hubble_deep_field")


def build_store(path: Path) -> None:
    from skimage import data

    from hardneg.features import EfficientNetLite0, extract_to_store

    imgs = [np.asarray(getattr(data, name)()) for name in IMAGES]
    imgs = [np.stack([im] * 3, axis=-1) if im.ndim == 2 else im[..., :3] for im in imgs]
    extract_to_store(imgs, path, EfficientNetLite0(), ids=list(IMAGES))


def child(store: str, variant: str) -> dict:
    from fastapi.testclient import TestClient
    from PIL import Image
    from skimage import data

    from hardneg.serve import create_app
    from hardneg.serve._state import ServeState

    if variant == "lazy":  # the old service: nothing loads until the first upload
        ServeState._load_extractor = lambda self: self._extractor_ready.set()
    buf = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buf, format="PNG")
    png = buf.getvalue()
    t0 = time.perf_counter()
    app = create_app(store, models_dir=Path(store).parent / f"models-{variant}-{os.getpid()}", allowed_hosts=["testserver"])
    out = {"variant": variant, "create_app_s": time.perf_counter() - t0}
    with TestClient(app) as c:
        while c.get("/api/info").json()["extractor"] == "loading":
            time.sleep(0.02)
        out["ready_after_s"] = time.perf_counter() - t0
        for key in ("first_upload_s", "second_upload_s"):
            t = time.perf_counter()
            r = c.post("/api/search/upload", files={"file": ("q.png", png, "image/png")}, data={"mode": "cosine", "k": "3"})
            out[key] = time.perf_counter() - t
            if r.status_code != 200:
                raise SystemExit(f"upload failed: {r.status_code} {r.text}")
    out["start_to_first_result_s"] = out["ready_after_s"] + out["first_upload_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--child", nargs=2, metavar=("STORE", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "photos.store"
        build_store(store)
        runs = []
        for _ in range(args.repeats):
            for variant in ("lazy", "preload"):  # alternated: both see the same machine load
                res = subprocess.run([sys.executable, __file__, "--child", str(store), variant], capture_output=True,
                                     text=True, check=True)
                runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    med = {v: {k: float(np.median([r[k] for r in runs if r["variant"] == v])) for k in runs[0] if k != "variant"}
           for v in ("lazy", "preload")}
    ratio = med["lazy"]["first_upload_s"] / med["preload"]["first_upload_s"]
    rows = [{"variant": v, **{k: f"{x:.3f}" for k, x in med[v].items()}} for v in med]
    print(markdown_table(rows, ["variant", "create_app_s", "ready_after_s", "first_upload_s", "second_upload_s",
                                "start_to_first_result_s"]))
    print(f"first upload, lazy / preload: {ratio:.1f}x")
    path = write_results("serve_first_upload", {"store": {"items": len(IMAGES), "extractor": "EfficientNetLite0"},
                                                "runs": runs, "median": med, "first_upload_ratio_lazy_over_preload": ratio})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
