// Keyboard labelling on the rollout page (j/k, moving between steps, are in faultline.js):
// d marks the focused step decisive by submitting the page's own label form, n opens the
// next rollout of the labelling queue. A file, not an inline script: the CSP forbids those.
(function () {
  "use strict";
  var panel = document.getElementById("attribution");
  if (!panel) { return; }
  var form = document.getElementById("label-form");
  var nextUrl = panel.getAttribute("data-next-url") || "";

  function focusedStep() {
    var step = document.querySelector(".step.focused");
    return step ? parseInt(step.getAttribute("data-step"), 10) : NaN;
  }

  function markDecisive() {
    var step = focusedStep();
    if (!form) { return; }
    if (isNaN(step)) {
      var status = document.getElementById("label-keys-status");
      if (status) { status.textContent = "First pick a step with j or k, then press d."; }
      return;
    }
    form.querySelector("input[name=step_index]").value = String(step);
    var agent = document.querySelector(".step.focused .agent");
    var agentField = form.querySelector("input[name=agent]");
    if (agent && agentField) { agentField.value = agent.getAttribute("title") || ""; }
    if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
  }

  document.addEventListener("keydown", function (event) {
    if (event.target.closest("input, textarea, select") || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "d") { event.preventDefault(); markDecisive(); }
    else if (event.key === "n" && nextUrl) { event.preventDefault(); window.location.href = nextUrl + "#attribution"; }
  });
})();
