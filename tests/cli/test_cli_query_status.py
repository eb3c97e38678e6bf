"""Query by a stored item says what it is doing before the results (issue 26: `knn` and
`hash search` by stored id were silent for seconds), and the work behind it stays light."""

import json
import subprocess
import sys

import numpy as np

from hardneg.cli.main import main
from hardneg.store import FeatureStore


def _store(path):
    rng = np.random.default_rng(0)
    with FeatureStore.create(path, dim=8, chunk_rows=16) as st:
        st.append(rng.normal(size=(40, 8)).astype(np.float32), ids=[f"item{i}" for i in range(40)])
    return str(path)


def test_knn_by_stored_id_announces_the_read(capsys, tmp_path):
    store = _store(tmp_path / "s")
    assert main(["knn", store, "-q", "item3", "-k", "2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "reading 1 stored query from" in err
    assert [r["query"] for r in json.loads(out)] == ["item3", "item3"]


def test_hash_search_by_stored_id_announces_the_read(capsys, tmp_path):
    store = _store(tmp_path / "s")
    model, index = str(tmp_path / "h.npz"), str(tmp_path / "h.index")
    assert main(["hash", "train", store, "-o", model, "--method", "lsh", "--bits", "8"]) == 0
    assert main(["hash", "index", model, store, "-o", index]) == 0
    capsys.readouterr()
    assert main(["hash", "search", model, index, "--store", store, "-q", "item1", "-q", "item2", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "reading 2 stored queries from" in err
    assert {r["query"] for r in json.loads(out)} == {"item1", "item2"}


def test_the_runner_module_does_not_import_the_jobs():
    """Every CLI command opens its runner; the jobs behind `hardneg.distributed` pull in scikit-learn."""
    code = ("import sys, hardneg._parallel._runner, hardneg.features._images; "
            "print(sorted(m for m in ('sklearn', 'scipy.stats', 'hardneg.concept') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_package_exports_resolve():
    import hardneg.distributed as distributed
    import hardneg.features as features

    for package in (distributed, features):
        for name in package.__all__:
            assert getattr(package, name) is not None, name
        assert set(package.__all__) <= set(dir(package))
