// Upload page: several files at once, each with its own progress bar. The bar shows the
// transfer first, then the ingest progress polled from the upload's status URL.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  var input = document.getElementById("files");
  var zone = document.getElementById("dropzone");
  var list = document.getElementById("upload-progress");
  if (!form || !input) { return; }
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var POLL_MS = 500;
  var sending = 0; // files sent from this page whose upload has not finished yet

  // "1 rollout", "7 rollouts": a count and its noun, as the templates' pluralize says it.
  function counted(count, noun) {
    return count + " " + noun + (count === 1 ? "" : "s");
  }

  // When the last of them finishes, the "All uploads" table is read again from the page
  // (the progress bars above stay, with any error they show).
  function finished() {
    sending -= 1;
    if (sending > 0) { return; }
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("all-uploads");
        var current = document.getElementById("all-uploads");
        if (fresh && current) { current.replaceWith(fresh); }
      });
  }

  function row(name) {
    var li = document.createElement("li");
    li.className = "upload-item";
    var label = document.createElement("span");
    label.className = "name";
    label.textContent = name;
    var progress = document.createElement("div");
    progress.className = "progress";
    progress.setAttribute("role", "progressbar");
    progress.setAttribute("aria-label", "Progress of " + name);
    progress.setAttribute("aria-valuemin", "0");
    progress.setAttribute("aria-valuemax", "100");
    var bar = document.createElement("div");
    bar.className = "bar";
    progress.appendChild(bar);
    var status = document.createElement("span");
    status.className = "badge queued";
    status.setAttribute("data-role", "status");
    status.textContent = "sending";
    li.appendChild(label); li.appendChild(progress); li.appendChild(status);
    list.appendChild(li);
    return {
      set: function (percent, text, state) {
        bar.style.width = percent + "%";
        progress.setAttribute("aria-valuenow", String(percent));
        status.textContent = text;
        status.className = "badge " + (state || "running");
        progress.className = "progress" + (state === "done" || state === "failed" ? " " + state : "");
        li.setAttribute("data-state", state || "running");
      },
      error: function (message) {
        var err = document.createElement("div");
        err.className = "error";
        err.textContent = message;
        li.appendChild(err);
      },
      note: function (message) {
        var note = document.createElement("div");
        note.className = "note";
        note.textContent = message;
        li.appendChild(note);
      }
    };
  }

  function poll(url, ui) {
    fetch(url, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (data.status === "done") {
          ui.set(100, "done · " + counted(data.trajectories, "rollout") + ", " + counted(data.steps, "step"), "done");
          finished();
        } else if (data.status === "failed") {
          ui.set(100, "failed", "failed");
          ui.error(data.error);
          finished();
        } else {
          ui.set(Math.max(2, data.progress.percent), data.status + " " + data.progress.percent + "%", data.status);
          setTimeout(function () { poll(url, ui); }, POLL_MS);
        }
      })
      .catch(function () { setTimeout(function () { poll(url, ui); }, POLL_MS * 4); });
  }

  function send(file) {
    var ui = row(file.name);
    sending += 1;
    var data = new FormData();
    data.append("files", file, file.name);
    data.append("format", document.getElementById("format").value);
    var system = document.getElementById("agent-system");
    if (system) { data.append("agent_system", system.value); }
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("X-CSRFToken", csrf);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.onprogress = function (e) {
      if (e.lengthComputable) { ui.set(Math.round(10 * e.loaded / e.total), "sending", "queued"); }
    };
    xhr.onload = function () {
      var body;
      try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
      var result = body && body.uploads && body.uploads[0];
      if (!result) { ui.set(100, "failed", "failed"); ui.error("The server answered " + xhr.status + "."); finished(); return; }
      if (result.error && !result.id) { ui.set(100, "rejected", "failed"); ui.error(result.error); finished(); return; }
      // The bytes of an earlier upload: the answer is that upload, under its own name and
      // with its own error, so the row says so rather than show them as this file's.
      if (result.message) { ui.note(result.message); }
      if (result.created === false && result.status === "done") {
        ui.set(100, "already uploaded · " + counted(result.trajectories, "rollout"), "done");
        finished();
        return;
      }
      if (result.created === false && result.status === "failed") {
        ui.set(100, "same content as " + result.same_content_as + " · failed", "failed");
        finished();
        return;
      }
      poll(result.status_url, ui);
    };
    xhr.onerror = function () { ui.set(100, "failed", "failed"); ui.error("The upload could not be sent."); finished(); };
    xhr.send(data);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    Array.prototype.forEach.call(input.files, send);
    input.value = "";
  });
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("dragover"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.remove("dragover"); });
  });
  zone.addEventListener("drop", function (e) { Array.prototype.forEach.call(e.dataTransfer.files, send); });

  // Rows of the table that are still queued or running refresh themselves.
  document.querySelectorAll("tr[data-status-url]").forEach(function (tr) {
    var badge = tr.querySelector("[data-role=status]");
    (function tick() {
      fetch(tr.getAttribute("data-status-url"), { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (d) {
        badge.textContent = d.status === "running" ? "running " + d.progress.percent + "%" : d.status;
        badge.className = "badge " + d.status;
        if (d.status === "done" || d.status === "failed") { setTimeout(function () { window.location.reload(); }, 300); }
        else { setTimeout(tick, 1000); }
      });
    })();
  });
})();
