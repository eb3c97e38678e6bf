"""``hardneg zsl``: zero-shot classification by metric learning with hard negative mining ([Bucher16]).

Data is a FeatureStore: classes from its labels (``--labels``, the default)
or from tags (``--tags t1,t2``: an item with exactly one of them gets that
class); the training rows are the ``train`` split when the store has one
(the rule of ``concept train``); the seen classes are ``--seen``, or all but
``--unseen``, or by default the classes of the training rows. Class
descriptions come from ``--descriptions CSV`` (class -> attribute vector or
class -> text), else from the CSV an import recorded beside the store
(``hardneg datasets import xlsa17``), else from WordNet glosses of the class
names embedded by MiniLM (:mod:`hardneg.zeroshot._descriptions`). The model
records the descriptions of every class it was trained with, seen and unseen,
and, when trained with ``--tags``, those tags (in ``training_info_["class_tags"]``,
the training record saved with it): ``zsl eval`` then takes the classes from
the same tags unless ``--tags`` or ``--labels`` says otherwise.

An xlsa17 folder (``res101.mat`` + ``att_splits.mat``) is still accepted
wherever a store is: it is read in memory exactly as ``hardneg datasets
import xlsa17 DIR -o STORE`` would store it (same rows, order, splits and
attribute table), so both give the same model and the same scores.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ._console import console
from ._inputs import check_output_file
from ._results import check_result_outputs, emit_results
from ..exceptions import CLIError
from ._options import csv_option, html_option, json_option, out_option

app = typer.Typer(help="Zero-shot classification by metric learning (Bucher, Herbin & Jurie 2016) on a FeatureStore "
                       "(or an xlsa17 folder).", no_args_is_help=True)

_DATA_HELP = "FeatureStore (or an xlsa17 folder with res101.mat and att_splits.mat, read as its import would store it)."
_LABELS_HELP = "Classes from the store's labels and class_names (the default)."
_TAGS_HELP = "Classes from these tags (t1,t2,...): an item with exactly one of them gets that class."
_DESCRIPTIONS_HELP = ("CSV of class descriptions: class,a1,a2,... (attribute vectors) or class,text (embedded by "
                      "MiniLM). Default: the CSV recorded by the store's import, else WordNet glosses of the class names.")


# ------------------------------------------------------------------------------ data

class _FolderData:
    """An xlsa17 folder seen as the store ``hardneg datasets import xlsa17`` writes (in memory)."""

    def __init__(self, folder: str):
        from ..datasets._xlsa17 import load_xlsa17, xlsa17_items

        ds = load_xlsa17(folder)
        self._items = xlsa17_items(ds)
        self._X = ds.X[self._items.order]
        self._split = self._items.split
        self.path = folder
        self.dim = ds.X.shape[1]
        self.attrs = {"dataset": "xlsa17", "class_names": list(ds.class_names)}
        self.builtin_descriptions = (list(ds.class_names), ds.class_attributes)

    def __len__(self) -> int:
        return self._X.shape[0]

    def labels(self):
        return self._items.labels

    def select(self, *, tags=None, split=None):
        import numpy as np

        mask = np.ones(len(self), dtype=bool)
        if split is not None:
            mask &= np.array([s == split for s in self._split], dtype=bool)
        if tags is not None:
            wanted = {tags} if isinstance(tags, str) else set(tags)
            mask &= np.array([bool(wanted.intersection(t)) for t in self._items.tags], dtype=bool)
        return np.flatnonzero(mask)

    def take(self, rows):
        return self._X[rows]

    def summary(self) -> str:
        return f"{len(self)} rows of the xlsa17 folder {self.path}"


def _is_xlsa17_folder(path: str) -> bool:
    p = Path(path)
    # either file is enough: load_xlsa17 then names the one that is missing
    return p.is_dir() and not (p / "meta.json").exists() and ((p / "res101.mat").is_file() or (p / "att_splits.mat").is_file())


def _open_data(path: str):
    """A FeatureStore, or an xlsa17 folder read as its import would store it."""
    if _is_xlsa17_folder(path):
        return _FolderData(path)
    if "://" not in path and not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such FeatureStore or xlsa17 folder")
    from ..store import FeatureStore

    return FeatureStore.open(path)


def _builtin_descriptions(data):
    """``(class names, attribute vectors)`` an xlsa17 folder brings along; None for a FeatureStore."""
    return data.builtin_descriptions if isinstance(data, _FolderData) else None


def _names(option: str, value: str | None) -> list[str] | None:
    """``a,b,c`` -> ['a', 'b', 'c'] (None stays None); an empty list is an error."""
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise CLIError(f"{option}: give class names separated by commas, got {value!r}")
    if len(set(names)) != len(names):
        raise CLIError(f"{option}: names a class twice ({value!r})")
    return names


# the key of ZeroShotClassifier.training_info_ (saved with the model) that records the --tags of `zsl train`
_CLASS_TAGS = "class_tags"


def _trained_tags(clf) -> list[str] | None:
    """The ``--tags`` the model was trained with (None: its classes came from labels)."""
    recorded = getattr(clf, "training_info_", {}).get(_CLASS_TAGS)
    if not isinstance(recorded, list) or not recorded or not all(isinstance(t, str) for t in recorded):
        return None
    return recorded


def _class_space(data, path: str, tags: list[str] | None, option: str = "--tags"):
    """``(code per row (-1: no class), class name per code)``: from tags, else from labels."""
    import numpy as np

    if tags is not None:
        codes = np.full(len(data), -1, dtype=np.int64)
        hits = np.zeros(len(data), dtype=np.int64)
        for i, t in enumerate(tags):
            rows = data.select(tags=[t])
            codes[rows] = i
            hits[rows] += 1
        codes[hits != 1] = -1
        if not (codes >= 0).any():
            raise CLIError(f"{option}: no item of {path} carries exactly one of {tags}; the store has {data.summary()}")
        return codes, list(tags)
    codes = data.labels()
    if not (codes >= 0).any():
        raise CLIError(f"{path}: no item has a label; give --tags t1,t2,... to take the classes from tags "
                       f"(the store has {data.summary()})")
    stored = data.attrs.get("class_names")
    n = int(codes.max()) + 1
    if isinstance(stored, list) and len(stored) >= n:
        return codes, [str(s) for s in stored]
    present = np.unique(codes[codes >= 0])
    if n <= 2 * present.size + 1000:  # class numbers 0..n-1, densely used: codes are the numbers
        return codes, [str(c) for c in range(n)]
    # sparse class numbers (a label such as 2**63 - 1): never size a list by a label's value;
    # number the classes present in order, each named by its own number
    mapped = np.where(codes >= 0, np.searchsorted(present, np.maximum(codes, 0)), -1)
    return mapped, [str(c) for c in present.tolist()]


def _check_known(option: str, wanted: list[str], present: list[str]) -> None:
    unknown = [w for w in wanted if w not in present]
    if unknown:
        shown = ", ".join(present[:20]) + (" ..." if len(present) > 20 else "")
        raise CLIError(f"{option}: unknown class(es) {unknown[:10]}; the classes are {shown}")


def _default_split(data, split: str | None, name: str) -> str | None:
    """``--split`` as given ('' = all rows); by default ``name`` if the store has it, else all rows."""
    if split is not None:
        return split or None
    return name if data.select(split=name).size else None


def _recorded_csv(data) -> Path | None:
    """The descriptions CSV an import recorded beside the store (``attrs["descriptions"]``), if it is there."""
    name = data.attrs.get("descriptions") if isinstance(data.attrs, dict) else None
    if not isinstance(name, str) or not name or Path(name).name != name:
        return None
    p = Path(str(data.path)).parent / name
    return p if p.is_file() else None


def _descriptions(data, names: list[str], csv: str | None):
    """``(vectors, where)``: the descriptions of ``names`` and a few words saying where they came from."""
    import numpy as np

    builtin = _builtin_descriptions(data)
    if csv is None and builtin is not None:
        table, vectors = builtin
        index = {c: i for i, c in enumerate(table)}
        return np.asarray(vectors, np.float32)[[index[n] for n in names]], "the folder's attribute table (att)"
    from ..zeroshot._descriptions import class_descriptions

    if csv is None:
        recorded = _recorded_csv(data)
        if recorded is not None:
            return class_descriptions(names, csv=str(recorded)), str(recorded)
        return class_descriptions(names), "WordNet glosses embedded by MiniLM"
    return class_descriptions(names, csv=csv), csv


# ------------------------------------------------------------------------------ train

def _step_size(text: str) -> float | str:
    """--lr: 'auto' or a positive number."""
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise CLIError(f"--lr: expected 'auto' or a positive number, got {text!r}")
    return value


@app.command("train")
def train(
    data: str = typer.Argument(..., metavar="STORE", help=_DATA_HELP),
    out: str = out_option("Model file to write (.npz)."),
    labels: bool = typer.Option(False, "--labels", help=_LABELS_HELP),
    tags: str = typer.Option(None, "--tags", metavar="T1,T2,...", help=_TAGS_HELP),
    seen: str = typer.Option(None, "--seen", metavar="C1,C2,...", help="Train on these classes (default: the classes of the training rows)."),
    unseen: str = typer.Option(None, "--unseen", metavar="C1,C2,...", help="Hold these classes out; train on the others."),
    split: str | None = typer.Option(
        None, "--split", help="Train on this split ('' for all rows). Default: train when the store has one, else all rows."
    ),
    descriptions: str = typer.Option(None, "--descriptions", metavar="CSV", help=_DESCRIPTIONS_HELP),
    sampler: str = typer.Option("uncertainty", "--sampler", help="random, uncertainty ([Bucher16] Eq. (8)); correlation ([Bucher16] Eq. (9)-(10)) needs per-image attributes, which a class table lacks."),
    n_negatives: int = typer.Option(10, "--n-negatives", "-n", help="Negative pairs per positive pair."),
    m: int = typer.Option(16, "--m", help="Columns of the metric W_A."),
    lam: float = typer.Option(0.1, "--lam", help="λ: weight of the attribute regression ([Bucher16] Eq. (6))."),
    mu: float = typer.Option(1e-2, "--mu", help="μ: weight of the regularizer ([Bucher16] Eq. (6)), per pair."),
    epochs: int = typer.Option(200, "--epochs", help="Maximum training epochs (training stops at the loss plateau)."),
    lr: str = typer.Option("auto", "--lr", help="SGD step size, or 'auto' (scaled to the features: ZeroShotClassifier's lr)."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
):
    """Train on the seen classes' training rows and save the model with every class's description."""
    import numpy as np

    from ..zeroshot import ZeroShotClassifier

    if labels and tags is not None:
        raise CLIError("--labels and --tags both say where the classes come from: give one")
    if seen is not None and unseen is not None:
        raise CLIError("--seen and --unseen both choose the training classes: give one")
    from ..negatives import PAIR_SAMPLERS

    if sampler not in PAIR_SAMPLERS:
        raise CLIError(f"--sampler: expected one of {', '.join(PAIR_SAMPLERS)}, got {sampler!r}")
    if sampler == "correlation":
        raise CLIError("--sampler correlation needs per-image attribute vectors; a description table gives one vector "
                       "per class: use uncertainty")
    check_output_file(out, "--out", inputs=(data,) + ((descriptions,) if descriptions else ()))
    if descriptions is not None and not Path(descriptions).is_file():
        raise CLIError(f"--descriptions {descriptions}: no such file (expected a CSV of class descriptions)")
    ds = _open_data(data)
    codes, names = _class_space(ds, data, _names("--tags", tags))
    split_name = _default_split(ds, split, "train")
    rows = ds.select(split=split_name) if split_name else np.arange(len(ds))
    if split_name and rows.size == 0:
        raise CLIError(f"--split {split_name!r}: no rows of {data} are in this split (use --split '' for all rows); "
                       f"{ds.summary()}")
    rows = rows[codes[rows] >= 0]
    present = [names[c] for c in np.unique(codes[codes >= 0])]
    seen_names = _names("--seen", seen)
    unseen_names = _names("--unseen", unseen)
    if seen_names is not None:
        _check_known("--seen", seen_names, present)
    elif unseen_names is not None:
        _check_known("--unseen", unseen_names, present)
        seen_names = [names[c] for c in np.unique(codes[rows]) if names[c] not in unseen_names]
    else:
        seen_names = [names[c] for c in np.unique(codes[rows])]
        if len(seen_names) == len(present):
            raise CLIError(f"every class of {data} has training rows{f' (split {split_name!r})' if split_name else ''}: "
                           "give --seen or --unseen to choose the classes held out")
    seen_codes = np.array([names.index(n) for n in seen_names], dtype=np.int64)
    rows = rows[np.isin(codes[rows], seen_codes)]
    have = np.unique(codes[rows])
    empty = [names[c] for c in seen_codes if c not in have]
    if empty:
        raise CLIError(f"--seen: class(es) {empty[:10]} have no training rows"
                       f"{f' in split {split_name!r}' if split_name else ''} of {data}")
    if have.size < 2:
        raise CLIError(f"zero-shot training needs at least 2 seen classes with training rows, got {[names[c] for c in have]}")
    if len(seen_names) == len(present):
        console.print("note: no class is left unseen; `zsl eval` will need --descriptions for new classes")
    all_codes = np.array([names.index(n) for n in present], dtype=np.int64)
    vectors, where = _descriptions(ds, present, descriptions)
    X = ds.take(rows)
    if hasattr(X, "toarray"):
        X = X.toarray()
    clf = ZeroShotClassifier(sampler=sampler, n_negatives=n_negatives, m=m, lam=lam, mu=mu, n_epochs=epochs,
                             lr=_step_size(lr), random_state=seed)
    clf.fit(X, codes[rows], (all_codes, vectors))
    clf.record_descriptions(all_codes, present, vectors)
    if tags is not None:
        clf.training_info_[_CLASS_TAGS] = names  # zsl eval's default class space
    clf.save(out)
    console.print(f"trained on {rows.size:,} items of {clf.classes_.size} seen classes "
                  f"({len(present) - clf.classes_.size} unseen); descriptions: {where}; saved to {out}")


# ------------------------------------------------------------------------------ eval

def _model_names(clf, names: list[str]) -> dict:
    """Class name -> the model's label, for every class the model has a description of."""
    import numpy as np

    recorded = getattr(clf, "class_names_", None)
    if recorded is not None:
        return {str(n): lab for n, lab in zip(recorded, clf.class_descriptions_[0])}
    # a model saved before the records (xlsa17 path): its labels are the class numbers
    if np.asarray(clf.classes_).dtype.kind not in "iu":
        raise CLIError("the model records no class names and its classes are not class numbers; retrain it with `hardneg zsl train`")
    return {names[c]: c for c in np.asarray(clf.classes_) if 0 <= c < len(names)}


@app.command("eval")
def evaluate(
    model: str = typer.Argument(..., metavar="MODEL", help="Model file from `hardneg zsl train`."),
    data: str = typer.Argument(..., metavar="STORE", help=_DATA_HELP),
    labels: bool = typer.Option(
        False, "--labels", help="Classes from the store's labels and class_names (the default for a model not trained with --tags)."
    ),
    tags: str = typer.Option(None, "--tags", metavar="T1,T2,...", help=_TAGS_HELP + " Default: the --tags the model was trained with."),
    unseen: str = typer.Option(None, "--unseen", metavar="C1,C2,...", help="Unseen classes to test (default: every class of the test rows the model did not train on)."),
    split: str | None = typer.Option(
        None, "--split", help="Test on this split ('' for all rows). Default: test when the store has one, else all rows."
    ),
    descriptions: str = typer.Option(None, "--descriptions", metavar="CSV", help="CSV of the unseen classes' descriptions (default: those the model recorded)."),
    as_json: bool = json_option(),
    csv_out: str = csv_option(),
    html_out: str = html_option(),
):
    """ZSC mean per-class accuracy on the unseen classes; GZSC seen / unseen / H when seen test rows exist."""
    import numpy as np

    from ..zeroshot import load_zero_shot, zero_shot_scores

    if labels and tags is not None:
        raise CLIError("--labels and --tags both say where the classes come from: give one")
    check_result_outputs(as_json, csv_out, html_out, inputs=(data, model) + ((descriptions,) if descriptions else ()))
    if descriptions is not None and not Path(descriptions).is_file():
        raise CLIError(f"--descriptions {descriptions}: no such file (expected a CSV of class descriptions)")
    ds = _open_data(data)
    clf = load_zero_shot(model)
    if clf.n_features_in_ != ds.dim:
        raise CLIError(f"{model} expects {clf.n_features_in_} features, {data} has {ds.dim}")
    class_tags, option = _names("--tags", tags), "--tags"
    if class_tags is None and not labels and _trained_tags(clf) is not None:
        class_tags, option = _trained_tags(clf), f"the --tags {model} was trained with"
    codes, names = _class_space(ds, data, class_tags, option)
    split_name = _default_split(ds, split, "test")
    rows = ds.select(split=split_name) if split_name else np.arange(len(ds))
    if split_name and rows.size == 0:
        raise CLIError(f"--split {split_name!r}: no rows of {data} are in this split; {ds.summary()}")
    rows = rows[codes[rows] >= 0]
    known = _model_names(clf, names)
    seen_names = [n for n, lab in known.items() if lab in set(np.asarray(clf.classes_).tolist())]
    row_names = np.array(names, dtype=object)[codes[rows]]
    present = sorted(set(row_names.tolist()), key=names.index)
    unseen_names = _names("--unseen", unseen)
    if unseen_names is not None:
        _check_known("--unseen", unseen_names, present)
        bad = [n for n in unseen_names if n in seen_names]
        if bad:
            raise CLIError(f"--unseen: class(es) {bad[:10]} are seen classes of {model}")
    else:
        unseen_names = [n for n in present if n not in seen_names]
        if not unseen_names:
            raise CLIError(f"no test row of {data}{f' (split {split_name!r})' if split_name else ''} is of a class "
                           f"{model} did not train on; the store has {ds.summary()}")
    # labels in the model's space: recorded classes keep theirs, new ones get fresh ones
    label_of = dict(known)
    kind = np.asarray(clf.classes_).dtype.kind
    fresh = [n for n in unseen_names if n not in label_of]
    if descriptions is None and fresh and _builtin_descriptions(ds) is None and _recorded_csv(ds) is None:
        raise CLIError(f"{model} has no description of class(es) {fresh[:10]}: give --descriptions CSV")
    start = int(max(label_of.values(), default=-1)) + 1 if kind in "iu" else 0
    for i, n in enumerate(fresh):
        label_of[n] = start + i if kind in "iu" else n
    if descriptions is not None or fresh:
        vectors, _ = _descriptions(ds, unseen_names, descriptions)
    else:
        index = {str(n): i for i, n in enumerate(clf.class_names_)}
        vectors = clf.class_descriptions_[1][[index[n] for n in unseen_names]]
    unseen_labels = np.array([label_of[n] for n in unseen_names])
    keep = np.isin(row_names, unseen_names)
    if split_name is not None:
        keep |= np.isin(row_names, seen_names)  # seen test rows: GZSC
    elif not (as_json or csv_out == "-"):  # a note on stdout would break the JSON / CSV there
        console.print("note: no test split; GZSC is skipped (the seen classes' rows include the training rows)")
    rows, row_names = rows[keep], row_names[keep]
    y = np.array([label_of[n] for n in row_names])
    X = ds.take(rows)
    if hasattr(X, "toarray"):
        X = X.toarray()
    scores = zero_shot_scores(clf, X, y, (unseen_labels, vectors), unseen_classes=unseen_labels)
    if as_json or csv_out or html_out:
        emit_results(dict(scores), title=f"{model} on {data}", as_json=as_json, csv_out=csv_out, html_out=html_out, figures=True)
    if as_json or csv_out == "-":
        return
    console.print(f"ZSC mean per-class accuracy ({len(unseen_names)} unseen classes): {100 * scores['zsl']:.2f}")
    if "harmonic" in scores:
        console.print(f"GZSC seen {100 * scores['seen']:.2f}  unseen {100 * scores['unseen']:.2f}  H {100 * scores['harmonic']:.2f}")

