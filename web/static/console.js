// Supplyplan operator console: the only script of the console besides the vendored htmx and uPlot.
// It adds the CSRF token to htmx requests and draws the forecast explorer's chart.
(function () {
  "use strict";

  function csrfToken() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.getAttribute("content") : "";
  }

  document.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["X-CSRF-Token"] = csrfToken();
  });
  // htmx does not swap 4xx/5xx answers by default: show the console's error fragment instead.
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.xhr.status >= 400) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
      e.detail.target = e.detail.requestConfig.elt.closest("td") || e.detail.target;
      e.detail.swapOverride = "innerHTML";
    }
  });

  var colors = {
    actual: "#1f2933",
    baseline: "#7b8794",
    forecast: "#0b6bcb",
    lower: "#0b6bcb",
    upper: "#0b6bcb",
    compare: ["#c2410c", "#15803d", "#7c3aed", "#be185d"]
  };

  function seriesOpts(s, i) {
    var o = { label: s.label, spanGaps: false, width: 2 };
    switch (s.kind) {
      case "actual": o.stroke = colors.actual; o.points = { show: true, size: 4 }; break;
      case "baseline": o.stroke = colors.baseline; o.dash = [6, 4]; break;
      case "forecast": o.stroke = colors.forecast; o.width = 3; break;
      case "lower": case "upper": o.stroke = colors.lower; o.width = 1; o.alpha = 0.5; break;
      default: o.stroke = colors.compare[i % colors.compare.length]; o.dash = [2, 3];
    }
    return o;
  }

  function markerPlugin(events) {
    return {
      hooks: {
        draw: function (u) {
          var ctx = u.ctx;
          ctx.save();
          events.forEach(function (ev) {
            var x = Math.round(u.valToPos(ev.x, "x", true));
            ctx.strokeStyle = ev.learned ? "#7c3aed" : "#c2410c";
            ctx.lineWidth = 2 * devicePixelRatio;
            ctx.setLineDash(ev.learned ? [4 * devicePixelRatio, 4 * devicePixelRatio] : []);
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          });
          ctx.restore();
        }
      }
    };
  }

  function drawChart(el) {
    fetch(el.getAttribute("data-src"), { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) { return r.text().then(function (t) { throw new Error(t || r.statusText); }); }
        return r.json();
      })
      .then(function (d) {
        var data = [d.x].concat(d.series.map(function (s) { return s.values; }));
        var compareIdx = 0;
        var series = [{}].concat(d.series.map(function (s) {
          return seriesOpts(s, s.kind === "compare" ? compareIdx++ : 0);
        }));
        var width = Math.max(280, el.clientWidth || 600);
        var opts = {
          width: width,
          height: width < 500 ? 260 : 360,
          series: series,
          bands: [{ series: [d.band[1], d.band[0]], fill: "rgba(11,107,203,0.15)" }],
          scales: { x: { time: true } },
          axes: [{}, { label: "units / week" }],
          plugins: [markerPlugin(d.events || [])]
        };
        el.innerHTML = "";
        var plot = new uPlot(opts, data, el);
        var points = 0;
        d.series.forEach(function (s) { s.values.forEach(function (v) { if (v !== null) { points++; } }); });
        el.setAttribute("data-points", String(points));
        el.setAttribute("data-series", d.series.map(function (s) { return s.label; }).join("|"));
        var legend = document.getElementById("chart-legend");
        if (legend) {
          var items = (d.events || []).map(function (ev) {
            var when = new Date(ev.x * 1000).toISOString().slice(0, 10);
            return "<li>" + when + " " + ev.type + (ev.learned ? " (learned lift)" : " (planned lift)") + " " +
              Math.round(ev.liftPct * 100) + " %</li>";
          });
          legend.innerHTML = items.length ? "<p>Event markers: orange planned, purple dashed learned</p><ul>" + items.join("") + "</ul>" : "";
        }
        window.addEventListener("resize", function () {
          var w = Math.max(280, el.clientWidth || 600);
          plot.setSize({ width: w, height: w < 500 ? 260 : 360 });
        });
        el.setAttribute("data-drawn", "true");
      })
      .catch(function (err) {
        el.textContent = "The chart could not be drawn: " + err.message;
        el.setAttribute("data-drawn", "error");
      });
  }

  function init() {
    document.querySelectorAll(".chart[data-src]").forEach(drawChart);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
