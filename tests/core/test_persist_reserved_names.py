"""save_model refuses array names that np.savez would take as its own keywords (found by mypy, issue 25)."""

import numpy as np
import pytest

from hardneg._persist import save_model


@pytest.mark.parametrize("name", ["file", "allow_pickle"])
def test_savez_keyword_names_refused(tmp_path, name):
    # before: "file" raised savez's TypeError; "allow_pickle" was taken as the flag,
    # leaving a file without the array that then failed its checksum on load
    with pytest.raises(ValueError, match="reserved"):
        save_model(tmp_path / "m.npz", "k", 1, {name: np.arange(3)}, {})
    assert not (tmp_path / "m.npz").exists()
