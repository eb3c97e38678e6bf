"""Feature extraction: images to FeatureStores.

Two extractors, one pipeline:

- :class:`EfficientNetLite0` (and :class:`TorchExtractor` for any local torch
  model): global-average-pooled CNN features, 1280-d, or the grid of local
  descriptors.
- :class:`BagOfWords` over :class:`DenseSift`: OpenCV SIFT on a dense
  multi-scale grid, quantized by a FAISS k-means :class:`Codebook` into
  l1-normalized histograms (1,024 words, dense) or sparse CSR vectors
  (10K-100K words), optionally TF-IDF weighted.
- :class:`VLAD` over the same descriptors and codebook: residual sums per
  word, power-, intra- and l2-normalized (64 words x 128 = 8,192-d).
- :func:`extract_to_store` runs an extractor over a folder, a list of paths
  or an image array into a :class:`~hardneg.store.FeatureStore`, batched and
  resumable, skipping and listing unreadable files.
- :func:`build_fashion_mnist_store` builds the cached Fashion-MNIST stores
  ``fashion-mnist-cnn`` and ``fashion-mnist-dsift1024``.

torch, OpenCV and Pillow are optional (extras ``cnn`` and ``bow``) and are
imported only when an extractor runs.
"""

from .._lazy_exports import attach

# resolved on first use: a command that reads one image must not import scikit-learn (the codebook)
__getattr__, __dir__ = attach(__name__, {
    **dict.fromkeys(("IMAGENET_MEAN", "IMAGENET_STD", "TFLITE_MEAN", "TFLITE_STD", "EfficientNetLite0",
                     "TorchExtractor"), "._cnn"),
    "BagOfWords": "._codebook", "Codebook": "._codebook", "DenseSift": "._dsift",
    **dict.fromkeys(("ExtractionSummary", "extract_to_store", "folder_labels"), "._extract"),
    **dict.fromkeys(("FASHION_STORES", "build_fashion_mnist_store", "fashion_extractor", "fashion_mnist_ids",
                     "fashion_mnist_store_path", "load_fashion_mnist_features", "stores_dir"), "._fashion"),
    "VLAD": "._vlad", "vlad": "._vlad", "VocabularyTree": "._vocab_tree",
    **dict.fromkeys(("IMAGE_EXTENSIONS", "ImageItem", "ImageReadError", "list_image_files", "read_image",
                     "resolve_images", "to_gray", "to_rgb"), "._images"),
})

__all__ = [
    "BagOfWords",
    "Codebook",
    "DenseSift",
    "EfficientNetLite0",
    "ExtractionSummary",
    "FASHION_STORES",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "IMAGE_EXTENSIONS",
    "ImageItem",
    "ImageReadError",
    "TFLITE_MEAN",
    "TFLITE_STD",
    "TorchExtractor",
    "VLAD",
    "VocabularyTree",
    "build_fashion_mnist_store",
    "extract_to_store",
    "fashion_extractor",
    "fashion_mnist_ids",
    "fashion_mnist_store_path",
    "load_fashion_mnist_features",
    "folder_labels",
    "list_image_files",
    "read_image",
    "resolve_images",
    "stores_dir",
    "to_gray",
    "to_rgb",
    "vlad",
]
