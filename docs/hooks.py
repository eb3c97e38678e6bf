"""MkDocs hooks: generated results, Sphinx roles as links, maths rendered offline.

- ``on_config`` runs ``docs/generate.py`` into ``docs/generated/`` (not committed), so
  the site's results cannot drift from ``benchmarks/results/*.json``, and adds one
  navigation entry per benchmark script under "Benchmarks".
- ``on_page_markdown`` replaces the figures a page quotes in its prose
  (``{{ NAME/KEY/KEY | FORMAT }}``, see ``docs/generate.py``'s ``QUOTE``) by their values in
  ``benchmarks/results/NAME.json`` and lists those files, with command and commit, at the
  page's end.
- ``on_page_content`` wraps the plain-text formulas of a page (``G_{T+1} = T/(T+1) G_T``,
  ``lambda_t``, ``||x - y||^2``) in arithmatex spans that MathJax typesets; code, links
  and headings are left alone, and so are the generated benchmark pages (their column
  names such as ``fit_s`` are not maths).
- ``on_env`` turns the docstrings' Sphinx roles (``:func:`x```, ``:class:`~a.B```…),
  which mkdocstrings passes through verbatim, into mkdocs-autorefs cross-references
  when the target is documented on the site, and into inline code otherwise. The
  docstrings keep the numpydoc/Sphinx form; only the site's rendering changes.
- ``on_post_build`` copies MathJax (``tex-svg.js``, one self-contained file: the SVG
  output needs no web fonts) from the ``django-static-mathjax`` package of the docs
  extra into the site, so pages render their maths with no network.
"""

from __future__ import annotations

import html
import importlib.util
import logging
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("mkdocs.hooks.hardneg")

#: where the site serves MathJax from (mkdocs.yml's extra_javascript names the same path)
MATHJAX_SITE_PATH = "assets/mathjax/tex-svg.js"


def _generator():
    spec = importlib.util.spec_from_file_location("hardneg_docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_loaded_generator = None  # the generate.py of the current build (on_config loads it; the page hooks reuse it)


def on_config(config, **kwargs):
    global _loaded_generator
    _loaded_generator = _generator()
    info = _loaded_generator.build(ROOT / "docs" / "generated")
    pages = [{f"{title}.py" if not title.startswith("other") else title: rel} for title, rel in info["benchmarks"]]
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and "Benchmarks" in entry:
            entry["Benchmarks"] = [p for p in entry["Benchmarks"] if isinstance(p, str)] + pages
    log.info("docs/generate.py: %d benchmark pages", len(pages))
    return config


# ----------------------------------------------------------------------------- Sphinx roles
#: a role as mkdocstrings leaves it: ``:func:<code>x</code>`` in prose (Markdown made the
#: backticks code), ``:func:`x``` inside a parameter's type (already inside <code>)
ROLE = re.compile(r":(?:py:)?(?:meth|func|class|mod|data|attr|exc|obj|const|term|ref):"
                  r"(?:<code>(?P<code>[^<]*)</code>|`(?P<tick>[^`<]*)`)")
#: the id mkdocstrings gives each documented object's heading
OBJECT_ID = re.compile(r'\bid="(hardneg(?:\.[\w]+)*)"')
#: an inline code span (not a highlighted block, whose <code> holds newlines and spans)
INLINE_CODE = re.compile(r"<code>([^<\n]*)</code>")


def _role_target(text: str) -> tuple[str, str]:
    """The target and the text to show for a role's content (``~a.b.C`` shows ``C``)."""
    text = html.unescape(text).strip()
    if "<" in text and text.endswith(">"):  # :func:`title <target>`
        title, _, target = text[:-1].rpartition("<")
        return target.strip().lstrip("~."), title.strip()
    shown = text.lstrip("~").lstrip(".")
    if text.startswith("~"):
        shown = shown.rsplit(".", 1)[-1]
    target = text.lstrip("~").lstrip(".")
    if target.endswith("()"):
        target = target[:-2]
    return target, shown


def _candidates(target: str, context: str | None) -> list[str]:
    """Identifiers a role's target may mean, the most specific first: relative to the object whose
    docstring holds it (and its parents), then with private module parts dropped (``hardneg._persist.X``
    is documented where it is re-exported, ``hardneg.X``)."""
    out = []
    if not target.startswith("hardneg"):
        parts = context.split(".") if context else []
        out += [".".join(parts[:i] + [target]) for i in range(len(parts), 0, -1)]
    out.append(target)
    public = ".".join(p for p in target.split(".") if not p.startswith("_"))
    if public != target:
        out.append(public)
        # a private module's object re-exported by its package's parent: hardneg.store._summary.f -> hardneg.f
        head, _, name = public.rpartition(".")
        while head.count("."):
            head = head.rpartition(".")[0]
            out.append(f"{head}.{name}")
    return list(dict.fromkeys(out))


def replace_roles(page_html: str, resolves) -> str:
    """``page_html`` with every Sphinx role replaced by an autorefs reference (when ``resolves(identifier)``)
    or by the target's text as code; ``Sphinx ````literal```` `` markers inside inline code are dropped."""
    page_html = INLINE_CODE.sub(lambda m: "<code>" + re.sub(r"``(.+?)``", r"\1", m.group(1)) + "</code>", page_html)
    contexts = [(m.start(), m.group(1)) for m in OBJECT_ID.finditer(page_html)]

    def context_at(pos: int) -> str | None:
        best = None
        for start, ident in contexts:
            if start > pos:
                break
            best = ident
        return best

    def repl(m: re.Match) -> str:
        in_code = m.group("code") is None  # the backtick form only survives inside <code> or <pre>
        target, shown = _role_target(m.group("code") if not in_code else m.group("tick"))
        shown_html = html.escape(shown, quote=False)
        inner = shown_html if in_code else f"<code>{shown_html}</code>"
        for ident in _candidates(target, context_at(m.start())):
            if resolves(ident):
                return f'<autoref identifier="{html.escape(ident)}" optional>{inner}</autoref>'
        return inner

    return ROLE.sub(repl, page_html)


def on_env(env, config, files, **kwargs):
    autorefs = config["plugins"].get("autorefs")

    def resolves(identifier: str) -> bool:
        if autorefs is None:
            return False
        try:
            autorefs.get_item_url(identifier)
        except KeyError:
            return False
        return True

    for file in files:
        page = file.page
        if page is not None and page.content and ":" in page.content:
            page.content = replace_roles(page.content, resolves)
    return env


# ----------------------------------------------------------------------------- maths
#: greek letters and operators written out in docstrings and code comments
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "nu", "xi", "pi", "rho",
         "sigma", "tau", "phi", "psi", "omega", "Delta", "Gamma", "Lambda", "Sigma", "Omega"}
FUNCS = {"sum", "max", "min", "exp", "log", "sign", "argmax", "argmin", "mean"}
_SUB = r"(?:_\{[^{}\s]*(?:\{[^{}]*\}[^{}\s]*)*\}|_[A-Za-z0-9]{1,3}|_\{[^}]*\})"
_SUP = r"(?:\^\{[^}]*\}|\^-?[A-Za-z0-9]{1,3}|[²³ᵀ])"
_BASE = rf"(?:[A-Za-zα-ωΑ-Ω][\u0300-\u036f]?|{'|'.join(sorted(GREEK | FUNCS, key=len, reverse=True))}|\|\|[^|\s]+\|\|)"
#: a subscripted or superscripted symbol, which makes its token a formula: ``g_{T+1}``, ``G_T``,
#: ``lambda_t``, ``N^{k-1}``, ``||z||^2`` (an identifier such as ``fit_s`` or ``ap_at_k`` is not one)
STRICT_CORE = re.compile(rf"(?<![\w.\\/]){_BASE}(?:{_SUB}{_SUP}?|{_SUP}{_SUB}?)(?![\w])")
OPERATORS = {"=", "+", "-", "−", "*", "/", "·", ".", "≤", "≥", "<", ">", "×", "&lt;", "&gt;", "≈", "~", "∝", "|", "∈"}
#: a token that may continue a formula next to a certain one: an operator, a number, a bracketed term
GLUE = re.compile(r"^[\w(){}\[\]/+\-*^.|√−·′'²ᵀ,]*[(){}\[\]/+\-*^|=√−·0-9][\w(){}\[\]/+\-*^.|√−·′'²ᵀ,]*$")
#: tags whose text is never maths
SKIP_TAGS = {"code", "pre", "script", "style", "a", "h1", "h2", "h3", "h4", "h5", "h6", "kbd", "autoref"}
TAG = re.compile(r"(<[^>]*>)")
#: Unicode maths symbols and their TeX, so that ``‖W_X‖²_F`` or ``Âᵀ`` typeset like the ASCII formulas
UNICODE_TEX = {"‖": r"\|", "ᵀ": "^T", "²": "^2", "³": "^3", "₂": "_2", "∈": r"\in ", "𝒴": r"\mathcal{Y}",
               "′": "'", "Â": r"\hat{A}", "−": "-", "≤": r"\le ", "≥": r"\ge ", "∝": r"\propto ", "≈": r"\approx "}
_UNICODE = re.compile("|".join(map(re.escape, UNICODE_TEX)))
#: a quoted piece of code (a backtick) is never maths
NOT_MATHS = re.compile(r"`")


#: punctuation that ends a sentence or a clause, not a formula
TRAIL = ".,;:\""


def _ascii(token: str) -> str:
    return _UNICODE.sub(lambda m: UNICODE_TEX[m.group(0)], token)


def _is_core(token: str) -> bool:
    token = _ascii(token)
    marked = STRICT_CORE.search(token) or any(s in token for s in ("||^", "_{", "^{"))
    return bool(marked) and not re.search(r"\.(json|py|md|png|html)\b|://", token) and not NOT_MATHS.search(token)


def _is_glue(token: str) -> bool:
    if token in OPERATORS:
        return True
    token = _ascii(token).replace("\\|", "|")
    names = GREEK | FUNCS | {"hat", "mathcal", "in", "le", "ge", "propto", "approx"}
    words = re.sub("|".join(sorted(names, key=len, reverse=True)), "", token)
    return bool(GLUE.match(token.replace("\\", ""))) and not re.search(r"[^\W\d_]{2,}", words) and not NOT_MATHS.search(token)


def _balanced(text: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    for a, b in (("(", ")"), ("{", "}"), ("[", "]")):
        depth[a] = text.count(a) - text.count(b)
    return not any(depth.values())


def _tex(text: str) -> str:
    """A formula as written in plain text, as TeX (the text stays HTML-escaped)."""
    t = _ascii(text).replace("·", r"\cdot ").replace("||", r"\|").replace("×", r"\times ")
    t = re.sub(r"_([A-Za-z0-9]{2,})(?![A-Za-z0-9{])", r"_{\1}", t)  # alpha_neg: the whole word is the subscript
    t = re.sub(rf"(?<![A-Za-z\\])({'|'.join(sorted(GREEK, key=len, reverse=True))})(?![A-Za-z])", r"\\\1", t)
    t = re.sub(r"(?<![A-Za-z\\])(sum|max|min|exp|log)(?![A-Za-z])", r"\\\1", t)
    t = re.sub(r"(?<![A-Za-z\\])(sign|argmax|argmin|mean)(?![A-Za-z])", r"\\operatorname{\1}", t)
    return t


def math_spans(text: str) -> str:
    """One HTML text node with each formula in it wrapped for MathJax (``\\(…\\)`` in an arithmatex span)."""
    parts = re.split(r"(\s+)", text)
    words = parts[0::2]
    kinds = []
    for w in words:
        core = w.rstrip(TRAIL)
        kinds.append("glue" if w in OPERATORS else "core" if core and _is_core(core)
                     else "glue" if core and _is_glue(core) else None)
    for k, w in enumerate(words):  # a lone symbol between operators: the x of "w_k . x + b_k"
        if kinds[k] is None and re.fullmatch(r"[A-Za-z]", w) and any(
                0 <= j < len(words) and words[j] in OPERATORS for j in (k - 1, k + 1)):
            kinds[k] = "glue"
    out, i, floor = [], 0, 0  # floor: where the last formula ended, so that two never overlap
    n = len(words)
    while i < n:
        if kinds[i] != "core":
            i += 1
            continue
        lo = hi = i
        while lo > floor and kinds[lo - 1] and (words[lo - 1] in OPERATORS or not words[lo - 1].endswith(tuple(TRAIL)) or (
                words[lo - 1].endswith(",") and not _balanced("".join(words[lo:hi + 1])))):
            lo -= 1
        while hi + 1 < n and kinds[hi + 1] and (words[hi] in OPERATORS or not words[hi].endswith(tuple(TRAIL)) or (
                words[hi].endswith(",") and not _balanced("".join(words[lo:hi + 1])))):
            hi += 1
        while lo < i and words[lo].rstrip(TRAIL) in OPERATORS:
            lo += 1
        while hi > i and words[hi].rstrip(TRAIL) in OPERATORS:
            hi -= 1
        out.append((lo, hi))
        i = floor = hi + 1
    if not out:
        return text
    for lo, hi in reversed(out):
        span = _formula_span(parts, lo, hi, core=next(k for k in range(lo, hi + 1) if kinds[k] == "core"))
        if span is not None:
            lo, hi, html_span = span
            parts[2 * lo:2 * hi + 1] = [html_span]
    return "".join(parts)


def _formula_span(parts: list[str], lo: int, hi: int, core: int) -> tuple[int, int, str] | None:
    """The words ``lo``..``hi`` of ``parts`` (words at even positions) as one arithmatex span, narrowed towards
    the word ``core`` until its brackets balance; None if they never do."""
    while True:
        formula = "".join(parts[2 * lo:2 * hi + 1])
        tail = formula[len(formula.rstrip(TRAIL)):]
        formula = formula[:len(formula) - len(tail)]
        lead = ""
        while formula and formula[0] in "([{" and not _balanced(formula):
            lead, formula = lead + formula[0], formula[1:]
        while formula and formula[-1] in ")]}" and not _balanced(formula):
            tail, formula = formula[-1] + tail, formula[:-1]
        if parts[2 * hi].rstrip(TRAIL) in OPERATORS and hi > core:
            hi -= 1
            continue
        if parts[2 * lo] in OPERATORS and lo < core:
            lo += 1
            continue
        if formula and _balanced(formula):
            return lo, hi, f'{lead}<span class="arithmatex">\\({_tex(formula)}\\)</span>{tail}'
        if hi > core:
            hi -= 1
        elif lo < core:
            lo += 1
        else:
            return None


def wrap_maths(page_html: str) -> str:
    """``page_html`` with the formulas of its prose typeset (see ``math_spans``); code, links, headings and
    maths already marked up are left as they are."""
    out, stack = [], []
    for piece in TAG.split(page_html):
        if piece.startswith("<"):
            m = re.match(r"<(/?)([A-Za-z0-9]+)", piece)
            if m:
                name, closing = m.group(2).lower(), m.group(1) == "/"
                if 'class="arithmatex"' in piece:
                    stack.append("arithmatex")
                elif name in SKIP_TAGS and not closing and not piece.endswith("/>"):
                    stack.append(name)
                elif closing and stack and stack[-1] in (name, "arithmatex" if name in ("span", "div") else None):
                    stack.pop()
            out.append(piece)
        elif stack or not piece.strip():
            out.append(piece)
        else:
            out.append(math_spans(piece))
    return "".join(out)


def on_page_markdown(markdown, page, **kwargs):
    """Quoted figures (``{{ concept_speed/training/compressed_T50_s | .2f }}``) read from their result files, and the
    page ends with where they come from; a figure that no longer resolves fails the build."""
    gen = _loaded_generator or _generator()
    text, names = gen.quote_figures(markdown)
    return text + gen.quoted_sources(names) if names else text


def on_page_content(html_text, page, **kwargs):
    if page.file.src_uri.startswith("generated/benchmarks/"):
        return html_text
    return wrap_maths(html_text)


def mathjax_source() -> Path:
    """``tex-svg.js`` as the docs extra installs it (django-static-mathjax: MathJax 3's files, no Django needed)."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is not installed: pip install -e '.[docs]' (django-static-mathjax)")
    path = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" / "es5" / "tex-svg.js"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: reinstall the docs extra (django-static-mathjax)")
    return path


def on_post_build(config, **kwargs):
    target = Path(config["site_dir"]) / MATHJAX_SITE_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mathjax_source(), target)
