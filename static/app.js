// Angelia page behaviour: composer keys, the live transcript, copy buttons.
// Loaded with `defer` under `script-src 'self'`: no inline handlers anywhere, everything
// is wired here by id, class or data attribute.
(function () {
  "use strict";

  var FOLLOW_SLACK_PX = 48;
  var RECONNECT_NOTICE_MS = 2000;

  // ---- helpers ------------------------------------------------------------------

  function parseFragment(html) {
    // The server renders these fragments with autoescaping; a <template> parses them
    // without running anything or fetching images.
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    return tpl.content;
  }

  function localiseTimes(root) {
    var nodes = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < nodes.length; i++) {
      var when = new Date(nodes[i].getAttribute("datetime"));
      if (!isNaN(when.getTime())) {
        nodes[i].textContent = when.toLocaleString(undefined, {
          dateStyle: "medium",
          timeStyle: "short",
        });
      }
    }
  }

  // ---- narrow screens: the sidebar starts folded --------------------------------

  function initMenu() {
    var menu = document.getElementById("nav-menu");
    if (menu && window.matchMedia("(max-width: 720px)").matches) {
      menu.open = false;
    }
  }

  // ---- copy buttons on code blocks ----------------------------------------------

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "offscreen";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (err) {
        ok = false;
      }
      document.body.removeChild(area);
      if (ok) {
        resolve();
      } else {
        reject(new Error("copy failed"));
      }
    });
  }

  function initCopyButtons() {
    document.addEventListener("click", function (evt) {
      var button = evt.target.closest ? evt.target.closest("button.copy") : null;
      if (!button) {
        return;
      }
      var block = button.closest(".code");
      var code = block ? block.querySelector("pre code") : null;
      if (!code) {
        return;
      }
      copyText(code.textContent).then(
        function () {
          flash(button, "Copied");
        },
        function () {
          flash(button, "Copy failed");
        }
      );
    });
  }

  function flash(button, text) {
    var original = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", original);
    button.textContent = text;
    window.setTimeout(function () {
      button.textContent = original;
    }, 1500);
  }

  // ---- composer -----------------------------------------------------------------

  function initComposer() {
    var form = document.getElementById("composer");
    var text = document.getElementById("composer-text");
    var errorBox = document.getElementById("composer-error");
    if (!form || !text) {
      return;
    }

    function grow() {
      // Setting style through the CSSOM is allowed by the CSP; inline style attributes
      // in the markup are not.
      text.style.height = "auto";
      text.style.height = text.scrollHeight + 2 + "px";
    }

    text.addEventListener("input", grow);
    text.addEventListener("keydown", function (evt) {
      if (evt.key !== "Enter" || evt.shiftKey || evt.isComposing || evt.keyCode === 229) {
        return;
      }
      evt.preventDefault();
      if (text.value.trim() === "") {
        return;
      }
      if (form.requestSubmit) {
        form.requestSubmit();
      } else {
        htmx.trigger(form, "submit");
      }
    });

    form.addEventListener("htmx:confirm", function (evt) {
      // An empty message is never sent (the Stop button shares this form).
      if (evt.detail.elt === form && text.value.trim() === "") {
        evt.preventDefault();
      }
    });

    form.addEventListener("htmx:afterRequest", function (evt) {
      if (evt.detail.elt !== form) {
        if (errorBox && !evt.detail.successful) {
          errorBox.textContent = responseMessage(evt.detail.xhr, "Could not stop the agent.");
        }
        return;
      }
      if (evt.detail.successful) {
        text.value = "";
        grow();
        if (errorBox) {
          errorBox.textContent = "";
        }
      } else if (errorBox) {
        errorBox.textContent = responseMessage(evt.detail.xhr, "The message was not sent.");
      }
    });
  }

  function responseMessage(xhr, fallback) {
    if (!xhr || xhr.status === 0) {
      return fallback + " The server did not answer.";
    }
    var body = (xhr.responseText || "").trim();
    // Only short plain-text bodies are shown, and only as text.
    if (body && body.length < 500 && body.charAt(0) !== "<") {
      return body;
    }
    return fallback + " (HTTP " + xhr.status + ")";
  }

  // ---- the live transcript ------------------------------------------------------

  function initTranscript() {
    var log = document.getElementById("transcript");
    if (!log) {
      return;
    }
    var jump = document.getElementById("jump");
    var notice = document.getElementById("conn-notice");
    var lastSeq = parseInt(log.getAttribute("data-last-seq") || "0", 10) || 0;
    var baseTitle = document.title.replace(/^\(\d+\)\s*/, "");
    var follow = true;
    var noticeTimer = null;

    function atBottom() {
      return log.scrollHeight - log.scrollTop - log.clientHeight <= FOLLOW_SLACK_PX;
    }

    function toBottom() {
      log.scrollTop = log.scrollHeight;
      if (jump) {
        jump.hidden = true;
      }
    }

    function afterNewContent() {
      var empty = log.querySelector(".empty");
      if (empty) {
        empty.remove();
      }
      if (follow) {
        toBottom();
      } else if (jump) {
        jump.hidden = false;
      }
      updatePending();
    }

    function updatePending() {
      var count = log.querySelectorAll('.perm[data-status="pending"]').length;
      document.title = (count ? "(" + count + ") " : "") + baseTitle;
      var note = document.getElementById("pending-note");
      var number = document.getElementById("pending-count");
      if (note && number) {
        number.textContent = String(count);
        note.hidden = count === 0;
      }
    }

    log.addEventListener("scroll", function () {
      follow = atBottom();
      if (follow && jump) {
        jump.hidden = true;
      }
    });
    if (jump) {
      jump.addEventListener("click", function () {
        follow = true;
        toBottom();
      });
    }

    function liveBubble(mid, seq) {
      var bubble = document.getElementById("live-" + mid);
      if (!bubble) {
        bubble = document.createElement("div");
        bubble.className = "event msg assistant live";
        bubble.id = "live-" + mid;
        bubble.setAttribute("data-kind", "text_stream");
        bubble.setAttribute("data-mid", mid);
        bubble.setAttribute("aria-hidden", "true");
        var body = document.createElement("div");
        body.className = "live-text";
        bubble.appendChild(body);
        log.appendChild(bubble);
      }
      bubble.setAttribute("data-seq", String(seq));
      return bubble;
    }

    function onDelta(data, seq) {
      var span = parseFragment(data).querySelector(".delta");
      if (!span) {
        return;
      }
      var bubble = liveBubble(span.getAttribute("data-mid") || "", seq);
      bubble.querySelector(".live-text").appendChild(document.createTextNode(span.textContent));
    }

    function replaceLive(live, data) {
      // The finished message takes the streaming bubble's place, so nothing jumps.
      var fragment = parseFragment(data);
      var nodes = Array.prototype.slice.call(fragment.children);
      live.replaceWith(fragment);
      nodes.forEach(function (node) {
        htmx.process(node);
      });
    }

    function markDecided(data) {
      var line = parseFragment(data).querySelector("[data-pid]");
      if (!line) {
        return;
      }
      var card = document.getElementById("perm-" + line.getAttribute("data-pid"));
      if (!card || card.getAttribute("data-status") !== "pending") {
        return;
      }
      var form = card.querySelector(".perm-actions");
      if (form) {
        form.remove();
      }
      card.setAttribute("data-status", "decided");
      card.classList.remove("pending");
      card.classList.add("decided");
      var badge = card.querySelector(".perm-badge");
      var text = line.querySelector(".decision-text");
      if (badge && text) {
        badge.textContent = text.textContent;
      }
    }

    function setToolState(tcid, state) {
      var calls = log.querySelectorAll(".tool-call[data-tcid]");
      for (var i = 0; i < calls.length; i++) {
        if (calls[i].getAttribute("data-tcid") === tcid) {
          setState(calls[i], state);
        }
      }
    }

    function setState(call, state) {
      call.classList.remove("state-" + call.getAttribute("data-state"));
      call.classList.add("state-" + state);
      call.setAttribute("data-state", state);
      var label = call.querySelector(".state-text");
      if (label) {
        label.textContent = "(" + state + ")";
      }
    }

    function onToolResult(data) {
      var el = parseFragment(data).querySelector("[data-tcid]");
      if (el) {
        var failed = el.classList.contains("is-error");
        setToolState(el.getAttribute("data-tcid"), failed ? "failed" : "done");
      }
    }

    function onTurnEnd() {
      var running = log.querySelectorAll('.tool-call[data-state="running"]');
      for (var i = 0; i < running.length; i++) {
        setState(running[i], "stopped");
      }
    }

    function onStatus(data) {
      var el = parseFragment(data).querySelector("[data-status]");
      var holder = document.getElementById("session-status");
      var badge = holder ? holder.querySelector(".status") : null;
      if (!el || !badge) {
        return;
      }
      var status = el.getAttribute("data-status");
      badge.className = "status status-" + status;
      badge.setAttribute("data-status", status);
      badge.textContent = status === "waiting" ? "waiting for you" : status;
    }

    function onSessionInfo(data) {
      var el = parseFragment(data).querySelector("[data-kind]");
      if (!el) {
        return;
      }
      var model = el.getAttribute("data-model");
      var source = el.getAttribute("data-api-key-source");
      var modelBox = document.getElementById("session-model");
      if (model && modelBox) {
        modelBox.textContent = model;
      }
      var auth = document.getElementById("session-auth");
      if (source && auth) {
        auth.querySelector(".auth-source").textContent = source;
        auth.hidden = false;
      }
    }

    log.addEventListener("htmx:sseBeforeMessage", function (evt) {
      var msg = evt.detail;
      if (typeof msg.data !== "string") {
        // A connection failure reaches listeners of an event named "error" too.
        evt.preventDefault();
        return;
      }
      var seq = parseInt(msg.lastEventId, 10);
      if (!isNaN(seq)) {
        // A reconnect replays from the page's starting point; what we already show is
        // dropped here instead of appearing twice.
        if (seq <= lastSeq) {
          evt.preventDefault();
          return;
        }
        lastSeq = seq;
        log.setAttribute("data-last-seq", String(seq));
      }
      follow = atBottom();
      switch (msg.type) {
        case "text_delta":
          evt.preventDefault();
          onDelta(msg.data, seq);
          afterNewContent();
          return;
        case "assistant_message": {
          var mid = parseFragment(msg.data).querySelector("[data-mid]");
          var live = mid ? document.getElementById("live-" + mid.getAttribute("data-mid")) : null;
          if (live) {
            evt.preventDefault();
            replaceLive(live, msg.data);
            afterNewContent();
          }
          return;
        }
        case "permission_decision":
          markDecided(msg.data);
          return;
        case "tool_result":
          onToolResult(msg.data);
          return;
        case "turn_end":
          onTurnEnd();
          return;
        case "status":
          onStatus(msg.data);
          return;
        case "session_info":
          onSessionInfo(msg.data);
          return;
      }
    });

    log.addEventListener("htmx:sseMessage", function (evt) {
      localiseTimes(log);
      afterNewContent();
    });

    log.addEventListener("htmx:sseError", function (evt) {
      var cause = evt.detail && evt.detail.error;
      if (cause && typeof cause.data === "string") {
        return; // a stored error event sent as "error", not a lost connection
      }
      // When the extension has to build a new EventSource, the browser's Last-Event-ID
      // is gone; asking for what follows our last event keeps the replay short.
      var url = log.getAttribute("sse-connect");
      if (url) {
        log.setAttribute("sse-connect", url.replace(/([?&]after=)\d+/, "$1" + lastSeq));
      }
      if (notice && noticeTimer === null) {
        noticeTimer = window.setTimeout(function () {
          notice.hidden = false;
        }, RECONNECT_NOTICE_MS);
      }
    });

    log.addEventListener("htmx:sseOpen", function () {
      if (noticeTimer !== null) {
        window.clearTimeout(noticeTimer);
        noticeTimer = null;
      }
      if (notice) {
        notice.hidden = true;
      }
    });

    // A decision made in this tab swaps the card; the title count follows.
    document.body.addEventListener("htmx:afterSwap", updatePending);

    // Long sessions open at the end, unless a permalink (#e-<seq>) asks for an event.
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target && log.contains(target)) {
      target.scrollIntoView({ block: "center" });
      follow = atBottom();
    } else {
      toBottom();
    }
    updatePending();
  }

  function init() {
    initMenu();
    initCopyButtons();
    initComposer();
    initTranscript();
    localiseTimes(document);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
