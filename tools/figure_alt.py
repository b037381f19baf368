"""Alt text for the site's figures: each figure the inline backend shows carries a sentence made from its titles.

``build_site.py`` starts the kernels that execute the notebooks for the site with ``install()`` in their
``exec_lines``; nothing in the notebooks changes. The words come from
``attn_course.widgets.frames.describe_figure``, which also describes the frames of the site's slider panels. The
inline backend then stores, beside each figure's PNG, an output metadata entry ``"alt"``: the figure's title, or its
axes' titles, or what its axes show. The build writes it into the ``alt`` attribute of the figure's ``<img>`` on the
page, where a screen reader reads it.
"""

from __future__ import annotations

ALT = "alt"


def install() -> None:
    """Make the inline backend add ``{"alt": describe(figure)}`` to the metadata of every figure it shows."""
    import matplotlib_inline.backend_inline as inline

    from attn_course.widgets.frames import describe_figure

    original = inline._fetch_figure_metadata
    if getattr(original, "adds_alt", False):
        return

    def fetch(fig):
        metadata = dict(original(fig) or {})
        metadata[ALT] = f"Figure: {describe_figure(fig)}"
        return metadata

    fetch.adds_alt = True
    inline._fetch_figure_metadata = fetch
