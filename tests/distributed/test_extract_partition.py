"""A Dask extraction partition reads its images as the in-process run does (issue 29).

``extract_partition`` (run by each worker) must hand the store's extractor to
``_load_batch``, as ``_Extraction`` does in process: for a CNN that is what
makes the images come back resized to the network's input. Checked with a spy
on ``_load_batch``, in this process (no cluster needed).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

from hardneg.features._extract import _extractor, extract_partition  # noqa: E402
from hardneg.features import _extract as features_extract  # noqa: E402


def test_partition_loads_images_for_the_stores_extractor(tmp_path, monkeypatch):
    from PIL import Image

    from hardneg.features import BagOfWords, DenseSift, extract_to_store

    rng = np.random.default_rng(0)
    paths = []
    for i in range(4):
        p = tmp_path / "img" / f"{i}.png"
        p.parent.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (32, 32), dtype=np.uint8)).save(p)
        paths.append(str(p))
    store = tmp_path / "s"
    extract_to_store(paths, store, BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=4, random_state=0), batch_size=2)

    seen = []
    original = features_extract._load_batch

    def spy(batch, summary, extractor=None, n_threads=None):
        seen.append(extractor)
        return original(batch, summary, extractor, n_threads)

    monkeypatch.setattr(features_extract, "_load_batch", spy)
    _extractor.cache_clear()
    kept, X, failed = extract_partition([(0, "a", paths[0]), (1, "b", paths[1])], store=str(store), config="{}")
    assert kept == [0, 1] and X.shape[0] == 2 and not failed
    assert len(seen) == 1 and isinstance(seen[0], BagOfWords)  # not None: the worker's extractor decides the geometry
    assert seen[0] is _extractor(str(store), "{}", None, False)
