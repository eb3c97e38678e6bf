"""A new hasher is its module plus one entry in ``hardneg/hashing/_registry.py`` (docs/contributing.md).

A hasher defined outside the package (here, in a module of its own) and added to ``METHODS`` reaches,
with nothing else changed: ``HASHERS``, the package's exports, ``hardneg.load`` (by its ``hash-`` kind),
and the CLI's ``hash train --method`` choices and help. Run in a fresh interpreter, where the entry is
added before anything reads the list (as an entry in the file would be).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np

from hardneg.store import FeatureStore

SIGN_HASHER = '''
import numpy as np
from hardneg._persist import ArraySpec
from hardneg._validation import RANDOM_STATE
from hardneg.hashing._base import N_BITS, BaseHasher


class SignHasher(BaseHasher):
    """Bits: the signs of the first ``n_bits`` centred features."""

    _kind = "hash-sign"
    _parameter_constraints = {"n_bits": [N_BITS], "random_state": RANDOM_STATE}
    _schema = {"mean": ArraySpec("f", 1)}

    def __init__(self, n_bits=64, *, random_state=None):
        self.n_bits = n_bits
        self.random_state = random_state

    def fit(self, X, y=None, X_unlabeled=None):
        n_bits = self._check_n_bits()
        X = self._check_X(X, fitting=True)
        self.mean_ = X.mean(axis=0).astype(np.float32)
        self.n_bits_ = n_bits
        return self

    def embed(self, X):
        return (self._check_X(X) - self.mean_)[:, : self.n_bits_]

    def _to_arrays(self):
        return {"mean": self.mean_}

    def _from_arrays(self, arrays, meta):
        self.mean_ = arrays["mean"]
'''

SCRIPT = '''
import json, sys
sys.path.insert(0, {folder!r})
from hardneg.hashing._registry import METHODS, HasherMethod
METHODS["sign"] = HasherMethod("sign_hasher", "SignHasher", "signs of centred features")

import hardneg, hardneg.hashing
from hardneg.cli.main import main

out = {{"exported": hardneg.hashing.SignHasher.__name__, "in_HASHERS": "sign" in hardneg.hashing.HASHERS}}
code = main(["hash", "train", {store!r}, "--method", "sign", "--bits", "4", "-o", {model!r}])
out["train_rc"] = code
out["loaded"] = type(hardneg.load({model!r})).__name__
out["codes"] = hardneg.load({model!r}).transform(hardneg.store.FeatureStore.open({store!r}).take([0, 1])).tolist()
print("RESULT " + json.dumps(out))
'''


def test_a_new_hasher_is_one_module_and_one_entry(tmp_path):
    (tmp_path / "sign_hasher.py").write_text(textwrap.dedent(SIGN_HASHER))
    X = np.array([[1, -1, 2, 0, 5], [-1, 1, -2, 0, 5], [3, 3, 0, 1, 5], [-3, -3, 0, -1, 5]], np.float32)
    with FeatureStore.create(tmp_path / "s", dim=5) as st:
        st.append(X, ids=[f"i{k}" for k in range(4)])
    script = SCRIPT.format(folder=str(tmp_path), store=str(tmp_path / "s"), model=str(tmp_path / "sign.npz"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert out["exported"] == "SignHasher" and out["in_HASHERS"]
    assert out["train_rc"] == 0 and out["loaded"] == "SignHasher"
    # the mean is (0, 0, 0, 0, 5): row 0's centred signs (+, -, +, 0) -> bits 1010, packed 0b10100000
    assert out["codes"] == [[0b10100000], [0b01000000]]

    # the CLI lists it among the --method choices, with its phrase, and refuses an unknown one
    help_script = SCRIPT.split("import hardneg, hardneg.hashing")[0] + (
        "from hardneg.cli.main import main\nmain(['hash', 'train', '--help'])\n")
    proc = subprocess.run([sys.executable, "-c", help_script.format(folder=str(tmp_path), store="", model="")],
                          capture_output=True, text=True, timeout=300, env={"COLUMNS": "200", **_env()})
    assert "sign (signs of centred features)" in proc.stdout


def _env():
    import os

    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}
