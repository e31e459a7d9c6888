// The comment form's "Mention a colleague": pick a member (the person picker of forms.js suggests them)
// and put "@their-address " into the comment where the cursor is. Without script, people type the @.
(function () {
  "use strict";
  function start() {
    var box = document.querySelector("[data-mention]");
    var text = document.querySelector("[data-mention-target]");
    if (!box || !text) return;
    var input = box.querySelector("input");
    var add = box.querySelector("[data-mention-add]");
    box.hidden = false;
    add.addEventListener("click", function () {
      var email = input.value.trim();
      if (!email) { input.focus(); return; }
      var at = text.selectionStart || text.value.length;
      var before = text.value.slice(0, at);
      var mention = (before && !/\s$/.test(before) ? " " : "") + "@" + email + " ";
      text.value = before + mention + text.value.slice(at);
      input.value = "";
      text.focus();
      text.setSelectionRange(at + mention.length, at + mention.length);
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
