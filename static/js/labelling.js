// Keyboard labelling on the rollout page (j/k, moving between steps, are in faultline.js):
// d marks the focused step decisive by submitting the page's own label form, n opens the
// next rollout of the labelling queue. A file, not an inline script: the CSP forbids those.
//
// The panel's forms (the label form, each label's remove button) are sent with fetch and
// the panel the server renders after the change is swapped in, so the page keeps its place
// and its focused step; without fetch, or if the exchange fails, they work as plain forms.
(function () {
  "use strict";
  if (!document.getElementById("attribution")) { return; }
  // Asks the label views to answer with the panel alone (attribution.views.NEXT_PANEL).
  var NEXT_PANEL = "panel";
  var busy = false;

  function panel() { return document.getElementById("attribution"); }

  function say(text) {
    var status = document.getElementById("label-keys-status");
    if (status) { status.textContent = text; }
  }

  function focusedStep() {
    var step = document.querySelector(".step.focused");
    return step ? parseInt(step.getAttribute("data-step"), 10) : NaN;
  }

  function markDecisive() {
    var form = document.getElementById("label-form");
    var step = focusedStep();
    if (!form || busy) { return; }
    if (isNaN(step)) { say("First pick a step with j or k, then press d."); return; }
    form.querySelector("input[name=step_index]").value = String(step);
    var agent = document.querySelector(".step.focused .agent");
    var agentField = form.querySelector("input[name=agent]");
    if (agent && agentField) { agentField.value = agent.getAttribute("title") || ""; }
    if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
  }

  // The chart plotly already drew is kept (moved into the new panel) rather than drawn
  // again from nothing; its figure changes only when the calibration has changed.
  function keepChart(old, fresh) {
    var oldChart = old.querySelector(".chart[data-figure-id]");
    var newChart = fresh.querySelector(".chart[data-figure-id]");
    if (!oldChart || !newChart) { return null; }
    var id = newChart.getAttribute("data-figure-id");
    var oldData = document.getElementById(oldChart.getAttribute("data-figure-id"));
    var newData = fresh.querySelector("script[type='application/json']#" + CSS.escape(id));
    newChart.replaceWith(oldChart);
    var changed = !oldData || !newData || oldData.textContent !== newData.textContent;
    return changed && newData && oldChart.getAttribute("data-rendered") === "true" ? { chart: oldChart, data: newData } : null;
  }

  // The server's panel (a Django template, escaped) in place of the old one.
  function swapPanel(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("attribution");
    var old = panel();
    if (!fresh || !old) { return false; }
    var box = old.querySelector("#label-form-box");
    var freshBox = fresh.querySelector("#label-form-box");
    if (box && freshBox && box.open) { freshBox.open = true; }
    var hadFocus = old.contains(document.activeElement);
    fresh = document.adoptNode(fresh);
    var redraw = keepChart(old, fresh);
    old.replaceWith(fresh);
    if (redraw && window.Plotly) {
      var figure = JSON.parse(redraw.data.textContent);
      window.Plotly.react(redraw.chart, figure.data || [], Object.assign({}, redraw.chart.layout, figure.layout || {}));
    }
    // A focused button (remove, Save label) went with the old panel: the panel takes the
    // focus, so Tab goes on from there and j/k/d still work.
    if (hadFocus) {
      fresh.setAttribute("tabindex", "-1");
      fresh.focus({ preventScroll: true });
    }
    return true;
  }

  // The panel's answer ("Label saved: step 4 ...") is in the panel, often far below the
  // step just marked: while the panel is out of view, a copy of it floats at the bottom of
  // the window for a few seconds (text only: textContent, never markup).
  var echoTimer = null;
  function echoMessage() {
    var message = panel() && panel().querySelector(".message");
    if (!message) { return; }
    var box = panel().getBoundingClientRect();
    if (box.top < window.innerHeight && box.bottom > 0) { return; }
    var echo = document.getElementById("label-echo");
    if (!echo) {
      echo = document.createElement("p");
      echo.id = "label-echo";
      echo.setAttribute("role", "status");
      document.body.appendChild(echo);
    }
    echo.className = message.className + " floating-message";
    echo.textContent = message.textContent;
    echo.hidden = false;
    clearTimeout(echoTimer);
    echoTimer = setTimeout(function () { echo.hidden = true; }, 4000);
  }

  // The step list's marks of labelled steps follow the labels the new panel lists (its
  // data-labelled-steps), so a label saved with d shows on its step at once.
  function markLabelledSteps() {
    var list = document.getElementById("steps");
    var fresh = panel();
    if (!list || !fresh) { return; }
    var labelled = {};
    (fresh.getAttribute("data-labelled-steps") || "").split(" ").forEach(function (index) {
      if (index) { labelled[index] = true; }
    });
    var text = list.getAttribute("data-labelled-badge") || "";
    list.querySelectorAll(".step").forEach(function (step) {
      var isLabelled = labelled[step.getAttribute("data-step")] === true;
      var badge = step.querySelector(".step-flags .badge.label");
      step.classList.toggle("labelled", isLabelled);
      if (isLabelled && !badge) {
        var flags = step.querySelector(".step-flags");
        if (!flags) {
          flags = document.createElement("div");
          flags.className = "step-flags";
          step.querySelector(".step-body").prepend(flags);
        }
        badge = document.createElement("span");
        badge.className = "badge label";
        badge.textContent = text;
        flags.prepend(badge);
      } else if (!isLabelled && badge) {
        var holder = badge.parentNode;
        badge.remove();
        if (!holder.children.length) { holder.remove(); }
      }
    });
  }

  function send(form) {
    var body = new FormData(form);
    body.append("next", NEXT_PANEL);
    busy = true;
    return fetch(form.action, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        if (!swapPanel(html)) { throw new Error("no panel in the answer"); }
        busy = false;
        markLabelledSteps();
        echoMessage();
      })
      .catch(function () {
        // Whatever was saved or not, the page as the server has it now tells.
        say("The panel could not be refreshed: reloading the page.");
        window.location.reload();
      });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!window.fetch || !window.DOMParser || !form.closest("#attribution")) { return; }
    if ((form.getAttribute("method") || "").toLowerCase() !== "post") { return; }
    event.preventDefault();
    if (!busy) { send(form); }
  });

  // Opened to label (the queue's link and n land on #attribution): the scorer's first pick
  // is the focused step, so d marks it and j/k move from it, not from step 0 (a trial took
  // 22 presses to reach step 21). The panel stays in view; nothing scrolls.
  (function focusTopStep() {
    var top = panel() ? panel().getAttribute("data-top-step") : "";
    if (window.location.hash !== "#attribution" || !top || focusedStep()) { return; }
    var step = document.getElementById("step-" + top);
    if (step) { step.classList.add("focused"); }
  })();

  document.addEventListener("keydown", function (event) {
    if (event.target.closest("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var nextUrl = panel() ? panel().getAttribute("data-next-url") || "" : "";
    if (event.key === "d") { event.preventDefault(); markDecisive(); }
    else if (event.key === "n" && nextUrl) { event.preventDefault(); window.location.href = nextUrl + "#attribution"; }
  });
})();
