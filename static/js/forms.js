/* The typed forms made quicker (work/grids.py, work/people.py). Every form works without this script:
   "Add a line", "Add a field", "Remove" and a field's Kind are submit buttons (and a select) the server
   applies, and a person field is an email input with the organization's members in a <datalist>. Here a
   line is added or removed at once; a field added, removed or given another kind is drawn by the server
   and swapped into the page, so the page never reloads and files chosen stay chosen; a field's name labels
   its cells as it is typed; and a person is picked from a list searched by name or address. */
(function () {
  "use strict";

  // --- lines ----------------------------------------------------------------------------------------

  function renumber(list) {
    Array.prototype.forEach.call(list.children, function (row, i) {
      row.querySelectorAll(".line-no").forEach(function (span) { span.textContent = String(i + 1); });
    });
  }

  function addLine(grid) {
    var list = grid.querySelector("ol.lines");
    var template = grid.querySelector("template[data-blank-row]");
    var index = Number(grid.getAttribute("data-next-row")) || list.children.length;
    grid.setAttribute("data-next-row", String(index + 1));
    var html = template.innerHTML.split("__row__").join(String(index))
      .split("__line__").join(String(list.children.length + 1));
    list.insertAdjacentHTML("beforeend", html);
    var row = list.lastElementChild;
    row.querySelectorAll("input[list='people-list']").forEach(makePicker);
    var first = row.querySelector(".cells input:not([type=hidden]), .cells select, .cells textarea");
    if (first) { first.focus(); }
  }

  function removeLine(grid, button) {
    var row = button.closest("li.line");
    var list = row.parentElement;
    var after = row.nextElementSibling || row.previousElementSibling;
    row.remove();
    renumber(list);
    // The keyboard stays in the list: on the next line's Remove, or on "Add a line" when none is left.
    (after ? after.querySelector("[data-remove-row]") : grid.querySelector("[data-add-row]")).focus();
  }

  // --- an object's fields: added, removed or retyped by the server, swapped in without a reload ------

  function redraw(grid, op, submitter, focusId) {
    var form = grid.closest("form");
    var data = new FormData(form);
    data.delete("files");  // the files stay chosen in this page; the server is asked only for the grid
    data.set("op", op);
    grid.setAttribute("aria-busy", "true");
    grid.inert = true;  // nothing typed here while it is redrawn, so nothing typed is lost
    function fallBack() {
      // The server's own round trip: the page is drawn again with the change, files uploaded and kept.
      grid.removeAttribute("aria-busy");
      grid.inert = false;
      if (submitter) { form.requestSubmit(submitter); return; }
      var hidden = document.createElement("input");
      hidden.type = "hidden";
      hidden.name = "op";
      hidden.value = op;
      form.appendChild(hidden);
      form.submit();
    }
    fetch(form.getAttribute("action") || window.location.href, {
      method: "POST", body: data, credentials: "same-origin", headers: { Accept: "text/html" },
    }).then(function (response) {
      return response.ok ? response.text() : Promise.reject(response.status);
    }).then(function (html) {
      var page = new DOMParser().parseFromString(html, "text/html");
      var drawn = page.getElementById(grid.id);
      if (!drawn) { fallBack(); return; }
      var fresh = document.importNode(drawn, true);
      grid.replaceWith(fresh);
      if (!document.getElementById("people-list") && page.getElementById("people-list")) {
        form.insertBefore(document.importNode(page.getElementById("people-list"), true), form.firstChild);
      }
      fresh.querySelectorAll("input[list='people-list']").forEach(makePicker);
      focusAfter(fresh, op, focusId);
    }).catch(fallBack);
  }

  function focusAfter(grid, op, focusId) {
    // The keyboard stays where the person was: on the new field's name, the select just changed, or
    // "Add a field" after a field is removed.
    var target = focusId ? document.getElementById(focusId) : null;
    if (op.split(":")[1] === "add-col") {
      var names = grid.querySelectorAll("[data-col-name]");
      target = names[names.length - 1];
    } else if (!target) {
      target = grid.querySelector("button[name=op][value$=':add-col']");
    }
    if (target) { target.focus(); }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-add-row], button[data-remove-row], button[data-grid-op]");
    var grid = button && button.closest("[data-grid]");
    if (!grid) { return; }
    event.preventDefault();
    if (grid.hasAttribute("aria-busy")) { return; }  // one change at a time
    if (button.hasAttribute("data-add-row")) { addLine(grid); }
    else if (button.hasAttribute("data-remove-row")) { removeLine(grid, button); }
    else { redraw(grid, button.value, button, null); }
  });

  // --- a field's name labels its cells as it is typed ---------------------------------------------------

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!input.hasAttribute || !input.hasAttribute("data-col-name")) { return; }
    var grid = input.closest("[data-grid]");
    var column = input.getAttribute("data-col-name");
    var position = Array.prototype.indexOf.call(grid.querySelectorAll("[data-col-name]"), input);
    var text = input.value.trim() || "Field " + (position + 1);
    var template = grid.querySelector("template[data-blank-row]");
    var labels = Array.prototype.slice.call(grid.querySelectorAll("[data-col-label='" + column + "']"));
    if (template) { labels = labels.concat(Array.prototype.slice.call(template.content.querySelectorAll("[data-col-label='" + column + "']"))); }
    labels.forEach(function (label) { label.textContent = text; });
  });

  document.addEventListener("change", function (event) {
    var select = event.target;
    if (!select.hasAttribute || !select.hasAttribute("data-col-kind")) { return; }
    // The cells become inputs of the new kind, drawn by the server with everything typed kept.
    var grid = select.closest("[data-grid]");
    redraw(grid, grid.getAttribute("data-grid") + ":kind", null, select.id);
  });

  // --- the person picker ------------------------------------------------------------------------------

  var LIMIT = 8;

  function listed(source, query) {
    var wanted = query.toLowerCase().split(/\s+/).filter(Boolean);
    var found = [];
    Array.prototype.some.call(source.options, function (option) {
      var text = (option.value + " " + option.textContent).toLowerCase();
      if (wanted.every(function (word) { return text.indexOf(word) !== -1; })) {
        found.push({ email: option.value, name: option.textContent });
      }
      return found.length >= LIMIT;
    });
    return Promise.resolve(found);
  }

  function asked(url, query) {
    return fetch(url + "?q=" + encodeURIComponent(query), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : { people: [] }; })
      .then(function (data) { return data.people.slice(0, LIMIT); })
      .catch(function () { return []; });
  }

  var pickers = 0;

  function makePicker(input) {
    var source = document.getElementById("people-list");
    if (!source || input.hasAttribute("role")) { return; }
    var url = source.getAttribute("data-suggest");
    var box = document.createElement("ul");
    pickers += 1;
    box.id = "people-picker-" + pickers;
    box.className = "picker";
    box.setAttribute("role", "listbox");
    box.setAttribute("aria-label", "Members");
    box.hidden = true;
    input.removeAttribute("list");
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("aria-controls", box.id);
    input.insertAdjacentElement("afterend", box);
    var active = -1;
    var asking = 0;

    function options() { return box.querySelectorAll("[role=option]"); }

    function close() {
      box.hidden = true;
      active = -1;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
    }

    function choose(option) {
      input.value = option.getAttribute("data-email");
      close();
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }

    function mark(index) {
      var all = options();
      if (!all.length) { return; }
      active = (index + all.length) % all.length;
      all.forEach(function (option, i) { option.setAttribute("aria-selected", i === active ? "true" : "false"); });
      input.setAttribute("aria-activedescendant", all[active].id);
      all[active].scrollIntoView({ block: "nearest" });
    }

    function show(people) {
      box.textContent = "";
      people.forEach(function (person, i) {
        var option = document.createElement("li");
        option.id = box.id + "-" + i;
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", "false");
        option.setAttribute("data-email", person.email);
        if (person.name) {
          var name = document.createElement("span");
          name.className = "picker-name";
          name.textContent = person.name;
          option.appendChild(name);
        }
        var email = document.createElement("span");
        email.className = "picker-email";
        email.textContent = person.email;
        option.appendChild(email);
        option.addEventListener("mousedown", function (event) { event.preventDefault(); });
        option.addEventListener("click", function () { choose(option); });
        box.appendChild(option);
      });
      box.hidden = !people.length;
      active = -1;
      input.setAttribute("aria-expanded", people.length ? "true" : "false");
    }

    function update() {
      var query = input.value.trim();
      var ticket = ++asking;
      if (!query) { close(); return; }
      (url ? asked(url, query) : listed(source, query)).then(function (people) {
        if (ticket === asking) { show(people); }
      });
    }

    input.addEventListener("input", update);
    input.addEventListener("blur", close);
    input.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown") { event.preventDefault(); if (box.hidden) { update(); } else { mark(active + 1); } }
      else if (event.key === "ArrowUp" && !box.hidden) { event.preventDefault(); mark(active - 1); }
      else if (event.key === "Enter" && !box.hidden && active >= 0) { event.preventDefault(); choose(options()[active]); }
      else if (event.key === "Escape" && !box.hidden) { event.preventDefault(); close(); }
    });
  }

  function start() {
    document.querySelectorAll("input[list='people-list']").forEach(makePicker);
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
