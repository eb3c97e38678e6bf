"""docs/hooks.py's rewrites on small HTML: Sphinx roles to links or code, plain-text formulas to maths.

The site test (test_docs_site.py) checks the built pages; these pin the rules on
cases small enough to read.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hardneg_docs_hooks", ROOT / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)

DOCUMENTED = {"hardneg.store.FeatureStore", "hardneg.store.FeatureStore.save", "hardneg.load",
              "hardneg.concept.search", "hardneg.ModelFileError"}


def _roles(html: str) -> str:
    return hooks.replace_roles(html, DOCUMENTED.__contains__)


@pytest.mark.parametrize("html, expected", [
    # a documented target: an autorefs reference (resolved to a link by mkdocs-autorefs after the hook)
    (":func:<code>hardneg.concept.search</code>",
     '<autoref identifier="hardneg.concept.search" optional><code>hardneg.concept.search</code></autoref>'),
    # ~ shows the last name only
    (":class:<code>~hardneg.store.FeatureStore</code>",
     '<autoref identifier="hardneg.store.FeatureStore" optional><code>FeatureStore</code></autoref>'),
    # a private module's name resolves to where the package re-exports it
    (":class:<code>hardneg._persist.ModelFileError</code>",
     '<autoref identifier="hardneg.ModelFileError" optional><code>hardneg._persist.ModelFileError</code></autoref>'),
    # not on the site: plain code, no broken link
    (":func:<code>hardneg.zeroshot._descriptions.wordnet_gloss</code>",
     "<code>hardneg.zeroshot._descriptions.wordnet_gloss</code>"),
    # inside a parameter's type (already code): the role and its backticks go, Sphinx ``literals`` too
    ("<code>path of a :class:`~hardneg.store.FeatureStore` or ``None``</code>",
     '<code>path of a <autoref identifier="hardneg.store.FeatureStore" optional>FeatureStore</autoref> or None</code>'),
])
def test_roles_become_references_or_code(html, expected):
    assert _roles(html) == expected


def test_a_relative_role_resolves_against_the_object_whose_docstring_holds_it():
    html = ('<h3 id="hardneg.store.FeatureStore" class="doc doc-heading">FeatureStore</h3>'
            "<p>Write it with :meth:<code>save</code>.</p>")
    out = _roles(html)
    assert '<autoref identifier="hardneg.store.FeatureStore.save" optional><code>save</code></autoref>' in out
    assert ":meth:" not in out


@pytest.mark.parametrize("text, formulas", [
    ("averages it in by [Li13] Eq. (9), G_{T+1} = T/(T+1) G_T + 1/(T+1) g_{T+1}. Each call",
     [r"G_{T+1} = T/(T+1) G_T + 1/(T+1) g_{T+1}"]),
    ("Ensemble weights lambda_t ([Li13] Eq. (10)); uniform", [r"\lambda_t"]),
    ("no ensemble: G_t = g_t.", ["G_t = g_t"]),
    ("+ alpha_neg sum_i max(0, 1 + z_i.w)", [r"\alpha_{neg} \sum_i \max(0, 1 + z_i.w)"]),
    ("encoded against N^{k-1} without itself", ["N^{k-1}"]),
    ("bit k of a code is sign(w_k . x + b_k), so", [r"\operatorname{sign}(w_k . x + b_k)"]),
    # Unicode symbols become their TeX
    ("a metric, S(X, Y) = ‖(Â_X(X) − Y)ᵀ W_A‖₂ ([Bucher16] Eq. (1)), from",
     [r"S(X, Y) = \|(\hat{A}_X(X) - Y)^T W_A\|_2"]),
    ("R = ‖W_X‖²_F + ‖b_X‖².", [r"R = \|W_X\|^2_F + \|b_X\|^2"]),
    # two formulas split by a comma stay two (never one inside the other)
    ("∝ u_t · q(Y), q(Y) = exp(−mean_{Y′∈𝒴_k} ‖Y − Y′‖); needs",
     [r"u_t \cdot  q(Y)", r"q(Y) = \exp(-\operatorname{mean}_{Y'\in \mathcal{Y}_k} \|Y - Y'\|)"]),
    # identifiers and file names are not maths
    ("fit_s ap_at_k best_at_recall_0.99 concept_openclipart_m.json `g_t`", []),
])
def test_plain_text_formulas_become_maths(text, formulas):
    out = hooks.math_spans(text)
    found = [part.split(r"\)</span>")[0] for part in out.split(r'<span class="arithmatex">\(')[1:]]
    assert found == formulas


def test_maths_is_not_marked_up_in_code_links_or_headings():
    html = "<h2>G_T</h2><p><code>g_{T+1}</code> <a href='#'>H_i</a> and H_i</p><pre>w_{t+1}</pre>"
    assert hooks.wrap_maths(html) == ("<h2>G_T</h2><p><code>g_{T+1}</code> <a href='#'>H_i</a> and "
                                      r'<span class="arithmatex">\(H_i\)</span></p><pre>w_{t+1}</pre>')


def test_mathjax_comes_from_an_installed_package():
    pytest.importorskip("mathjax", reason="django-static-mathjax (the docs extra) is not installed")
    assert hooks.mathjax_source().stat().st_size > 1_000_000
