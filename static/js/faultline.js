// Small behaviours shared by all pages. The Content-Security-Policy allows no inline style
// attribute or event handler, so what the templates used to say inline is data-* here:
// data-percent sets a progress bar's width, data-autosubmit submits a select's form.
(function () {
  "use strict";
  document.querySelectorAll(".bar[data-percent]").forEach(function (bar) {
    bar.style.width = (parseFloat(bar.getAttribute("data-percent")) || 0) + "%";
  });
  document.addEventListener("change", function (event) {
    var field = event.target.closest("select[data-autosubmit]");
    if (field && field.form) { field.form.submit(); }
  });
})();

// Step navigation on the rollout page.
(function () {
  "use strict";
  var list = document.getElementById("steps");
  if (!list) { return; }
  var start = parseInt(list.getAttribute("data-window-start"), 10) || 0;
  var size = parseInt(list.getAttribute("data-window-size"), 10) || 400;

  // A deep link to a step outside the shown window opens the window that holds it.
  function openStep(index, focus) {
    var el = document.getElementById("step-" + index);
    if (!el) {
      var count = parseInt(list.getAttribute("data-step-count"), 10) || 0;
      if (index >= 0 && index < count) {
        var first = index - (index % size);
        // The other parameters (the text the steps are searched for) stay.
        var params = new URLSearchParams(window.location.search);
        params.set("from", String(first));
        window.location.href = "?" + params.toString() + "#step-" + index;
      }
      return;
    }
    document.querySelectorAll(".step.focused").forEach(function (s) { s.classList.remove("focused"); });
    el.classList.add("focused");
    el.scrollIntoView({ block: "start" });
    if (focus) { el.focus({ preventScroll: true }); }
    if (window.location.hash !== "#step-" + index) { history.replaceState(null, "", "#step-" + index); }
  }
  function fromHash() {
    var match = /^#step-(\d+)$/.exec(window.location.hash);
    if (match) { openStep(parseInt(match[1], 10), false); }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();

  // A click on a mark of the agent lanes (charts.js) opens that step.
  document.addEventListener("faultline:step", function (event) { openStep(event.detail.step, true); });

  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-jump]");
    if (!link) { return; }
    event.preventDefault();
    openStep(parseInt(link.getAttribute("data-jump"), 10), true);
  });

  function current() {
    var focused = document.querySelector(".step.focused");
    return focused ? parseInt(focused.getAttribute("data-step"), 10) : start - 1;
  }
  document.addEventListener("keydown", function (event) {
    if (event.target.closest("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "j") { openStep(current() + 1, true); }
    else if (event.key === "k" && current() > 0) { openStep(current() - 1, true); }
  });
})();

// Tables whose headers sort their rows (th[data-sort="num"|"text"]; a cell's data-value,
// when it has one, is what is compared), and long tables shown short until asked
// (data-collapse="N": the rows past N are hidden behind a "Show all" button). Without
// JavaScript the whole table shows in the server's order.
(function () {
  "use strict";
  function expand(table) {
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) { row.hidden = false; });
    var more = document.querySelector("button[data-expands='" + table.id + "']");
    if (more) { more.remove(); }
  }
  function value(row, index, kind) {
    var cell = row.cells[index];
    var raw = cell ? (cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim()) : "";
    if (kind !== "num") { return raw.toLowerCase(); }
    var number = parseFloat(raw);
    return isNaN(number) ? null : number;
  }
  document.querySelectorAll("table[data-sortable]").forEach(function (table) {
    var headers = table.querySelectorAll("th[data-sort]");
    headers.forEach(function (th) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = th.textContent;
      button.title = "sort by " + th.textContent.trim();
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var kind = th.getAttribute("data-sort");
        var index = th.cellIndex;
        // Numbers largest first, text A to Z first; a second click turns the order.
        var first = kind === "num" ? "descending" : "ascending";
        var order = th.getAttribute("aria-sort") === first ? (first === "descending" ? "ascending" : "descending") : first;
        var sign = order === "ascending" ? 1 : -1;
        var rows = Array.prototype.slice.call(table.tBodies[0].rows);
        rows.sort(function (a, b) {
          var x = value(a, index, kind), y = value(b, index, kind);
          if (x === y) { return 0; }
          if (x === null) { return 1; }  // no value: last either way
          if (y === null) { return -1; }
          return x < y ? -sign : sign;
        });
        rows.forEach(function (row) { table.tBodies[0].appendChild(row); });
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", order);
        expand(table);
      });
    });
  });
  document.querySelectorAll("table[data-collapse]").forEach(function (table) {
    var limit = parseInt(table.getAttribute("data-collapse"), 10) || 0;
    var rows = table.tBodies[0].rows;
    if (!table.id || rows.length <= limit) { return; }
    Array.prototype.forEach.call(rows, function (row, i) { row.hidden = i >= limit; });
    var more = document.createElement("button");
    more.type = "button";
    more.className = "button secondary";
    more.setAttribute("data-expands", table.id);
    more.textContent = "Show all " + rows.length;
    more.addEventListener("click", function () { expand(table); });
    (table.closest(".table-wrap") || table).insertAdjacentElement("afterend", more);
  });
})();
