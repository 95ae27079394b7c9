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
        window.location.href = "?from=" + first + "#step-" + index;
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
