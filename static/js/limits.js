// The plan-limit meter and scheduled continues (templates/_limits.html): shows each UTC
// time the server wrote in the browser's own zone, wherever one appears (session page,
// board cards, usage page), refreshes the session's panel when a turn ends or a message
// goes (a continue that fired included), and says why the server refused a schedule or a
// cancel instead of leaving the button silent.
(function () {
  "use strict";

  var REFRESH_ON = { turn_end: true, rate_limit: true, user_message: true };

  function sameDay(a, b) {
    return a.toDateString() === b.toDateString();
  }

  // "14:05", or "Tue 14:05" when it is not today: a reset is at most days away.
  function clockText(when) {
    var time = when.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
    if (sameDay(when, new Date())) {
      return time;
    }
    return when.toLocaleDateString(undefined, { weekday: "short", day: "numeric", month: "short" }) + " " + time;
  }

  function localiseClocks(root) {
    var nodes = (root || document).querySelectorAll(".clock[data-utc]:not([data-local])");
    for (var i = 0; i < nodes.length; i++) {
      var when = new Date(nodes[i].getAttribute("data-utc"));
      if (isNaN(when.getTime())) {
        continue;
      }
      nodes[i].setAttribute("data-local", "1");
      nodes[i].setAttribute("title", when.toString());
      nodes[i].textContent = clockText(when);
    }
  }

  function refreshPanel() {
    var panel = document.getElementById("limits");
    if (!panel || !window.htmx) {
      return;
    }
    var url = "/sessions/" + encodeURIComponent(panel.getAttribute("data-session")) + "/limits";
    htmx.ajax("GET", url, { target: "#limits", swap: "outerHTML" });
  }

  function showRefusal(evt) {
    var panel = document.getElementById("limits");
    var xhr = evt.detail && evt.detail.xhr;
    if (!panel || !panel.contains(evt.detail.elt) || !xhr) {
      return;
    }
    var box = document.getElementById("limit-error");
    var why = "";
    try {
      why = JSON.parse(xhr.responseText).detail;
    } catch (err) {
      why = "";
    }
    if (typeof why !== "string" || !why) {
      // The page's error view is HTML: say what failed rather than show its markup.
      why = "The server refused this (HTTP " + xhr.status + "). Reload the page to see the session as it is.";
    }
    box.textContent = why;
    box.hidden = false;
  }

  function init() {
    localiseClocks(document);
    if ("MutationObserver" in window) {
      // Board cards and swapped panels arrive after the page: their times too.
      new MutationObserver(function () {
        localiseClocks(document);
      }).observe(document.body, { childList: true, subtree: true });
    }
    document.body.addEventListener("htmx:responseError", showRefusal);
    var log = document.getElementById("transcript");
    if (log && document.getElementById("limits")) {
      log.addEventListener("htmx:sseBeforeMessage", function (evt) {
        if (evt.detail && REFRESH_ON[evt.detail.type]) {
          refreshPanel();
        }
      });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
