"""On-disk feature storage: vectors in Zarr, items in Parquet."""

from typing import TYPE_CHECKING

from .._lazy_exports import attach

if TYPE_CHECKING:  # the same names, seen by type checkers and the API docs (griffe reads this statically)
    from ._edit import relocate_images, remove_items
    from ._feature_store import FORMAT_VERSION, FeatureStore, StoreDamagedError, StoreError, StoreLockedError, check_output_not_input
    from ._import import import_embeddings
    from ._item_table import store_summary
    from ._quantize import BinGrid, BinnedStore, CodeBlock, quantize_store
    from ._verify import VerifyReport

# resolved on first use: `hardneg store info` needs FeatureStore only, not the editing,
# import and quantization modules (issue 29)
__getattr__, __dir__ = attach(__name__, {
    "relocate_images": "._edit", "remove_items": "._edit", "store_summary": "._item_table",
    **dict.fromkeys(("FORMAT_VERSION", "FeatureStore", "StoreDamagedError", "StoreError", "StoreLockedError", "check_output_not_input"),
                    "._feature_store"),
    **dict.fromkeys(("BinGrid", "BinnedStore", "CodeBlock", "quantize_store"), "._quantize"),
    "import_embeddings": "._import",
    "VerifyReport": "._verify",
})

__all__ = ["FeatureStore", "StoreError", "StoreLockedError", "StoreDamagedError", "VerifyReport", "FORMAT_VERSION", "store_summary", "check_output_not_input",
           "BinGrid", "BinnedStore", "CodeBlock", "quantize_store", "import_embeddings", "remove_items", "relocate_images"]
