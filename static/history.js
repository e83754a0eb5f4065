// Reviewing past sessions on the session page: a permalink (#e-<seq>, e.g. from a search
// hit) opens the tool call, output or thought it points at, and a page of earlier events
// loaded above keeps the view where the reader was.
// Loaded with `defer` after static/js/main.js, which has already scrolled to the permalink.
(function () {
  "use strict";

  function showTarget(log) {
    var id = location.hash ? decodeURIComponent(location.hash.slice(1)) : "";
    var target = id ? document.getElementById(id) : null;
    if (!target || !log.contains(target)) {
      return;
    }
    // What matched is in the body of a collapsed item; open it so the reader sees it.
    if (target.tagName === "DETAILS" && !target.open) {
      target.open = true;
    }
    target.classList.add("is-found");
    // static/js/transcript.js keeps it in view while rows above it still change height.
    window.Angelia.revealEvent(target);
  }

  function keepPlaceOnEarlier(log) {
    var fromBottom = null;
    // Content inserted above would otherwise push the view down to the top of the new
    // page, where the next "load earlier" marker is visible at once and fires too:
    // the whole history would load page after page.
    log.addEventListener("htmx:beforeSwap", function (evt) {
      var target = evt.detail.target;
      fromBottom =
        target && target.classList && target.classList.contains("earlier")
          ? log.scrollHeight - log.scrollTop
          : null;
    });
    log.addEventListener("htmx:afterSwap", function () {
      if (fromBottom !== null) {
        log.scrollTop = log.scrollHeight - fromBottom;
        fromBottom = null;
      }
    });
  }

  function init() {
    var log = document.getElementById("transcript");
    if (!log) {
      return;
    }
    keepPlaceOnEarlier(log);
    showTarget(log);
    window.addEventListener("hashchange", function () {
      showTarget(log);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
