// Renders every <div class="chart" data-figure-id="ID"> from the plotly figure JSON in
// <script type="application/json" id="ID"> (made with Django's json_script). plotly.js is
// vendored in static/vendor and loaded only on pages that have a chart.
(function () {
  "use strict";
  var charts = document.querySelectorAll(".chart[data-figure-id]");
  if (!charts.length) { return; }
  var base = document.body.getAttribute("data-static") || "/static/";
  var NO_CLOUD = { showSendToCloud: false, showEditInChartStudio: false, showLink: false, plotlyServerURL: "" };
  // The height comes as data-height (no inline style under the CSP); set it before plotly
  // loads so the page does not jump.
  charts.forEach(function (el) {
    var height = parseInt(el.getAttribute("data-height"), 10);
    if (height > 0) { el.style.height = height + "px"; }
  });

  function render() {
    charts.forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-figure-id"));
      if (!source) { return; }
      var figure = JSON.parse(source.textContent);
      var layout = Object.assign({ margin: { t: 48, r: 16, b: 48, l: 56 }, font: { family: "system-ui, sans-serif", size: 12 } }, figure.layout || {});
      // plotly.js 4 shows a "Share chart..." button by default that uploads the figure to
      // Plotly Cloud: trace content never leaves the product, so it is off whatever a
      // figure asks for.
      var config = Object.assign({ responsive: true, displaylogo: false }, figure.config || {}, NO_CLOUD);
      window.Plotly.newPlot(el, figure.data || [], layout, config).then(function (gd) {
        el.setAttribute("data-rendered", "true");
        var target = el.getAttribute("data-click");
        if (target === "step") {
          // The rollout page opens the step (in whichever window holds it).
          gd.on("plotly_click", function (event) {
            var point = event.points && event.points[0];
            if (point && typeof point.x === "number") {
              document.dispatchEvent(new CustomEvent("faultline:step", { detail: { step: point.x } }));
            }
          });
        } else if (target === "url") {
          gd.on("plotly_click", function (event) {
            var point = event.points && event.points[0];
            var url = point && (point.customdata && (Array.isArray(point.customdata) ? point.customdata[0] : point.customdata));
            // Only same-site URLs: a path, or a query/fragment relative to this page.
            if (typeof url === "string" && "/?#".indexOf(url.charAt(0)) !== -1 && url.charAt(1) !== "/") { window.location.href = url; }
          });
        }
        el.dispatchEvent(new CustomEvent("chart:rendered", { bubbles: true }));
      });
    });
  }

  if (window.Plotly) { render(); return; }
  var script = document.createElement("script");
  script.src = base + "vendor/plotly.min.js";
  script.onload = render;
  document.head.appendChild(script);
})();
