// MathJax 3 for the formulas docs/hooks.py and pymdownx.arithmatex mark up (class "arithmatex",
// \( \) inline, \[ \] display). Served from the site itself (assets/mathjax/tex-svg.js, copied from
// the docs extra's django-static-mathjax): nothing is fetched from the network, so no extension
// is autoloaded and the menu (which loads more components) is off.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
    packages: { "[-]": ["autoload", "require"] },
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    enableMenu: false,
  },
  svg: { fontCache: "global" },
};
