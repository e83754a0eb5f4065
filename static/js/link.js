// The page's link to the server. Once Angelia has stopped, another local program may bind
// its address and port, and every request an open tab sends would carry the sign-in
// cookie; so the page never lets its streams or polls reconnect blindly (docs/security.md):
// - a stream that says Angelia stops ("angelia-stopped", the last event of every page
//   stream at a stop): the page goes quiet at once;
// - a stream or a poll that loses the server: the page closes its streams, holds its polls,
//   and asks /api/health, without its cookie, to prove it is the same Angelia (an HMAC of
//   a fresh challenge under a key only the server and its pages know). Proven, the page
//   checks it is still signed in and reloads; not within the give-up time (body's
//   data-give-up-s, 30 s), it goes quiet;
// - a request refused as signed out (401): the page goes quiet.
// Quiet means: no stream, no poll, no request of its own, and a banner whose Reconnect
// button reloads the page.
(function () {
  "use strict";

  var A = window.Angelia;
  var STOPPED_EVENT = "angelia-stopped";
  var GIVE_UP_DEFAULT_S = 30;
  var PROBE_EVERY_MS = 1000;
  // A page that reloaded on its own this recently goes quiet instead of reloading again.
  var RELOADED_KEY = "angelia-link-reloaded";
  var sources = [];
  // Called with every stream the page opens (static/js/sidebar.js listens on them).
  var openers = [];
  var halted = false;
  var paused = false;
  var deadline = 0;

  var MESSAGES = {
    stopped: "Angelia stopped. This page sends nothing until you reconnect.",
    lost: "Angelia stopped answering. This page sends nothing until you reconnect.",
    "signed-out":
      "This browser is signed out of Angelia. Run angelia open on this computer to sign in again, then reconnect.",
    // Through the remote origin (always https; loopback is http) it is a paired device.
    unpaired:
      "This device is no longer paired with Angelia. Pair it again from Devices on the computer where Angelia runs, then reconnect.",
  };

  function giveUpMs() {
    var s = parseFloat(document.body.getAttribute("data-give-up-s"));
    return (isFinite(s) && s > 0 ? s : GIVE_UP_DEFAULT_S) * 1000;
  }

  function showBanner(why) {
    var banner = document.getElementById("link-banner");
    if (!banner) return;
    var notice = document.getElementById("conn-notice");
    if (notice) notice.hidden = true;
    // An alert inserted once is announced once; the button beside it is not re-read.
    var text = document.createElement("p");
    text.setAttribute("role", "alert");
    if (why === "signed-out" && window.location.protocol === "https:") why = "unpaired";
    text.textContent = MESSAGES[why];
    var button = document.createElement("button");
    button.type = "button";
    button.className = "btn";
    button.id = "link-reconnect";
    button.textContent = "Reconnect";
    button.addEventListener("click", function () {
      window.location.reload();
    });
    banner.replaceChildren(text, button);
  }

  function closeStreams() {
    // Without its attribute the htmx extension does not build a new stream either.
    Array.prototype.forEach.call(document.querySelectorAll("[sse-connect]"), function (el) {
      el.removeAttribute("sse-connect");
    });
    sources.forEach(function (source) {
      source.close();
    });
    sources = [];
  }

  // Stop every request the page makes by itself, for good (until a reload).
  function halt(why) {
    if (halted) return;
    halted = true;
    closeStreams();
    document.body.setAttribute("data-link", why);
    showBanner(why);
  }

  function hex(buffer) {
    return Array.prototype.map
      .call(new Uint8Array(buffer), function (b) {
        return ("0" + b.toString(16)).slice(-2);
      })
      .join("");
  }

  // Whether the server answering now proves it holds this page's link key; the request
  // carries no cookie, so whoever answers learns nothing.
  function provenBack() {
    var key = document.body.getAttribute("data-link-key");
    var subtle = window.crypto && window.crypto.subtle;
    if (!key || !subtle) return Promise.resolve(false);
    var challenge = hex(window.crypto.getRandomValues(new Uint8Array(16)));
    var enc = new TextEncoder();
    var expected = subtle
      .importKey("raw", enc.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
      .then(function (k) {
        return subtle.sign("HMAC", k, enc.encode(challenge));
      })
      .then(hex);
    var answered = fetch("/api/health?challenge=" + challenge, {
      credentials: "omit",
      cache: "no-store",
    }).then(function (r) {
      return r.ok ? r.json() : {};
    });
    return Promise.all([expected, answered]).then(
      function (both) {
        return typeof both[1].proof === "string" && both[1].proof === both[0];
      },
      function () {
        return false;
      }
    );
  }

  function reloadOnce() {
    var last = Number(window.sessionStorage.getItem(RELOADED_KEY) || 0);
    if (Date.now() - last < giveUpMs()) {
      halt("lost");
      return;
    }
    window.sessionStorage.setItem(RELOADED_KEY, String(Date.now()));
    window.location.reload();
  }

  function probe() {
    if (halted) return;
    if (Date.now() >= deadline) {
      halt("lost");
      return;
    }
    provenBack().then(function (ok) {
      if (halted) return;
      if (!ok) {
        window.setTimeout(probe, PROBE_EVERY_MS);
        return;
      }
      // Angelia itself: the cookie may go again. Still signed in? Then a fresh page.
      fetch("/badge", { credentials: "same-origin", cache: "no-store" }).then(
        function (r) {
          if (r.status === 401) halt("signed-out");
          else reloadOnce();
        },
        function () {
          window.setTimeout(probe, PROBE_EVERY_MS);
        }
      );
    });
  }

  // The server is gone or the stream broke: nothing with the cookie until it proves itself.
  function lost() {
    if (halted || paused) return;
    paused = true;
    closeStreams();
    document.body.setAttribute("data-link", "checking");
    deadline = Date.now() + giveUpMs();
    probe();
  }

  // A closed stand-in, for a stream asked for while the page holds back.
  var QUIET = {
    readyState: 2,
    close: function () {},
    addEventListener: function () {},
    removeEventListener: function () {},
  };

  function eventSource(url) {
    if (halted || paused) return QUIET;
    var source = new EventSource(url);
    sources.push(source);
    source.addEventListener(STOPPED_EVENT, function () {
      halt("stopped");
    });
    source.addEventListener("open", function () {
      document.body.setAttribute("data-link", "open");
    });
    source.addEventListener("error", function (evt) {
      // A stored event named "error" carries data; a lost connection does not. Closing
      // here, before the browser's own reconnect, keeps the cookie home.
      if (typeof evt.data === "string") return;
      lost();
    });
    openers.forEach(function (fn) {
      fn(source);
    });
    return source;
  }

  // fn(source) for each stream the page has open and each it opens from now on.
  function onEventSource(fn) {
    openers.push(fn);
    sources.forEach(function (source) {
      fn(source);
    });
  }

  function init() {
    if (window.htmx) {
      // The htmx SSE extension opens its streams through this hook.
      window.htmx.createEventSource = eventSource;
    }
    document.body.addEventListener("htmx:beforeRequest", function (evt) {
      if (halted || paused) evt.preventDefault();
    });
    document.body.addEventListener("htmx:sendError", lost);
    document.body.addEventListener("htmx:afterRequest", function (evt) {
      var xhr = evt.detail && evt.detail.xhr;
      if (xhr && xhr.status === 401) halt("signed-out");
    });
  }

  A.eventSource = eventSource;
  A.onEventSource = onEventSource;
  A.linkHalted = function () {
    return halted;
  };
  init();
})();
