"""On-disk feature storage: vectors in Zarr, items in Parquet."""

from ._edit import relocate_images, remove_items, store_summary
from ._feature_store import FORMAT_VERSION, FeatureStore, StoreDamagedError, StoreError, StoreLockedError, check_output_not_input
from ._quantize import BinGrid, BinnedStore, CodeBlock, quantize_store
from ._import import import_embeddings
from ._verify import VerifyReport

__all__ = ["FeatureStore", "StoreError", "StoreLockedError", "StoreDamagedError", "VerifyReport", "FORMAT_VERSION", "store_summary", "check_output_not_input",
           "BinGrid", "BinnedStore", "CodeBlock", "quantize_store", "import_embeddings", "remove_items", "relocate_images"]
