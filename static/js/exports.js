// The exports page: poll each unfinished job's small JSON status view until it is done or
// failed (moved out of the template so the Content-Security-Policy allows no inline script).
(function () {
  // Poll each unfinished job's small JSON status view until it is done or failed.
  function text(node, value) { if (node) { node.textContent = value; } }
  function poll(row) {
    fetch(row.dataset.statusUrl, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (job) {
        var bar = row.querySelector(".progress");
        bar.className = "progress " + job.status;
        bar.setAttribute("aria-valuenow", job.progress.percent);
        bar.querySelector(".bar").style.width = job.progress.percent + "%";
        text(row.querySelector("[data-role=status]"), job.status);
        row.querySelector("[data-role=status]").className = "badge " + job.status;
        text(row.querySelector("[data-role=progress-text]"), job.progress.done + " / " + job.progress.total + " rollouts");
        if (job.status === "done" || job.status === "failed") {
          var counts = row.querySelector("[data-role=counts]");
          counts.textContent = "";
          Object.keys(job.counts).forEach(function (kind) {
            counts.appendChild(document.createTextNode(kind + ": " + job.counts[kind]));
            counts.appendChild(document.createElement("br"));
          });
          var files = row.querySelector("[data-role=files]");
          files.textContent = "";
          Object.keys(job.files).forEach(function (name) {
            var a = document.createElement("a"); a.href = job.files[name]; a.textContent = name;
            files.appendChild(a); files.appendChild(document.createElement("br"));
          });
          if (job.zip_url) {
            var z = document.createElement("a"); z.href = job.zip_url; z.className = "button secondary small"; z.textContent = "zip";
            files.appendChild(z);
          }
          if (job.error) { text(row.querySelector("[data-role=progress-text]"), job.error); }
          return;
        }
        setTimeout(function () { poll(row); }, 1000);
      })
      .catch(function () { setTimeout(function () { poll(row); }, 3000); });
  }
  document.querySelectorAll("tr[data-status-url]").forEach(poll);
})();
