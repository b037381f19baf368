"""Sphinx configuration of the student site (``make html``; ``tools/build_site.py`` prepares the sources).

The sources are the executed notebooks and the course map that ``build_site.py`` writes to ``build/sphinx/``;
Sphinx renders them with myst-nb and sphinx-book-theme. Nothing is executed here (papermill ran the notebooks,
with the course's parameters) and nothing is fetched: require.js, the widget manager and MathJax are local copies
from the npm packages pinned in ``site/package-lock.json``, which ``build_site.py`` puts in ``_static``.
"""

import os

project = os.environ.get("ATTN_COURSE_TITLE", "Attention course")
author = "The course's authors"
copyright = "the course's authors, MIT licence"  # noqa: A001 - Sphinx's name for it

extensions = ["myst_nb", "sphinx_copybutton"]
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
language = "en"

# --- notebooks: rendered as papermill left them, never run again here
nb_execution_mode = "off"
nb_merge_streams = True  # one block per cell for its printed lines
nb_render_markdown_format = "myst"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

# require.js from _static (not a CDN); course.js adds the widget manager to the page.
nb_ipywidgets_js = {"requirejs/require.js": {}}

# MathJax 2 (the version the widget manager typesets with), from _static. Its combined configuration typesets every
# formula twice: a rough "fast preview" first, then the real one. One pass makes the page ready sooner.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
mathjax2_config = {
    "fast-preview": {"disabled": True},
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processEscapes": True,
        "processClass": "math|output_area",
        "ignoreClass": "document",
    },
    "messageStyle": "none",
}

# --- the site
html_theme = "sphinx_book_theme"
html_title = project
html_static_path = [os.environ.get("ATTN_COURSE_STATIC", "_static")]  # build_site.py fills build/sphinx/_static
html_css_files = ["course.css"]
html_js_files = ["course.js"]
html_copy_source = True  # the .ipynb behind the download button
html_sourcelink_suffix = ""
html_last_updated_fmt = None
html_show_sphinx = False
html_use_index = False  # no general index: the course map and the search are the ways in
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "launch_buttons": {},  # no Binder or Colab: the course sets up neither
    "navigation_with_keys": False,
    "show_prev_next": True,
}
html_context = {"default_mode": "auto"}

copybutton_exclude = ".linenos, .gp, .go"  # copy the code, not prompts or outputs


def setup(app):
    # Where the widget manager looks for its icon fonts: beside embed-amd.js, relative to the page (every page sits
    # at the site's top level), so that the site also works opened from disk. Set before the manager loads.
    app.add_js_file(None, body='window.__jupyter_widgets_assets_path__ = "_static/html-manager/dist/";', priority=100)
