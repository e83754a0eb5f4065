// Permission cards: the time each has waited, Enter (tool cards only) and Escape as
// answers (Escape on the card itself or with nothing focused, never from a text field),
// focus moving on to the next card, a refused answer swapped in with its notice, and a
// pending card collapsing when a decision arrives over SSE.
(function () {
  "use strict";

  var A = window.Angelia;

  // ---- permission cards: time waiting, keyboard answers ----------------------------

  var TYPING = "input, textarea, select, [contenteditable]:not([contenteditable='false'])";
  // Where Escape belongs to the field itself; on a card's buttons, choices and text
  // blocks it denies, as the card's key hint says.
  var TEXT_ENTRY =
    "input:not([type='radio']):not([type='checkbox']), textarea, select, " +
    "[contenteditable]:not([contenteditable='false'])";
  // Focus on any of these keeps Enter and Escape to themselves (a focused output block
  // scrolls with the keyboard; Enter there must not approve anything).
  var CONTROLS = "a[href], button, summary, [role='button'], pre, [role='region']";
  var WAIT_TICK_MS = 1000;

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
      var text = isNaN(since) ? "" : waitText(now - since);
      // Hidden from assistive tech (the card says when it was asked instead); written
      // only when the text differs, as every live update here is.
      if (text && nodes[i].textContent !== text) {
        nodes[i].textContent = text;
      }
    }
  }

  // Questions and plans (data-prompt) need the user's choice; Enter answers tool cards only.
  function isToolCard(card) {
    return (card.getAttribute("data-prompt") || "tool") === "tool";
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
      // A question or a plan is answered by a click or a focused button, never by Enter
      // in one of its fields (which would send the form with its first button).
      if (own && evt.key === "Enter" && !isToolCard(own) && target.matches("input")) {
        evt.preventDefault();
        return;
      }
      // Focus anywhere in a card but a text field: Escape denies that card.
      if (own && evt.key === "Escape" && !target.closest(TEXT_ENTRY)) {
        evt.preventDefault();
        answer(own, "deny");
        return;
      }
      // Escape never stops the turn (that is Ctrl+., keys.js): it is pressed by accident
      // too easily. In the message box it goes to the waiting card (composer.js).
      var typing = target.closest(TYPING);
      var card = own || pendingCards()[0];
      if (!card) {
        return;
      }
      if (typing || (target !== own && target.closest(CONTROLS))) {
        return;
      }
      if (evt.key === "Enter" && !isToolCard(card)) {
        return; // only a tool call is allowed with Enter
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

    // A refused answer (422: a question left unanswered…) comes back as the card itself,
    // still pending, with the notice and every field as the user left it.
    document.body.addEventListener("htmx:beforeSwap", function (evt) {
      var target = evt.detail.target;
      if (evt.detail.xhr.status === 422 && target && target.classList.contains("perm")) {
        evt.detail.shouldSwap = true;
        evt.detail.isError = false;
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
      box.textContent = A.responseMessage(evt.detail.xhr, "The answer was not recorded.");
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

  // Returns whether the request's card is on the page.
  function markDecided(data) {
    var line = A.parseFragment(data).querySelector("[data-pid]");
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

  // A request that arrives while the tab is hidden also asks for a desktop notification.
  function onPermissionRequest(data) {
    if (!document.hidden) {
      return;
    }
    var card = A.parseFragment(data).querySelector(".perm");
    if (!card) {
      return;
    }
    var tool = card.querySelector(".tool");
    var title = card.querySelector(".perm-title");
    var badge = card.querySelector(".perm-badge");
    A.notify(
      tool || !badge ? "Approval needed: " + (tool ? tool.textContent : "a tool") : badge.textContent,
      (title ? title.textContent + "\n" : "") + A.baseTitle,
      "angelia-" + card.getAttribute("data-pid")
    );
  }

  A.tickWaits = tickWaits;
  A.initShortcuts = initShortcuts;
  A.markDecided = markDecided;
  A.onPermissionRequest = onPermissionRequest;
})();
