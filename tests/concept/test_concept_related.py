"""Related-tag exclusion (Li et al. 2013, Section III-A): NGD over the tag table, WordNet hyponyms."""

import math

import numpy as np
import pytest

from hardneg.concept import NegativeBootstrap, ngd, ngd_related_tags, related_tags
from hardneg.concept._related import DEBIAN_WORDNET, WordNetUnavailable, load_wordnet, wordnet_hyponym_tags


def tag_table():
    """100 images: 'shoe' on 10; 'sneaker' on 8 of those; 'boot' on 3 of them; 'red' on 20 (2 with shoe);
    'lace' once, with shoe; 'dress' on 30 without shoe."""
    tags = [[] for _ in range(100)]
    for i in range(10):
        tags[i].append("shoe")
    for i in range(8):
        tags[i].append("sneaker")
    for i in (0, 8, 9):
        tags[i].append("boot")
    for i in list(range(2)) + list(range(50, 68)):
        tags[i].append("red")
    tags[9].append("lace")
    for i in range(20, 50):
        tags[i].append("dress")
    return tags


def test_ngd_hand_worked():
    # NGD = (max(log fx, log fy) - log fxy) / (log N - min(log fx, log fy))
    assert ngd(10, 8, 8, 100) == pytest.approx((math.log(10) - math.log(8)) / (math.log(100) - math.log(8)))
    assert ngd(10, 8, 8, 100) == pytest.approx(0.08835, abs=1e-4)
    assert ngd(10, 20, 2, 100) == pytest.approx(1.0)  # 2 = 10 * 20 / 100: independent
    assert ngd(10, 3, 3, 100) == pytest.approx(0.34333, abs=1e-4)
    assert ngd(10, 5, 0, 100) == math.inf
    assert ngd(100, 5, 5, 100) == pytest.approx(1.0)  # a concept on every image: independent of any tag
    assert ngd(100, 100, 100, 100) == math.inf  # both on every image: no information


def test_ngd_related_tags_on_a_hand_worked_table():
    tags = tag_table()
    got = ngd_related_tags("shoe", tags, threshold=0.3)
    assert list(got) == ["sneaker"] and got["sneaker"] == pytest.approx(0.08835, abs=1e-4)
    got = ngd_related_tags("shoe", tags, threshold=0.35)
    assert sorted(got) == ["boot", "sneaker"]  # boot: 0.343
    # 'lace' (NGD 0.5) co-occurs once: below min_cooccurrence=2 whatever the threshold
    assert "lace" not in ngd_related_tags("shoe", tags, threshold=0.9)
    assert "lace" in ngd_related_tags("shoe", tags, threshold=0.9, min_cooccurrence=1)
    assert "red" not in ngd_related_tags("shoe", tags, threshold=0.99)  # NGD 1: independent
    # several concept tags: an image counts when it carries any of them
    assert "sneaker" in ngd_related_tags(["shoe", "boot"], tags)


def test_related_tags_without_wordnet_is_the_ngd_part():
    assert related_tags("shoe", tag_table(), wordnet=False) == {"sneaker": "ngd=0.09"}


def test_auto_related_tags_in_fit_excludes_co_occurring_tags():
    rng = np.random.default_rng(0)
    tags = tag_table()
    pool = rng.random((100, 4)).astype(np.float32)
    pos = (rng.random((6, 4)) + 1).astype(np.float32)
    nb = NegativeBootstrap(n_iter=3, n_bins=8, random_state=0)
    nb.fit(pos, pool, exclude_tags="shoe", pool_tags=tags, related_tags="auto")
    assert "sneaker" in nb.related_tags_ and set(nb.excluded_tags_) >= {"shoe", "sneaker"}
    chosen = {t for r in nb.iterations_ for ts in r["tags"] for t in ts}
    assert not chosen & {"shoe", "sneaker"}
    with pytest.raises(ValueError, match="exclude_tags"):
        NegativeBootstrap(n_iter=2).fit(pos, pool, pool_tags=tags, related_tags="auto")
    # explicit lists still work and are recorded
    nb.fit(pos, pool, exclude_tags="shoe", pool_tags=tags, related_tags=["red"])
    assert nb.related_tags_ == {"red": "given"} and "red" in nb.excluded_tags_


def test_missing_wordnet_says_what_to_install(tmp_path):
    with pytest.raises(WordNetUnavailable, match="wordnet-base"):
        load_wordnet(source=tmp_path, root=tmp_path / "root")


@pytest.fixture(scope="module")
def wn(tmp_path_factory):
    try:
        return load_wordnet(root=tmp_path_factory.mktemp("nltk_data"))
    except WordNetUnavailable as exc:
        pytest.skip(f"WordNet not available ({exc}); apt-get install wordnet-base wordnet-sense-index, "
                    "pip install 'hardneg[wordnet]'")


def test_wordnet_reader_loads_debian_files_offline(wn):
    assert (DEBIAN_WORDNET / "data.noun").exists()
    assert "footwear.n.01" in [s.name() for s in wn.synsets("footwear")]


def test_wordnet_hyponyms_of_the_concept(wn):
    vocab = ["sneaker", "sandal", "boot", "T-shirt", "shirt", "dress", "bag", "ankle boot", "footwear"]
    assert wordnet_hyponym_tags("footwear", vocab, wn) == ["boot", "sandal", "sneaker"]
    assert wordnet_hyponym_tags("garment", vocab, wn) == ["T-shirt", "shirt"]
    assert {"T-shirt", "shirt", "dress", "footwear"} <= set(wordnet_hyponym_tags("clothing", vocab, wn))
    assert wordnet_hyponym_tags("bag", ["sneaker", "dress"], wn) == []


def test_related_tags_combines_wordnet_and_ngd(wn):
    tags = tag_table()
    tags[70].append("sandal")  # a kind of footwear that never co-occurs with it: WordNet's part only
    got = related_tags("footwear", [t + (["footwear"] if "shoe" in t else []) for t in tags], wordnet=wn)
    assert got["sandal"] == "wordnet" and got["sneaker"] == "wordnet" and got["boot"] == "wordnet"
    assert got["shoe"] in ("wordnet", "ngd=0.00")  # a kind of footwear, and always together with it
    assert "red" not in got and "dress" not in got
