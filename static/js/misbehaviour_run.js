// The misbehaviour list: while a clustering run is queued or running, poll its status and
// reload the page when it ends (a file, so the Content-Security-Policy allows no inline script).
(function () {
  var box = document.getElementById("run-status");
  if (!box) { return; }
  var status = box.getAttribute("data-status");
  if (status !== "queued" && status !== "running") { return; }
  var timer = setInterval(function () {
    fetch(box.getAttribute("data-status-url"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        var progress = document.getElementById("run-progress");
        if (progress) { progress.textContent = (data.stage || "waiting") + " · " + data.percent + "%"; }
        if (data.status === "done" || data.status === "failed") { clearInterval(timer); window.location.reload(); }
      });
  }, 2000);
})();
