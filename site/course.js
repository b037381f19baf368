// The course site's own script, on every page.
//
// 1. The widget manager, loaded once the page is parsed, the way nbconvert's own pages do. Loaded as a plain
//    <script> in the page's head, the manager resolves its icon fonts against the wrong folder; appended to the
//    body, it finds them beside itself (_static/html-manager/dist/). Every page of the site sits at its top level.
// 2. Names for what screen readers would otherwise meet unnamed (axe-core's audit in make test-browser):
//    - the frames of a slider panel are ipywidgets Images, which have no field for alt text: each gets the
//      sentence its panel carries (attn_course/widgets/frames.py);
//    - a slider's handle is named after the slider's label ("bandwidth h");
//    - the theme's search button is named by what it shows ("Search Ctrl + K"), not by a shorter label;
//    - a closed solution is named by what it shows ("Show solution"): myst-nb labels every hidden cell's toggle
//      "Toggle hidden content", which a speech-input user cannot say from what is on the screen.
(function () {
  function nameThings() {
    document.querySelectorAll(".widget-subarea img:not([alt])").forEach(function (img) {
      var panel = img.closest(".attn-frames-panel");
      var said = panel && panel.querySelector(".attn-frames-alt");
      img.setAttribute("alt", said ? said.textContent : "Figure drawn by the notebook");
    });
    document.querySelectorAll('.widget-subarea [role="slider"]:not([aria-label])').forEach(function (handle) {
      var control = handle.closest(".widget-hslider, .widget-hprogress, .widget-inline-hbox");
      var label = control && control.querySelector(".widget-label");
      if (label && label.textContent.trim()) handle.setAttribute("aria-label", label.textContent.trim());
    });
  }
  function onLoad() {
    document.querySelectorAll(".search-button__button[aria-label], .cell details > summary[aria-label]").forEach(
      function (named) {
        named.removeAttribute("aria-label");
      }
    );
    if (!document.querySelector('script[type="application/vnd.jupyter.widget-view+json"]')) return;
    new MutationObserver(nameThings).observe(document.body, {childList: true, subtree: true});
    var script = document.createElement("script");
    script.src = "_static/html-manager/dist/embed-amd.js";
    document.body.appendChild(script);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onLoad);
  } else {
    onLoad();
  }
})();
