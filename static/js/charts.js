// Renders every <div class="chart" data-figure-id="ID"> from the plotly figure JSON in
// <script type="application/json" id="ID"> (made with Django's json_script). plotly.js is
// vendored in static/vendor and loaded only on pages that have a chart.
(function () {
  "use strict";
  var charts = document.querySelectorAll(".chart[data-figure-id]");
  if (!charts.length) { return; }
  var base = document.body.getAttribute("data-static") || "/static/";
  var NO_CLOUD = { showSendToCloud: false, showEditInChartStudio: false, showLink: false, plotlyServerURL: "" };
  // A chart narrower than this (a phone) drops its title (the card above it has the same
  // heading, and a long one was cut off), puts its legend under the whole figure instead
  // of over the plot or over the axis title, shortens long legend names (hover keeps the
  // whole name) and keeps the numbers inside heatmap cells legible.
  var NARROW_PX = 560;
  var LEGEND_CHARS = 38;
  function narrow(el, layout, data) {
    // One legend row per entry under the plot: the figure grows by them, so the plot
    // keeps its height and no row lies over the axis.
    var entries = data.filter(function (t) {
      return t.showlegend !== false && t.name && ["heatmap", "treemap", "pie"].indexOf(t.type) === -1;
    }).length;
    // plotly draws no legend for a single trace unless asked.
    var shown = layout.showlegend === true || (layout.showlegend !== false && entries > 1);
    var rows = shown ? entries : 0;
    var bottom = ((layout.margin && layout.margin.b) || 48) + 22 * rows;
    var set = parseInt(el.getAttribute("data-height"), 10);
    if (rows && set > 0) {
      el.style.height = (set + 22 * rows) + "px";
    } else if (rows) {
      layout.height = (layout.height || 450) + 22 * rows;  // plotly's own height, grown
    }
    layout.title = Object.assign({}, layout.title, { text: "" });
    layout.margin = Object.assign({}, layout.margin, { t: 16, r: 8, l: 44, b: bottom });
    layout.legend = Object.assign({}, layout.legend, {
      orientation: "h", x: 0, xanchor: "left", xref: "container", y: 0, yanchor: "bottom", yref: "container",
    });
    ["xaxis", "yaxis"].forEach(function (axis) {  // a long axis title on two lines
      var title = layout[axis] && layout[axis].title;
      var text = title && (typeof title === "string" ? title : title.text);
      if (typeof text === "string" && text.length > LEGEND_CHARS && text.indexOf("<br>") === -1) {
        var cut = text.lastIndexOf(" ", Math.ceil(text.length / 2));
        if (cut > 0) {
          text = text.slice(0, cut) + "<br>" + text.slice(cut + 1);
          layout[axis] = Object.assign({}, layout[axis], { title: Object.assign({}, typeof title === "string" ? {} : title, { text: text }) });
        }
      }
    });
    data.forEach(function (trace) {
      if (typeof trace.name === "string" && trace.name.length > LEGEND_CHARS) {
        trace.hovertemplate = trace.hovertemplate || trace.name.replace(/%/g, "%%") + "<extra></extra>";
        trace.name = trace.name.slice(0, LEGEND_CHARS - 1) + "…";
      }
      if (trace.type === "heatmap" && (trace.texttemplate || trace.text)) {
        trace.textfont = Object.assign({ size: 12 }, trace.textfont);
      }
    });
  }
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
      if (el.clientWidth > 0 && el.clientWidth < NARROW_PX) { narrow(el, layout, figure.data || []); }
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
