"""Store-wide jobs on a Dask LocalCluster give the same bytes as in process.

One 2-worker LocalCluster (processes, one thread each) serves the module.
Equality is exact (``np.array_equal`` on the float64 scores, bytes of codes
and of encoded stores): the partition functions are the same code on the same
partitions, and the top-k merge breaks ties by row, so the order partitions
finish in cannot change the result. The k-NN scan is compared with a NumPy
brute force by rows (scores within 1e-5: FAISS and NumPy sum in another order).
"""

import json
import os
import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from hardneg.cli.main import main  # noqa: E402
from hardneg._topk import merge_topk, topk_of  # noqa: E402
from hardneg.concept import search  # noqa: E402
from hardneg.concept._search import score_rows  # noqa: E402
from hardneg.distributed import DaskRunner, Runner, get_runner, partitions  # noqa: E402
from hardneg.encoding import encode_store  # noqa: E402
from hardneg.features import extract_to_store  # noqa: E402
from hardneg.index import HammingIndex, knn_topk  # noqa: E402
from hardneg.store import FeatureStore  # noqa: E402

N, DIM, CHUNK, PART = 3000, 16, 256, 512  # 6 partitions of 2 chunks


@pytest.fixture(scope="module")
def runner():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = distributed.Client(cluster)
    # both workers up before any test scatters: a broadcast reaches only the workers connected at
    # that moment, and data scattered to the one worker a test then kills cannot be recovered
    client.wait_for_workers(2, timeout=120)
    # the killing model below is defined here: ship it by value, workers cannot import tests/
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield DaskRunner(client)
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dist")
    rng = np.random.default_rng(0)
    X = rng.random((N, DIM)).astype(np.float32)
    X[:200, 0] += 1.5
    X[2000:2010] = X[5]  # exact duplicates: tied scores across partitions
    tags = [["boat"] if i < 200 else ["other"] for i in range(N)]
    with FeatureStore.create(folder / "s", dim=DIM, chunk_rows=CHUNK) as st:
        st.append(X, tags=tags, labels=np.arange(N) % 7, split=["train" if i % 2 else "test" for i in range(N)])
    return folder, X


@pytest.fixture(scope="module")
def concept(data):
    from hardneg.concept import NegativeBootstrap

    folder, X = data
    model = NegativeBootstrap(n_iter=2, random_state=0).fit(X[:100], X[200:1200]).compress(n_bins=30)
    path = folder / "boat.npz"
    model.save(path)
    return model, path


def test_partitions_follow_the_chunk_grid(data):
    st = FeatureStore.open(data[0] / "s")
    parts = partitions(st, 300)  # rounded up to 2 chunks
    assert [p[:2] for p in parts] == [(0, 512), (512, 1024), (1024, 1536), (1536, 2048), (2048, 2560), (2560, 3000)]
    assert [p[:2] for p in partitions(st, 512, start=700)] == [(700, 1024), (1024, 1536), (1536, 2048), (2048, 2560), (2560, 3000)]
    sub = partitions(st, 512, rows=np.array([3, 600, 601, 2999]))
    assert [(p.lo, p.rows.tolist()) for p in sub] == [(0, [3]), (512, [600, 601]), (2560, [2999])]
    assert sum(p.size for p in partitions(st)) == N


def test_topk_merge_is_order_free_and_tie_exact():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 20, 500).astype(np.float64)  # many ties
    rows = rng.permutation(500)
    want = np.lexsort((rows, -scores))[:37]
    pieces = np.array_split(np.arange(500), 9)
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(9)
        parts = [topk_of(rows[pieces[i]], scores[pieces[i]], 37) for i in order]
        while len(parts) > 1:  # pairwise, as a tree reduction would
            parts = [merge_topk(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        assert parts[0].rows[0].tolist() == rows[want].tolist() and parts[0].n_scanned == 500


@pytest.mark.parametrize("by_path", [True, False])
def test_concept_scan_on_the_cluster_equals_in_process(data, concept, runner, by_path):
    folder, X = data
    model, path = concept
    here = search(model, folder / "s", k=50, partition_rows=PART)
    there = search(path if by_path else model, folder / "s", k=50, partition_rows=PART, runner=runner)
    assert np.array_equal(here.rows, there.rows) and np.array_equal(here.scores, there.scores) and here.ids == there.ids
    ref = model.decision_function(X).astype(np.float64)
    assert here.rows.tolist() == np.lexsort((np.arange(N), -ref))[:50].tolist()
    assert np.array_equal(here.scores, ref[here.rows])


def test_concept_scan_of_a_split_and_progress(data, concept, runner):
    folder, X = data
    st = FeatureStore.open(folder / "s")
    rows = st.select(split="test")
    seen = []
    res = search(concept[1], st, k=20, rows=rows, partition_rows=PART, runner=runner, progress=seen.append)
    assert sum(seen) == rows.size and len(seen) == 6
    ref = concept[0].decision_function(X[rows]).astype(np.float64)
    assert res.rows.tolist() == rows[np.lexsort((rows, -ref))[:20]].tolist()


def test_scores_for_evaluation_on_the_cluster_equal_in_process(data, concept, runner):

    folder, X = data
    rows = np.arange(1, N, 3)
    here = score_rows(concept[0], folder / "s", rows, partition_rows=PART)
    there = score_rows(concept[1], folder / "s", rows, partition_rows=PART, runner=runner)
    assert np.array_equal(here, there) and np.array_equal(here, concept[0].decision_function(X[rows]).astype(np.float64))


def test_knn_scan_on_the_cluster_equals_in_process_and_brute_force(data, runner):
    folder, X = data
    Q = X[[5, 17, 2500]]
    for metric in ("cosine", "ip", "l2"):
        here = knn_topk(folder / "s", Q, k=15, metric=metric, partition_rows=PART)
        there = knn_topk(folder / "s", Q, k=15, metric=metric, partition_rows=PART, runner=runner)
        assert np.array_equal(here.rows, there.rows) and np.array_equal(here.scores, there.scores)
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True) if metric == "cosine" else X.astype(np.float64)
        Qn = Xn[[5, 17, 2500]]
        ref = -((Qn[:, None, :] - Xn[None]) ** 2).sum(-1) if metric == "l2" else Qn @ Xn.T
        got = -here.distances if metric == "l2" else here.scores  # l2: squared distances, nearest first
        for q in range(3):
            np.testing.assert_allclose(got[q], np.sort(ref[q])[::-1][:15], rtol=1e-5, atol=1e-5)
        if metric == "l2":  # the duplicates of row 5 tie at distance 0: lowest rows first
            assert here.rows[0, :11].tolist() == [5] + list(range(2000, 2010))


def test_hash_index_on_the_cluster_equals_from_store(data, runner, tmp_path):
    from hardneg.hashing import PCAITQHasher, load_hasher

    folder, X = data
    hasher = PCAITQHasher(n_bits=16, random_state=0).fit(X[:1000])
    hasher.save(tmp_path / "h.npz")
    st = FeatureStore.open(folder / "s")
    ref = HammingIndex.from_store(st, hasher)
    here = HammingIndex.from_store(st, hasher, partition_rows=PART, chunk_rows=300)
    there = HammingIndex.from_store(st, tmp_path / "h.npz", partition_rows=PART, chunk_rows=300, runner=runner)
    for idx in (here, there):
        assert np.array_equal(idx.codes(), ref.codes()) and idx.ids.tolist() == ref.ids.tolist()
        assert idx.meta == ref.meta
    idx = there
    idx.check_hasher(load_hasher(tmp_path / "h.npz"))


E_ROWS, E_CHUNK, E_PART = 160, 16, 32  # E-SVM encoding solves an SVM per row: a smaller store, 5 partitions


@pytest.fixture(scope="module")
def esvm(data):
    from hardneg.encoding import ESVMEncoder

    folder, X = data
    with FeatureStore.create(folder / "small", dim=DIM, chunk_rows=E_CHUNK) as st:
        st.append(X[:E_ROWS], tags=[["boat"] if i < 50 else [] for i in range(E_ROWS)], labels=np.arange(E_ROWS) % 3)
    enc = ESVMEncoder(alpha_neg=0.01, min_negatives=20, random_state=0).fit(X[1000:1200])
    enc.save(folder / "esvm.npz")
    return enc, folder / "esvm.npz"


def _same_store(a, b):
    a, b = FeatureStore.open(a), FeatureStore.open(b)
    assert np.array_equal(a.to_numpy(), b.to_numpy())
    for col in ("id", "tags", "label", "split"):
        assert a.items.column(col).to_pylist() == b.items.column(col).to_pylist()


def test_esvm_encoding_on_the_cluster_equals_in_process(data, esvm, runner, tmp_path):
    folder, X = data
    enc, path = esvm
    here = encode_store(enc, folder / "small", tmp_path / "here", partition_rows=E_PART)
    there = encode_store(path, folder / "small", tmp_path / "there", partition_rows=E_PART, runner=runner)
    _same_store(here.path, there.path)
    assert len(here) == E_ROWS and len(here._meta["parts"]) == 5  # one commit per partition
    np.testing.assert_array_equal(here.take(np.arange(10)), enc.transform(X[:10]))


# --------------------------------------------- one implementation per job: the library entry points take runner=


def test_concept_search_of_an_array_and_a_store_on_the_cluster_equals_in_process(data, concept, runner):
    from hardneg.concept import search

    folder, X = data
    model, _ = concept
    rows = np.arange(0, N, 5)
    for source in (X, FeatureStore.open(folder / "s")):  # an array is one partition
        here = search(model, source, k=30, rows=rows, chunk_rows=300)
        there = search(model, source, k=30, rows=rows, chunk_rows=300, runner=runner)
        assert here == there and here.n_scanned == rows.size
    a, b = search(model, X, k=30), search(model, folder / "s", k=30, runner=runner)  # array vs store: ids differ only
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.scores, b.scores) and b.ids[0] == f"{int(b.rows[0])}"


def test_hamming_from_store_with_nlist_on_the_cluster_equals_in_process(data, runner, tmp_path):
    from hardneg.hashing import LSHHasher

    folder, X = data
    hasher = LSHHasher(n_bits=32, random_state=0).fit(X[:500])
    hasher.save(tmp_path / "h.npz")
    st = FeatureStore.open(folder / "s")
    here = HammingIndex.from_store(st, hasher, nlist=8, nprobe=2, chunk_rows=300)
    there = HammingIndex.from_store(st, tmp_path / "h.npz", nlist=8, nprobe=2, chunk_rows=300, runner=runner,
                                    partition_rows=PART)
    alias = HammingIndex.from_store(st, hasher, nlist=8, nprobe=2, runner=runner)
    for idx in (there, alias):
        assert idx.approximate and idx.nlist == 8 and idx.meta == here.meta
        assert np.array_equal(idx.codes(), here.codes()) and idx.ids.tolist() == here.ids.tolist()
    q = hasher.transform(X[:5])
    assert there.search(q, 10) == here.search(q, 10)


def test_library_encode_store_on_the_cluster_equals_in_process(data, esvm, runner, tmp_path):
    folder, X = data
    enc, path = esvm
    here = encode_store(enc, folder / "small", tmp_path / "here", batch_rows=40)
    there = encode_store(path, folder / "small", tmp_path / "there", batch_rows=40, runner=runner)
    _same_store(here.path, there.path)
    assert len(here._meta["parts"]) == E_ROWS // 40  # one commit per batch_rows, in process and on the cluster


def test_knn_and_zero_shot_search_of_an_array_on_the_cluster_equal_in_process(data, runner):
    from hardneg.zeroshot import ZeroShotClassifier, zero_shot_search

    folder, X = data
    for metric in ("cosine", "l2"):
        here = knn_topk(X[:1000], X[[3, 4]], k=12, metric=metric, block_rows=128)
        assert knn_topk(X[:1000], X[[3, 4]], k=12, metric=metric, block_rows=128, runner=runner) == here
    y = np.arange(600) % 3
    attrs = np.eye(3)
    clf = ZeroShotClassifier(n_epochs=2, m=4, random_state=0).fit(X[:600], y, attrs)
    st = FeatureStore.open(folder / "s")
    here = zero_shot_search(clf, st, attrs, k=9)
    assert zero_shot_search(clf, st, attrs, k=9, runner=runner) == here and here.n_queries == 3


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize("resume_on_cluster", [False, True])
def test_interrupted_encoding_resumes_to_the_clean_result(data, esvm, runner, tmp_path, resume_on_cluster):
    folder, X = data
    enc, path = esvm
    clean = encode_store(enc, folder / "small", tmp_path / "clean", partition_rows=E_PART)

    def stop_after_two(n_rows):
        if n_rows >= 2 * E_PART:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        encode_store(path, folder / "small", tmp_path / "cut", partition_rows=E_PART, runner=runner, on_commit=stop_after_two)
    assert len(FeatureStore.open(tmp_path / "cut")) == 2 * E_PART  # two whole partitions committed
    seen = []
    out = encode_store(path, folder / "small", tmp_path / "cut", partition_rows=E_PART, runner=runner if resume_on_cluster else None,
                       progress=seen.append)
    assert seen[0] == 2 * E_PART and sum(seen) == E_ROWS and len(out) == E_ROWS
    _same_store(clean.path, out.path)


class _KillsItsWorker:
    """A concept model whose first scoring on a worker kills that worker's process."""

    def __init__(self, model, marker):
        self.model, self.marker = model, str(marker)
        self.n_features_in_ = model.n_features_in_

    def decision_function(self, X):
        try:
            distributed.get_worker()
        except ValueError:  # in the client: never kill the test process
            return self.model.decision_function(X)
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return self.model.decision_function(X)
        os.close(fd)
        os._exit(1)


def test_a_worker_killed_mid_scan_loses_and_doubles_nothing(data, concept, runner, tmp_path):
    folder, X = data
    model, _ = concept
    seen = []
    runner.client.wait_for_workers(2, timeout=120)  # the model is scattered to both: one copy survives the kill
    here = search(model, folder / "s", k=N, partition_rows=PART)  # k = every row: a lost or doubled row shows
    there = search(_KillsItsWorker(model, tmp_path / "killed"), folder / "s", k=N, partition_rows=PART, runner=runner,
                      progress=seen.append)
    assert (tmp_path / "killed").exists()  # a worker did die
    assert sorted(there.rows.tolist()) == list(range(N)) and sum(seen) == N and len(seen) == 6
    assert np.array_equal(here.rows, there.rows) and np.array_equal(here.scores, there.scores)
    runner.client.wait_for_workers(2, timeout=60)  # the nanny restarts it for the next tests


def test_a_shared_model_survives_the_death_of_every_worker_holding_it(concept, runner):
    # share() makes a model the result of a task the scheduler keeps, so a copy lost with its
    # workers is made again (a scattered one could not be: "lost dependencies")
    model, _ = concept
    runner.client.wait_for_workers(2, timeout=120)
    handle = runner.share(model)
    handle.result()
    holders = list(runner.client.who_has([handle])[handle.key])
    assert holders
    runner.client.restart_workers(holders, timeout=120)  # new processes: every copy is gone
    runner.client.wait_for_workers(2, timeout=120)
    X = np.ones((3, model.n_features_in_), dtype=np.float32)
    got = runner.client.submit(lambda m, x: m.decision_function(x), handle, X, pure=False).result(timeout=120)
    assert np.array_equal(got, model.decision_function(X))


def test_cli_search_and_index_with_a_scheduler(data, concept, runner, tmp_path, capsys, monkeypatch):
    folder, X = data
    _, model_path = concept
    address = runner.client.scheduler.address
    base = ["concept", "search", str(model_path), str(folder / "s"), "-k", "7", "--json"]
    assert main(base) == 0
    here = json.loads(capsys.readouterr().out)
    assert main(base + ["--scheduler", address]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == here and f"running on Dask: 2 worker thread(s) at {address}" in out.err
    monkeypatch.setenv("HARDNEG_SCHEDULER", address)
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out) == here
    monkeypatch.delenv("HARDNEG_SCHEDULER")
    assert main(base + ["--scheduler", address, "--workers", "2"]) == 2
    assert "not both" in capsys.readouterr().err
    ev = ["concept", "eval", str(model_path), str(folder / "s"), "--split", "test", "--concept", "boat", "--json"]
    assert main(ev) == 0
    here = json.loads(capsys.readouterr().out)
    assert main(ev + ["--scheduler", address]) == 0
    assert json.loads(capsys.readouterr().out) == here
    knn = ["knn", str(folder / "s"), "-q", "5", "-q", "17", "-k", "6", "--metric", "l2", "--json"]
    assert main(knn) == 0
    here = json.loads(capsys.readouterr().out)
    assert main(knn + ["--scheduler", address]) == 0
    assert json.loads(capsys.readouterr().out) == here
    assert [r["id"] for r in here[:5]] == [str(i) for i in range(2000, 2005)]  # row 5's duplicates, by row; row 5 itself left out
    assert main(knn + ["--scheduler", address, "--index", "hnsw"]) == 2


def test_cli_workers_starts_a_local_cluster_and_prints_the_dashboard(data, capsys):
    folder, _ = data
    knn = ["knn", str(folder / "s"), "-q", "5", "-k", "3", "--json"]
    assert main(knn) == 0
    here = json.loads(capsys.readouterr().out)
    assert main(knn + ["--workers", "1"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == here and "running on Dask: 1 worker thread(s)" in out.err and "dashboard: http" in out.err


def test_runner_choice_and_errors(monkeypatch):
    with get_runner() as r:
        assert type(r) is Runner and r.client is None
    with pytest.raises(ValueError, match="not both"):
        with get_runner(2, "tcp://127.0.0.1:1"):
            pass
    with pytest.raises(ValueError, match="workers"):
        with get_runner(0):
            pass
    with pytest.raises(ValueError, match="no partitions"):
        Runner().map_reduce(len, [], merge_topk)


def test_store_urls(data):
    folder, _ = data
    assert len(FeatureStore.open(f"file://{folder / 's'}")) == N
    with pytest.raises(ValueError, match="written to a local or shared-filesystem folder"):
        FeatureStore.create("s3://bucket/store", dim=4)


def test_image_extraction_on_the_cluster_equals_in_process(runner, tmp_path):
    from PIL import Image

    from hardneg.features import BagOfWords, DenseSift

    rng = np.random.default_rng(0)
    paths = []
    for i in range(11):
        p = tmp_path / "img" / f"{i:02d}.png"
        p.parent.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (40, 40), dtype=np.uint8)).save(p)
        paths.append(str(p))
    (tmp_path / "img" / "bad.png").write_bytes(b"not an image")
    paths.insert(5, str(tmp_path / "img" / "bad.png"))
    ids = [os.path.basename(p) for p in paths]

    def bow():
        return BagOfWords(DenseSift(step=8, bin_sizes=(4,)), n_words=8, random_state=0)

    ref = extract_to_store(paths, tmp_path / "here", bow(), ids=ids, batch_size=3, tags=[[i] for i in ids])
    got = extract_to_store(paths, tmp_path / "there", bow(), ids=ids, batch_size=3, tags=[[i] for i in ids], runner=runner)
    assert (got.n_added, got.n_failed) == (ref.n_added, ref.n_failed) == (11, 1)
    _same_store(tmp_path / "here", tmp_path / "there")
    again = extract_to_store(paths, tmp_path / "there", bow(), ids=ids, batch_size=3, runner=runner)  # a rerun skips what is there
    assert again.n_added == 0 and again.n_already == 11
