"""Builds beside a store: an import holds the store's lock while it builds, and build folders
left by killed processes are removed by the next writer, never those of a live one (issue 39 item 12)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from hardneg.store import FeatureStore, StoreLockedError
from hardneg.store._edit import remove_items
from hardneg.store._import import import_embeddings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def emb(tmp_path):
    np.save(tmp_path / "e.npy", np.random.default_rng(0).random((8, 3)).astype(np.float32))
    return tmp_path / "e.npy"


def _hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or p.name.endswith((".creating", ".deleting")))


def test_a_remove_cannot_delete_a_running_import_s_build(tmp_path, emb):
    import_embeddings(emb, tmp_path / "x")
    seen = []

    def meanwhile(n):
        if not seen:
            with pytest.raises(StoreLockedError):
                remove_items(tmp_path / "x", ["0"])
            seen.append(_hidden(tmp_path))

    store = import_embeddings(emb, tmp_path / "x", overwrite=True, block_rows=4, progress=meanwhile)
    assert len(store) == 8 and seen and len(seen[0]) == 1 and seen[0][0].endswith(".swap")  # the build was left alone
    assert _hidden(tmp_path) == []


_KILLED_IMPORT = """
import os, signal, sys
from hardneg.store._import import import_embeddings
def die(n):
    os.kill(os.getpid(), signal.SIGKILL)
import_embeddings(sys.argv[1], sys.argv[2], overwrite=True, block_rows=4, progress=die)
"""


def test_build_folders_of_killed_processes_are_removed_by_the_next_import(tmp_path, emb):
    import_embeddings(emb, tmp_path / "x")
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-c", _KILLED_IMPORT, str(emb), str(tmp_path / "x")], env=env, timeout=300)
    assert proc.returncode == -9
    stale = _hidden(tmp_path)
    assert len(stale) == 1 and stale[0].endswith(".swap")  # what the killed import left
    # a build of a live process (its lock held) beside it must survive
    live = tmp_path / (".x." + "f" * 32 + ".swap")
    FeatureStore.create(live, dim=3).close()
    holder = FeatureStore.open(live, mode="a")
    try:
        import_embeddings(emb, tmp_path / "x", overwrite=True)
        assert _hidden(tmp_path) == [live.name]
    finally:
        holder.close()
    assert len(FeatureStore.open(tmp_path / "x")) == 8


def test_a_create_folder_left_by_a_dead_process_is_removed_by_the_next_create(tmp_path):
    """FeatureStore.create (extract, datasets import) builds in NAME.<rand>.creating: a killed one
    leaves it; the next create of NAME removes it when its lock is free, never a live builder's."""
    stale = tmp_path / "x.abcd1234.creating"
    FeatureStore.create(stale, dim=2).close()  # a complete build folder, its lock free
    starting = tmp_path / "x.efgh5678.creating"  # just made, no meta.json yet: a builder may be about to lock it
    starting.mkdir()
    (starting / ".lock").touch()
    partial = tmp_path / "x.ijkl9012.creating"  # the same, but an hour old: its builder died
    partial.mkdir()
    (partial / ".lock").touch()
    old = os.stat(partial).st_mtime - 3600
    os.utime(partial, (old, old))
    FeatureStore.create(tmp_path / "x", dim=2).close()
    assert not stale.exists() and not partial.exists() and starting.exists()


def test_an_old_store_moved_aside_is_kept_while_nothing_is_in_its_place(tmp_path, emb):
    """A kill between the two renames of a swap leaves the old store only under a .swap name."""
    import_embeddings(emb, tmp_path / "x")
    aside = tmp_path / (".x." + "a" * 32 + ".swap")
    os.rename(tmp_path / "x", aside)
    import_embeddings(emb, tmp_path / "x")
    assert (aside / "meta.json").is_file()  # not deleted: it was the only copy when the import began
