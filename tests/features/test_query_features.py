"""One function turns query images into a store's features: the CLI's --query-image and the
service's uploads (issue 40 item 5)."""

from __future__ import annotations

import numpy as np
import pytest

from hardneg.features._query import QueryFeatures
from hardneg.store import FeatureStore


@pytest.fixture
def pixel_store(tmp_path):
    path = tmp_path / "digits.store"
    with FeatureStore.create(path, dim=64, attrs={"dataset": "digits"}) as s:
        s.append(np.zeros((2, 64), np.float32), ids=["a", "b"])
    return FeatureStore.open(path)


def test_pixel_store_queries_are_its_pixels(pixel_store):
    q = QueryFeatures(pixel_store)
    assert q.kind == "pixels" and q.available and q.target_size == 8
    rgb = np.zeros((16, 16, 3), np.uint8)
    rgb[:, 8:] = 255
    X = q.transform([rgb, np.zeros((8, 8, 3), np.uint8)])
    assert X.shape == (2, 64) and X.dtype == np.float32
    assert X[0].max() == pytest.approx(16.0) and X[0].min() == 0.0 and not X[1].any()


def test_service_and_cli_share_the_function(pixel_store, tmp_path):
    from hardneg.serve._images import ImageQuery

    rgb = np.random.default_rng(0).integers(0, 256, (20, 20, 3), dtype=np.uint8)
    np.testing.assert_array_equal(ImageQuery(pixel_store).transform(rgb), QueryFeatures(pixel_store).transform([rgb])[0])


def test_a_store_without_settings_says_why(tmp_path):
    with FeatureStore.create(tmp_path / "s", dim=3) as s:
        s.append(np.eye(3))
    store = FeatureStore.open(tmp_path / "s")
    q = QueryFeatures(store)
    assert q.kind is None and not q.available
    with pytest.raises(ValueError, match="records no extractor settings"):
        q.transform([np.zeros((4, 4, 3), np.uint8)])
