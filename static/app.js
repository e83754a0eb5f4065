// Angelia page behaviour: composer keys, the live transcript, copy buttons, permission
// cards (keyboard answers, time waiting), the approvals badge and notifications.
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

  // ---- narrow screens: the sidebar folds into a menu behind a real button --------

  var NARROW = "(max-width: 720px)";

  // A panel that folds behind its button on narrow screens and is always open on wide
  // ones. The CSS hides the buttons and folds panels only when <html> has the "js"
  // class, so without this script everything simply stays open.
  function foldOnNarrow(toggle, panel, startOpen) {
    var narrow = window.matchMedia(NARROW);
    function setOpen(open) {
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      panel.classList.toggle("is-closed", !open);
    }
    setOpen(!narrow.matches || startOpen);
    if (narrow.addEventListener) {
      narrow.addEventListener("change", function () {
        setOpen(!narrow.matches);
      });
    }
    toggle.addEventListener("click", function () {
      setOpen(toggle.getAttribute("aria-expanded") !== "true");
    });
    // Escape inside an open panel folds it and gives focus back to its button, before
    // any other meaning Escape has on the page.
    panel.addEventListener("keydown", function (evt) {
      if (evt.key === "Escape" && narrow.matches && !panel.classList.contains("is-closed")) {
        evt.preventDefault();
        setOpen(false);
        toggle.focus();
      }
    });
  }

  function initMenu() {
    document.documentElement.classList.add("js");
    var toggle = document.getElementById("nav-toggle");
    var menu = document.getElementById("nav-menu");
    if (toggle && menu) {
      foldOnNarrow(toggle, menu, false);
    }
    // The chat header's details and tools; a form that came back with a problem to
    // fix starts open.
    var headToggle = document.getElementById("head-toggle");
    var more = document.getElementById("head-more");
    if (headToggle && more) {
      foldOnNarrow(headToggle, more, !!more.querySelector("[role=alert], details[open]"));
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

  // ---- pending approvals: badge, tab title, desktop notifications -----------------

  // The title's "(n) " prefix is the badge count: approvals waiting in any session.
  var baseTitle = document.title.replace(/^\(\d+\)\s*/, "");
  var badgeCount = -1;

  function readBadge() {
    var el = document.querySelector("#pending-badge [data-count]");
    return el ? parseInt(el.getAttribute("data-count"), 10) || 0 : 0;
  }

  function showBadgeCount(count) {
    document.title = (count ? "(" + count + ") " : "") + baseTitle;
    var grew = badgeCount >= 0 && count > badgeCount;
    badgeCount = count;
    return grew;
  }

  // Asks the sidebar badge to poll now instead of at its next tick.
  function refreshBadge() {
    if (window.htmx && document.getElementById("pending-badge")) {
      htmx.trigger(document.body, "angelia-pending");
    }
  }

  function canNotify() {
    return "Notification" in window && Notification.permission === "granted";
  }

  function notify(title, body, tag) {
    if (!canNotify()) {
      return;
    }
    try {
      var note = new Notification(title, { body: body, tag: tag });
      note.onclick = function () {
        window.focus();
        note.close();
      };
    } catch (err) {
      // Some platforms only allow notifications from a service worker; the title
      // badge still shows the count.
    }
  }

  function initBadge() {
    showBadgeCount(readBadge());
    document.body.addEventListener("htmx:afterSwap", function (evt) {
      var slot = document.getElementById("pending-badge");
      if (!slot || evt.detail.target !== slot) {
        return;
      }
      var count = readBadge();
      var grew = showBadgeCount(count);
      // The session page notifies from the request itself, with its details.
      if (grew && document.hidden && !document.getElementById("transcript")) {
        notify(
          "Angelia: approval needed",
          count + (count === 1 ? " request is" : " requests are") + " waiting for you",
          "angelia-pending"
        );
      }
    });
  }

  function initNotifyButton() {
    var button = document.getElementById("notify-btn");
    if (!button || !("Notification" in window)) {
      return;
    }
    // Permission can only be asked for from a user's click, and only once.
    button.hidden = Notification.permission !== "default";
    button.addEventListener("click", function () {
      var asked = Notification.requestPermission(function () {
        button.hidden = Notification.permission !== "default";
      });
      if (asked && asked.then) {
        asked.then(function () {
          button.hidden = Notification.permission !== "default";
        });
      }
    });
  }

  // ---- permission cards: time waiting, keyboard answers ----------------------------

  var TYPING = "input, textarea, select, [contenteditable]:not([contenteditable='false'])";
  // Focus on any of these keeps Enter and Escape to themselves (a focused output block
  // scrolls with the keyboard; Enter there must not approve anything).
  var CONTROLS = "a[href], button, summary, [role='button'], pre, [role='region']";
  var WAIT_TICK_MS = 1000;

  // As the partial words them (render.TOOL_STATE_LABELS).
  var STATE_LABELS = { running: "running", done: "done", failed: "failed", stopped: "cancelled" };

  function formatCost(usd) {
    // Mirrors render.format_cost, so a live update reads like a reload.
    if (Math.abs(usd) >= 1) {
      return "$" + usd.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    }
    var parts = usd.toFixed(4).replace(/0+$/, "").split(".");
    var frac = parts[1] || "";
    while (frac.length < 2) {
      frac += "0";
    }
    return "$" + parts[0] + "." + frac;
  }

  function formatTokens(count) {
    if (count < 1000) {
      return String(Math.round(count));
    }
    if (count < 1000000) {
      return (count / 1000).toFixed(1) + "k";
    }
    return (count / 1000000).toFixed(1) + "M";
  }

  // The session's turn is running (or waiting on an approval): Stop has something to stop.
  function turnActive() {
    var badge = document.querySelector("#session-status .status");
    var status = badge ? badge.getAttribute("data-status") : "";
    return status === "working" || status === "waiting";
  }

  // Presses the real Stop button, so Escape and a click share one request path.
  function interruptTurn() {
    var stop = document.getElementById("stop-btn");
    if (!stop || !turnActive()) {
      return false;
    }
    if (window.htmx) {
      htmx.process(stop);
    }
    stop.click();
    return true;
  }

  function pendingCards() {
    return document.querySelectorAll('.perm[data-status="pending"]');
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function waitText(ms) {
    var total = Math.max(0, Math.floor(ms / 1000));
    var hours = Math.floor(total / 3600);
    var minutes = Math.floor((total % 3600) / 60);
    var clock = (hours ? hours + ":" + pad(minutes) : String(minutes)) + ":" + pad(total % 60);
    return "waiting " + clock;
  }

  function tickWaits() {
    var nodes = document.querySelectorAll('.perm[data-status="pending"] .perm-wait[data-since]');
    var now = Date.now();
    for (var i = 0; i < nodes.length; i++) {
      var since = Date.parse(nodes[i].getAttribute("data-since"));
      if (!isNaN(since)) {
        nodes[i].textContent = waitText(now - since);
      }
    }
  }

  // Clicking the real button keeps one code path: htmx sends the form with the
  // button's name and value, and swaps the answered card in.
  function answer(card, decision) {
    var form = card.querySelector(".perm-actions");
    if (!form || form.classList.contains("htmx-request")) {
      return;
    }
    var button = form.querySelector('button[name="decision"][value="' + decision + '"]');
    if (!button) {
      return;
    }
    // htmx wires up swapped-in content only when it settles, a few ms later; a key
    // pressed in between would otherwise submit the form natively (a page load).
    if (window.htmx) {
      htmx.process(form);
    }
    button.click();
  }

  function initShortcuts() {
    document.addEventListener("keydown", function (evt) {
      if (evt.key !== "Enter" && evt.key !== "Escape") {
        return;
      }
      if (evt.defaultPrevented || evt.isComposing || evt.altKey || evt.ctrlKey || evt.metaKey) {
        return;
      }
      var target = evt.target instanceof Element ? evt.target : null;
      if (!target || evt.shiftKey) {
        return;
      }
      var own = target.closest('.perm[data-status="pending"]');
      // The browser would submit with the form's first button (Allow once); a message
      // typed here is meant for Deny.
      if (own && evt.key === "Enter" && target.matches(".perm-message input")) {
        evt.preventDefault();
        answer(own, "deny");
        return;
      }
      var typing = target.closest(TYPING);
      var card = own || pendingCards()[0];
      if (!card) {
        // With no approval waiting, Escape outside a text field stops the turn (in the
        // message box the composer handles it). A waiting card always comes first: its
        // Escape means Deny, which is what the card's key hint promises.
        if (evt.key === "Escape" && !typing && interruptTurn()) {
          evt.preventDefault();
        }
        return;
      }
      if (typing || (target !== own && target.closest(CONTROLS))) {
        return;
      }
      evt.preventDefault();
      answer(card, evt.key === "Enter" ? "allow_once" : "deny");
    });

    // A card answered from the keyboard is replaced; focus moves on to the next one
    // instead of falling back to the top of the page.
    var refocus = null;
    document.body.addEventListener("htmx:beforeSwap", function (evt) {
      var target = evt.detail.target;
      var inCard =
        target &&
        target.classList &&
        target.classList.contains("perm") &&
        target.contains(document.activeElement);
      refocus = inCard ? target.id : null;
    });
    document.body.addEventListener("htmx:afterSwap", function () {
      if (refocus) {
        var id = refocus;
        refocus = null;
        focusNextCard(document.getElementById(id));
      }
    });

    // A failed answer (server down, bad request) says so on the card itself.
    document.body.addEventListener("htmx:afterRequest", function (evt) {
      var form = evt.detail.elt;
      if (evt.detail.successful || !form.classList || !form.classList.contains("perm-actions")) {
        return;
      }
      var card = form.closest(".perm");
      var box = card.querySelector(".notice") || document.createElement("p");
      box.className = "notice";
      box.setAttribute("role", "alert");
      box.textContent = responseMessage(evt.detail.xhr, "The answer was not recorded.");
      card.appendChild(box);
    });

    window.setInterval(tickWaits, WAIT_TICK_MS);
    tickWaits();
  }

  // Focus stays out of text fields so Enter and Escape keep answering: the next
  // pending card if there is one, else the card just answered.
  function focusNextCard(answered) {
    var next = pendingCards()[0] || answered;
    if (next) {
      if (!next.hasAttribute("tabindex")) {
        next.setAttribute("tabindex", "-1");
      }
      next.focus({ preventScroll: next === answered });
    }
  }

  // Collapses a pending card to the one line a decided card shows, from the
  // permission_decision fragment (another tab, a rule, the mode, a timeout…).
  function collapseCard(card, line) {
    var hadFocus = card.contains(document.activeElement);
    var allowed = (line.getAttribute("data-decision") || "").indexOf("allow") === 0;
    var head = card.querySelector(".perm-head");
    var details = document.createElement("details");
    details.className = "perm-line";
    var summary = document.createElement("summary");
    var mark = document.createElement("span");
    mark.className = "mark";
    mark.setAttribute("aria-hidden", "true");
    mark.textContent = allowed ? "\u2713" : "\u2717";
    summary.appendChild(mark);
    [".tool", ".perm-title"].forEach(function (selector) {
      var part = head ? head.querySelector(selector) : null;
      if (part) {
        summary.appendChild(document.createTextNode(" "));
        summary.appendChild(part);
      }
    });
    var outcome = document.createElement("span");
    outcome.className = "outcome";
    var text = line.querySelector(".decision-text");
    // These nodes come from the server's autoescaped fragment, parsed inertly.
    while (text && text.firstChild) {
      outcome.appendChild(text.firstChild);
    }
    summary.appendChild(document.createTextNode(" "));
    summary.appendChild(outcome);
    details.appendChild(summary);
    var message = line.querySelector(".decision-message");
    if (message) {
      var said = document.createElement("p");
      said.className = "perm-reason";
      said.textContent = "Message: " + message.textContent.replace(/^\s*\u2014\s*/, "");
      details.appendChild(said);
    }
    Array.prototype.slice.call(card.children).forEach(function (child) {
      if (child !== head && !child.classList.contains("perm-actions")) {
        details.appendChild(child);
      }
    });
    while (card.firstChild) {
      card.removeChild(card.firstChild);
    }
    card.appendChild(details);
    card.className = "perm decided " + (allowed ? "is-allowed" : "is-denied");
    card.setAttribute("data-status", "decided");
    ["tabindex", "role", "aria-labelledby", "aria-describedby"].forEach(function (name) {
      card.removeAttribute(name);
    });
    if (hadFocus) {
      focusNextCard(card);
    }
  }

  // ---- permission mode selector -------------------------------------------------

  var BYPASS = "bypassPermissions";

  function initModeForm() {
    var form = document.getElementById("mode-form");
    var select = form ? form.querySelector("select[name=mode]") : null;
    var confirm = document.getElementById("mode-confirm");
    if (!select) {
      return;
    }
    function sync() {
      // The confirmation only matters for bypass; without this script it is always shown.
      if (confirm) {
        confirm.hidden = select.value !== BYPASS || form.getAttribute("data-mode") === BYPASS;
      }
    }
    select.addEventListener("change", sync);
    sync();
  }

  function showMode(mode) {
    var form = document.getElementById("mode-form");
    var select = form ? form.querySelector("select[name=mode]") : null;
    var bypass = mode === BYPASS;
    if (form) {
      form.setAttribute("data-mode", mode);
      var problem = document.getElementById("mode-error");
      if (problem) {
        problem.remove();
      }
    }
    if (select) {
      select.value = mode;
      select.className = "mode mode-" + mode;
      select.dispatchEvent(new Event("change"));
    }
    document.body.classList.toggle("is-bypass", bypass);
    var head = document.getElementById("session-head");
    if (head) {
      head.classList.toggle("is-bypass", bypass);
    }
    var flag = document.getElementById("bypass-flag");
    if (flag) {
      flag.hidden = !bypass;
    }
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

    var slash = initSlash(text);

    text.addEventListener("input", grow);
    text.addEventListener("keydown", function (evt) {
      if (evt.isComposing || evt.keyCode === 229) {
        return;
      }
      if (slash.key(evt)) {
        evt.preventDefault();
        return;
      }
      if (evt.key === "Escape") {
        // In the message box Escape always means Stop, even while an approval waits
        // (stopping cancels it); the page-wide Escape would deny the card instead.
        evt.preventDefault();
        interruptTurn();
        return;
      }
      if (evt.key !== "Enter" || evt.shiftKey) {
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
        // Through the input listeners, so the box shrinks and the command list closes.
        text.dispatchEvent(new Event("input"));
        if (errorBox) {
          errorBox.textContent = "";
        }
      } else if (errorBox) {
        errorBox.textContent = responseMessage(evt.detail.xhr, "The message was not sent.");
      }
    });
  }

  // ---- slash commands: a list over the composer while the message starts with "/" ----

  function initSlash(text) {
    var box = document.getElementById("slash");
    var list = document.getElementById("slash-list");
    var empty = document.getElementById("slash-empty");
    var active = null;
    var inert = {
      key: function () {
        return false;
      },
    };
    if (!box || !list) {
      return inert;
    }

    function options() {
      return Array.prototype.slice.call(list.querySelectorAll("li[data-cmd]"));
    }

    function shown() {
      return options().filter(function (li) {
        return !li.hidden;
      });
    }

    // Only the command word itself: once a space follows, the user is writing its
    // arguments and the list would be in the way.
    function query() {
      var match = /^\/(\S*)$/.exec(text.value);
      return match ? match[1].toLowerCase() : null;
    }

    function setActive(li) {
      if (active) {
        active.classList.remove("is-active");
        active.setAttribute("aria-selected", "false");
      }
      active = li;
      if (li) {
        li.classList.add("is-active");
        li.setAttribute("aria-selected", "true");
        text.setAttribute("aria-activedescendant", li.id);
        li.scrollIntoView({ block: "nearest" });
      } else {
        text.removeAttribute("aria-activedescendant");
      }
    }

    function close() {
      box.hidden = true;
      setActive(null);
    }

    function update() {
      var q = query();
      if (q === null) {
        close();
        return;
      }
      var all = options();
      var first = null;
      all.forEach(function (li) {
        var name = li.getAttribute("data-cmd").toLowerCase();
        li.hidden = name.indexOf(q) === -1;
        if (!li.hidden && !first) {
          first = li;
        }
      });
      // Prefix matches first would reorder the list under the user's eyes; the first
      // one that starts with what was typed is simply the one picked by Enter.
      var prefixed = all.filter(function (li) {
        return !li.hidden && li.getAttribute("data-cmd").toLowerCase().indexOf(q) === 0;
      })[0];
      if (empty) {
        empty.hidden = all.length !== 0;
      }
      box.hidden = all.length !== 0 && !first;
      setActive(prefixed || first);
    }

    function choose(li) {
      text.value = "/" + li.getAttribute("data-cmd") + " ";
      close();
      text.focus();
      text.setSelectionRange(text.value.length, text.value.length);
      text.dispatchEvent(new Event("input"));
    }

    function move(step) {
      var visible = shown();
      if (!visible.length) {
        return;
      }
      var at = visible.indexOf(active);
      setActive(visible[(at + step + visible.length) % visible.length]);
    }

    text.addEventListener("input", update);
    text.addEventListener("blur", function () {
      // A click on an option lands after the blur; mousedown below keeps the focus.
      close();
    });
    list.addEventListener("mousedown", function (evt) {
      evt.preventDefault();
    });
    list.addEventListener("click", function (evt) {
      var li = evt.target.closest ? evt.target.closest("li[data-cmd]") : null;
      if (li) {
        choose(li);
      }
    });

    // New lists arrive with session_info (Claude) and commands (ACP) events.
    function setCommands(names) {
      while (list.firstChild) {
        list.removeChild(list.firstChild);
      }
      names.forEach(function (name, i) {
        var li = document.createElement("li");
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", "false");
        li.id = "slash-opt-" + (i + 1);
        li.setAttribute("data-cmd", name);
        li.textContent = "/" + name;
        list.appendChild(li);
      });
      active = null;
      if (!box.hidden) {
        update();
      } else if (empty) {
        empty.hidden = names.length !== 0;
      }
    }
    slashCommands = setCommands;

    return {
      // Handles a key in the composer while the list is open; true when it used it.
      key: function (evt) {
        if (box.hidden) {
          return false;
        }
        if (evt.key === "ArrowDown" || evt.key === "ArrowUp") {
          move(evt.key === "ArrowDown" ? 1 : -1);
          return true;
        }
        if ((evt.key === "Enter" || evt.key === "Tab") && !evt.shiftKey && active) {
          choose(active);
          return true;
        }
        if (evt.key === "Escape") {
          close();
          return true;
        }
        return false;
      },
    };
  }

  var slashCommands = null;

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
    var follow = true;
    var localPending = -1;
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
      var cards = log.querySelectorAll('.perm[data-status="pending"]');
      var count = cards.length;
      var note = document.getElementById("pending-note");
      var number = document.getElementById("pending-count");
      if (note && number) {
        number.textContent = String(count);
        note.hidden = count === 0;
      }
      var hint = document.getElementById("composer-hint");
      if (hint) {
        hint.hidden = count === 0;
      }
      // Only the oldest card answers to Enter/Escape, so only it shows the key hints.
      var marked = log.querySelectorAll(".perm.is-next");
      for (var i = 0; i < marked.length; i++) {
        marked[i].classList.remove("is-next");
      }
      if (count) {
        cards[0].classList.add("is-next");
      }
      if (localPending >= 0 && count !== localPending) {
        refreshBadge();
      }
      localPending = count;
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

    // Returns whether the request's card is on the page.
    function markDecided(data) {
      var line = parseFragment(data).querySelector("[data-pid]");
      if (!line) {
        return false;
      }
      var card = document.getElementById("perm-" + line.getAttribute("data-pid"));
      if (!card) {
        return false;
      }
      if (card.getAttribute("data-status") !== "pending") {
        return true;
      }
      var form = card.querySelector(".perm-actions");
      if (form && form.classList.contains("htmx-request")) {
        return true; // answered from this tab: the response replaces the whole card
      }
      collapseCard(card, line);
      return true;
    }

    function onPermissionRequest(data) {
      if (!document.hidden) {
        return;
      }
      var card = parseFragment(data).querySelector(".perm");
      if (!card) {
        return;
      }
      var tool = card.querySelector(".tool");
      var title = card.querySelector(".perm-title");
      notify(
        "Approval needed: " + (tool ? tool.textContent : "a tool"),
        (title ? title.textContent + "\n" : "") + baseTitle,
        "angelia-" + card.getAttribute("data-pid")
      );
    }

    function onQueue(data) {
      var event = parseFragment(data).querySelector("[data-queue-event]");
      if (!event) {
        return;
      }
      var outcome = event.getAttribute("data-queue-event");
      var text = (event.querySelector(".queue-text") || event).textContent;
      // The manager sends queued messages oldest first, so the first match is the one.
      var waiting = log.querySelectorAll('.msg.user[data-queue="waiting"]');
      for (var i = 0; i < waiting.length; i++) {
        var bubble = waiting[i].querySelector(".bubble");
        if (bubble && bubble.textContent === text) {
          setQueued(waiting[i], outcome);
          return;
        }
      }
    }

    function setQueued(message, outcome) {
      message.setAttribute("data-queue", outcome);
      message.classList.remove("queue-waiting");
      message.classList.add("queue-" + outcome);
      var label = message.querySelector(".queue-label");
      if (!label) {
        return;
      }
      if (outcome === "sent") {
        label.remove();
      } else {
        label.textContent = label.getAttribute("data-dropped") || "not sent";
      }
    }

    // A page of earlier events may hold queued messages whose outcome the server
    // rendered on a later page; replaying the queue events in order settles them.
    function settleQueues() {
      var nodes = log.querySelectorAll('.msg.user[data-queue], [data-queue-event]:not([data-settled])');
      var waiting = [];
      for (var i = 0; i < nodes.length; i++) {
        var node = nodes[i];
        if (node.hasAttribute("data-queue")) {
          if (node.getAttribute("data-queue") === "waiting") {
            waiting.push(node);
          }
          continue;
        }
        var text = (node.querySelector(".queue-text") || node).textContent;
        for (var j = 0; j < waiting.length; j++) {
          var bubble = waiting[j].querySelector(".bubble");
          if (bubble && bubble.textContent === text) {
            setQueued(waiting[j], node.getAttribute("data-queue-event"));
            node.setAttribute("data-settled", "");
            waiting.splice(j, 1);
            break;
          }
        }
      }
    }

    function onModeChanged(data) {
      var el = parseFragment(data).querySelector("[data-mode]");
      if (el) {
        showMode(el.getAttribute("data-mode"));
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
        label.textContent = STATE_LABELS[state] || state;
      }
    }

    function onToolResult(data) {
      var el = parseFragment(data).querySelector("[data-tcid]");
      if (el) {
        var failed = el.classList.contains("is-error");
        setToolState(el.getAttribute("data-tcid"), failed ? "failed" : "done");
      }
    }

    function onTurnEnd(data) {
      var running = log.querySelectorAll('.tool-call[data-state="running"]');
      for (var i = 0; i < running.length; i++) {
        setState(running[i], "stopped");
      }
      // The header's totals grow by the turn's share, as the server adds it up.
      var end = parseFragment(data).querySelector("[data-kind]");
      if (!end) {
        return;
      }
      var cost = document.getElementById("session-cost");
      var turnCost = parseFloat(end.getAttribute("data-cost"));
      if (cost && !isNaN(turnCost)) {
        var total = (parseFloat(cost.getAttribute("data-usd")) || 0) + turnCost;
        cost.setAttribute("data-usd", String(total));
        cost.textContent = formatCost(total);
      }
      var tokens = document.getElementById("session-tokens");
      if (tokens) {
        var tin = (parseInt(tokens.getAttribute("data-in"), 10) || 0) +
          (parseInt(end.getAttribute("data-tokens-in"), 10) || 0);
        var tout = (parseInt(tokens.getAttribute("data-out"), 10) || 0) +
          (parseInt(end.getAttribute("data-tokens-out"), 10) || 0);
        tokens.setAttribute("data-in", String(tin));
        tokens.setAttribute("data-out", String(tout));
        tokens.querySelector(".tokens-text").textContent =
          formatTokens(tin) + " in / " + formatTokens(tout) + " out";
        tokens.hidden = !(tin || tout);
      }
    }

    // Each plan replaces the one before it: older ones fold into a one-line summary.
    function settlePlans(keepLast) {
      var plans = log.querySelectorAll("details.plan:not(.is-old)");
      var upTo = keepLast ? plans.length - 1 : plans.length;
      for (var i = 0; i < upTo; i++) {
        plans[i].open = false;
        plans[i].classList.add("is-old");
        var label = plans[i].querySelector(".plan-label");
        if (label) {
          label.textContent = "Earlier plan";
        }
      }
    }

    function commandsOf(el) {
      var spans = el.querySelectorAll("[data-cmd]");
      var names = [];
      for (var i = 0; i < spans.length; i++) {
        names.push(spans[i].getAttribute("data-cmd"));
      }
      return names;
    }

    function onCommands(data) {
      var el = parseFragment(data).querySelector("[data-kind]");
      if (el && slashCommands) {
        slashCommands(commandsOf(el));
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
        var shown = auth.querySelector(".auth-source");
        shown.textContent = el.getAttribute("data-api-key-label") || source;
        shown.title = "apiKeySource reported by the CLI: " + source;
        auth.hidden = false;
      }
      // Claude lists its slash commands here; an empty list leaves the known ones.
      var names = commandsOf(el);
      if (names.length && slashCommands) {
        slashCommands(names);
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
          // The request's card collapses to the line saying who decided what; a second
          // line would say it again. Without the card (an earlier page) the line stays.
          if (markDecided(msg.data)) {
            evt.preventDefault();
            afterNewContent();
          }
          return;
        case "permission_request":
          onPermissionRequest(msg.data);
          return;
        case "queued_sent":
        case "queued_dropped":
          evt.preventDefault();
          onQueue(msg.data);
          return;
        case "mode_changed":
          onModeChanged(msg.data);
          return;
        case "tool_result":
          onToolResult(msg.data);
          return;
        case "turn_end":
          onTurnEnd(msg.data);
          return;
        case "plan":
          settlePlans(false);
          return;
        case "commands":
          onCommands(msg.data);
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
      tickWaits();
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

    // A decision made in this tab swaps the card; the counts follow.
    document.body.addEventListener("htmx:afterSwap", function (evt) {
      var target = evt.detail.target;
      if (target && target.classList && target.classList.contains("earlier")) {
        settleQueues();
        settlePlans(true);
      }
      updatePending();
    });

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
    initBadge();
    initNotifyButton();
    initShortcuts();
    initModeForm();
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
