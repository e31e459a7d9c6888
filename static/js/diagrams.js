// Draw the diagrams of `mermaid` code blocks (server-rendered as <pre class="mermaid">, their source as text).
// Mermaid is a large script, so it is fetched only when the page has such a block; without script the
// source stays readable as code. Strict security: no script, links or HTML from the diagram's text run.
(function () {
  "use strict";
  var blocks = Array.prototype.slice.call(document.querySelectorAll("pre.mermaid"));
  var loader = document.currentScript;
  if (!blocks.length || !loader) return;
  var sources = blocks.map(function (block) { return block.textContent; });
  var script = document.createElement("script");
  script.src = loader.getAttribute("data-mermaid");
  script.onload = function () {
    window.mermaid.initialize({
      startOnLoad: false,
      securityLevel: "strict",
      suppressErrorRendering: true,
      fontFamily: getComputedStyle(document.body).fontFamily,
    });
    window.mermaid.run({ nodes: blocks, suppressErrors: true }).then(function () {
      // A diagram that does not parse keeps its source on the page instead of an empty box.
      blocks.forEach(function (block, index) {
        if (!block.querySelector("svg")) block.textContent = sources[index];
        else readable(block);
      });
      document.documentElement.setAttribute("data-diagrams", "drawn");
    });
  };
  document.head.appendChild(script);

  // A diagram shrinks to its column only while its text stays readable (READABLE_PX or more); a wider one
  // keeps that size and scrolls sideways inside its own box, which the keyboard can then scroll too.
  var READABLE_PX = 12;
  var watcher = window.ResizeObserver ? new ResizeObserver(function (entries) {
    entries.forEach(function (entry) { scrolls(entry.target); });
  }) : null;

  function scrolls(block) {
    var wide = block.scrollWidth > block.clientWidth + 1;
    block.classList.toggle("scrolls", wide);
    if (wide) block.setAttribute("tabindex", "0"); else block.removeAttribute("tabindex");
  }

  function readable(block) {
    var svg = block.querySelector("svg");
    var box = svg.viewBox && svg.viewBox.baseVal;
    if (!box || !box.width) return;
    var label = svg.querySelector(".nodeLabel, .label, text");
    var size = (label && parseFloat(getComputedStyle(label).fontSize)) || 16;
    svg.style.minWidth = Math.ceil(box.width * Math.min(1, READABLE_PX / size)) + "px";
    scrolls(block);
    if (watcher) watcher.observe(block);  // a folded "About" opened, a window made narrower
  }
})();
