/* The typed forms made quicker (work/grids.py, work/people.py). Every form works without this script:
   "Add a line" and "Remove" are submit buttons the server applies, and a person field is an email input
   with the organization's members in a <datalist>. Here a line is added or removed at once, a field's
   name labels its cells as it is typed, and a person is picked from a list searched by name or address. */
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

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-add-row], button[data-remove-row]");
    var grid = button && button.closest("[data-grid]");
    if (!grid) { return; }
    event.preventDefault();
    if (button.hasAttribute("data-add-row")) { addLine(grid); } else { removeLine(grid, button); }
  });

  // --- an object's fields: names label the cells; a new kind redraws the form -------------------------

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
    // The cells become inputs of the new kind; the server draws them, keeping everything typed.
    var grid = select.closest("[data-grid]");
    var op = document.createElement("input");
    op.type = "hidden";
    op.name = "op";
    op.value = grid.getAttribute("data-grid") + ":kind";
    select.form.appendChild(op);
    select.form.submit();
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
