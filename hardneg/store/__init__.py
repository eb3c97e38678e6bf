"""On-disk feature storage: vectors in Zarr, items in Parquet."""

from ._feature_store import FORMAT_VERSION, FeatureStore, StoreError, StoreLockedError

__all__ = ["FeatureStore", "StoreError", "StoreLockedError", "FORMAT_VERSION"]
