// The session header's context gauge follows the usage figures the stream brings, and
// the Compact button says why it was refused (a running turn, no such command).
(function () {
  "use strict";

  var A = window.Angelia;

  function levelOf(box, percent) {
    if (percent >= (parseInt(box.getAttribute("data-red"), 10) || 80)) {
      return "red";
    }
    if (percent >= (parseInt(box.getAttribute("data-amber"), 10) || 60)) {
      return "amber";
    }
    return "green";
  }

  // As _context_gauge.html draws it: known figures make a bar, others say "unknown".
  function setGauge(gauge, used, size) {
    var known = used >= 0 && size > 0;
    var percent = known ? Math.min(100, Math.round((used / size) * 100)) : 0;
    var level = known ? levelOf(gauge, percent) : "unknown";
    var words = known
      ? "Context: " + A.formatTokens(used) + " of " + A.formatTokens(size) +
        " tokens used (" + percent + "%)"
      : "Context: unknown (the agent has not reported it)";
    gauge.className = "ctx-gauge__badge ctx-gauge__badge--" + level;
    gauge.setAttribute("data-level", level);
    gauge.setAttribute("data-used", known ? String(used) : "");
    gauge.setAttribute("data-size", known ? String(size) : "");
    gauge.title = words;
    gauge.setAttribute("aria-label", words);
    var bar = gauge.querySelector(".ctx-gauge__bar");
    bar.value = percent;
    bar.hidden = !known;
    gauge.querySelector(".ctx-gauge__short").textContent = known ? percent + "%" : "unknown";
    gauge.querySelector(".ctx-gauge__numbers").textContent = words;
  }

  function initGauge() {
    var log = document.getElementById("transcript");
    var head = document.getElementById("session-head");
    var gauge = head ? head.querySelector(".ctx-gauge__badge") : null;
    if (!log || !gauge) {
      return;
    }
    log.addEventListener("htmx:sseBeforeMessage", function (evt) {
      var msg = evt.detail;
      if (msg.type !== "usage" || typeof msg.data !== "string") {
        return;
      }
      var el = A.parseFragment(msg.data).querySelector("[data-usage-used]");
      if (el) {
        setGauge(
          gauge,
          parseInt(el.getAttribute("data-usage-used"), 10),
          parseInt(el.getAttribute("data-usage-size"), 10)
        );
      }
    });
    var form = head.querySelector(".compact-form");
    var problem = document.getElementById("compact-error");
    if (!form || !problem) {
      return;
    }
    form.addEventListener("htmx:afterRequest", function (evt) {
      problem.hidden = evt.detail.successful;
      problem.textContent = evt.detail.successful
        ? ""
        : A.responseMessage(evt.detail.xhr, "Could not compact.");
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", initGauge);
  } else {
    initGauge();
  }
})();
