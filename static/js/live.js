// Keep a person's page current without a reload (work/live_page.py). Every few seconds ask the server
// whether anything the page shows changed: 204 means nothing did. When something did, read the page
// again and swap in each part marked data-live-part, except a part with a field someone is typing in
// or has changed. Without script the page is the same, current at each reload.
(function () {
  "use strict";
  var tag = document.currentScript;
  if (!tag || !window.fetch || !window.DOMParser) return;
  var url = tag.getAttribute("data-poll");
  var since = tag.getAttribute("data-since") || "";
  var every = Number(tag.getAttribute("data-every")) || 4;
  var timer = null;
  var busy = false;

  function schedule(seconds) {
    clearTimeout(timer);
    timer = setTimeout(poll, seconds * 1000);
  }

  function touched(part) {
    // A field with focus, or whose value differs from the one it was rendered with, is someone's work.
    var active = document.activeElement;
    if (active && active !== document.body && part.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) {
      return true;
    }
    return Array.prototype.some.call(part.querySelectorAll("input, textarea, select"), function (field) {
      if (field.type === "hidden") return false;
      if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
      if (field.tagName === "SELECT") {
        return Array.prototype.some.call(field.options, function (o) { return o.selected !== o.defaultSelected; });
      }
      return field.value !== field.defaultValue;
    });
  }

  function swap(fresh) {
    document.querySelectorAll("[data-live-part]").forEach(function (part) {
      var name = part.getAttribute("data-live-part");
      var next = fresh.querySelector('[data-live-part="' + name + '"]');
      if (!next || touched(part) || next.innerHTML === part.innerHTML) return;
      part.replaceWith(document.importNode(next, true));
    });
    document.dispatchEvent(new CustomEvent("live:updated"));
  }

  function refresh() {
    return fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) { swap(new DOMParser().parseFromString(html, "text/html")); });
  }

  function poll() {
    if (busy) return;
    if (document.hidden) { schedule(every); return; }
    busy = true;
    var ask = url + (url.indexOf("?") === -1 ? "?" : "&") + "since=" + encodeURIComponent(since);
    fetch(ask, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 204) return null;
        if (!response.ok) throw new Error("poll " + response.status);
        return response.json();
      })
      .then(function (news) {
        if (!news) return null;
        since = news.stamp;
        every = news.every || every;
        return refresh();
      })
      .catch(function () { every = Math.min(every * 2, 60); })
      .then(function () { busy = false; schedule(every); });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) { schedule(0.1); }
  });
  schedule(every);
})();
