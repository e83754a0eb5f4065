// The page around the content: the sidebar and chat header folding on narrow screens,
// the chat header's menu, copy buttons on code blocks, the approvals badge with the count
// in the tab title (its poll also keeps titles and status dots in step), and the button
// that asks for desktop notifications.
(function () {
  "use strict";

  var A = window.Angelia;

  // ---- narrow screens: the sidebar folds into a menu behind a real button --------

  var NARROW = "(max-width: 720px)";
  // The chat header keeps its one row down to a phone's width.
  var PHONE = "(max-width: 480px)";

  // A panel that folds behind its button on narrow screens and is always open on wide
  // ones. The CSS hides the buttons and folds panels only when <html> has the "js"
  // class, so without this script everything simply stays open.
  function foldOnNarrow(toggle, panel, startOpen, query) {
    var narrow = window.matchMedia(query || NARROW);
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
      foldOnNarrow(headToggle, more, !!more.querySelector(PROBLEM), PHONE);
    }
    initHeadMenu();
  }

  // A form that came back with a problem to fix starts open.
  var PROBLEM = "[role=alert]:not([hidden]), details[open]";

  // The header's menu (rename, export, fork, delete): a button with aria-expanded that
  // drops the panel down; Escape or a click elsewhere closes it.
  function initHeadMenu() {
    var button = document.getElementById("session-menu-btn");
    var panel = document.getElementById("session-menu");
    if (!button || !panel) {
      return;
    }
    function setOpen(open) {
      button.setAttribute("aria-expanded", open ? "true" : "false");
      panel.classList.toggle("is-closed", !open);
    }
    setOpen(!!panel.querySelector(PROBLEM));
    button.addEventListener("click", function () {
      setOpen(button.getAttribute("aria-expanded") !== "true");
    });
    button.parentNode.addEventListener("keydown", function (evt) {
      if (evt.key === "Escape" && button.getAttribute("aria-expanded") === "true") {
        evt.preventDefault();
        evt.stopPropagation();
        setOpen(false);
        button.focus();
      }
    });
    document.addEventListener("click", function (evt) {
      if (!button.parentNode.contains(evt.target)) {
        setOpen(false);
      }
    });
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

  // ---- pending approvals: badge and tab title ---------------------------------------

  var badgeCount = -1;

  function readBadge() {
    var el = document.querySelector("#pending-badge [data-count]");
    return el ? parseInt(el.getAttribute("data-count"), 10) || 0 : 0;
  }

  function showBadgeCount(count) {
    document.title = (count ? "(" + count + ") " : "") + A.baseTitle;
    var grew = badgeCount >= 0 && count > badgeCount;
    badgeCount = count;
    return grew;
  }

  // ---- titles and status dots, from the badge poll ----------------------------------

  function showStatus(el, status, label) {
    if (el.classList.contains("dot")) {
      // Only what differs is written: the poll comes every few seconds.
      if (el.className !== "dot dot-" + status) {
        el.className = "dot dot-" + status;
      }
      if (el.title !== label) {
        el.title = label;
      }
      var said = el.querySelector(".visually-hidden");
      if (said && said.textContent !== label) {
        said.textContent = label;
      }
      return;
    }
    var badge = el.classList.contains("status") ? el : el.querySelector(".status");
    if (badge && badge.getAttribute("data-status") !== status) {
      badge.className = "status status-" + status;
      badge.setAttribute("data-status", status);
      badge.textContent = label;
    }
  }

  // The poll's answer names the sessions this page shows with their titles and statuses;
  // every element marked data-title-of / data-status-of follows them.
  function applyStates(slot) {
    var states = slot.querySelectorAll("[data-session-state]");
    for (var i = 0; i < states.length; i++) {
      var sid = states[i].getAttribute("data-sid");
      var title = states[i].getAttribute("data-title");
      var status = states[i].getAttribute("data-status");
      var label = states[i].getAttribute("data-label");
      var titled = document.querySelectorAll('[data-title-of="' + CSS.escape(sid) + '"]');
      for (var t = 0; t < titled.length; t++) {
        if (titled[t].textContent !== title) {
          titled[t].textContent = title;
          if (titled[t].tagName === "H1") {
            titled[t].title = title;
            var prefix = titled[t].getAttribute("data-tab-prefix") || "";
            A.baseTitle = prefix + title + " · " + appName();
          }
        }
      }
      var marked = document.querySelectorAll('[data-status-of="' + CSS.escape(sid) + '"]');
      for (var m = 0; m < marked.length; m++) {
        showStatus(marked[m], status, label);
      }
      var rows = document.querySelectorAll('[data-row-of="' + CSS.escape(sid) + '"]');
      for (var r = 0; r < rows.length; r++) {
        showRowStatus(rows[r], states[i]);
      }
    }
  }

  // A sessions list row: the count of waiting approvals, or the status as lists show it.
  function showRowStatus(cell, state) {
    var pending = state.getAttribute("data-pending") || "0";
    var shown = state.getAttribute("data-shown") || state.getAttribute("data-status");
    if (cell.getAttribute("data-pending") === pending && cell.getAttribute("data-shown") === shown) {
      return;
    }
    cell.setAttribute("data-pending", pending);
    cell.setAttribute("data-shown", shown);
    var shownAs = document.createElement("span");
    if (pending !== "0") {
      shownAs.className = "history-pending";
      var dot = document.createElement("span");
      dot.className = "dot dot-waiting";
      dot.setAttribute("aria-hidden", "true");
      shownAs.appendChild(dot);
      shownAs.appendChild(document.createTextNode(pending + " waiting for approval"));
    } else {
      shownAs.className = "status status-" + shown;
      shownAs.setAttribute("data-status", shown);
      shownAs.textContent = state.getAttribute("data-shown-label") || shown;
    }
    cell.replaceChildren(shownAs);
  }

  function appName() {
    var brand = document.querySelector(".brand-name");
    return brand ? brand.textContent.trim() : "Angelia";
  }

  // The poll's answer is applied in place rather than swapped in: a swap would take the
  // focus off the badge's link every 3 s. The link stays and only its count changes.
  function showBadge(slot, fresh) {
    var old = slot.querySelector("[data-count]");
    var now = fresh.querySelector("[data-count]");
    if (now && old && old.tagName === now.tagName) {
      if (old.getAttribute("data-count") !== now.getAttribute("data-count")) {
        old.setAttribute("data-count", now.getAttribute("data-count"));
        old.replaceChildren.apply(old, Array.prototype.slice.call(now.childNodes));
      }
    } else if (now) {
      var hadFocus = old && old.contains(document.activeElement);
      if (old) {
        old.replaceWith(now);
      } else {
        slot.prepend(now);
      }
      if (hadFocus) {
        A.focusOn(now.matches("a[href]") ? now : document.querySelector(".brand-name"));
      }
    }
    // The hidden facts after the badge: nothing to focus in them, nothing said.
    var facts = slot.querySelectorAll("[data-session-state], [data-pending-request]");
    for (var i = 0; i < facts.length; i++) {
      facts[i].remove();
    }
    slot.append.apply(
      slot,
      Array.prototype.slice.call(fresh.querySelectorAll("[data-session-state], [data-pending-request]"))
    );
  }

  // ---- approvals waiting in other sessions, said once each ----------------------------

  var heard = null;

  // "beta needs approval: Bash", for each request not seen before on this page. The
  // session this page shows says its own (its transcript is a live log) and the board its
  // cards', so they are left out.
  function sayNewRequests(slot) {
    var own = slot.getAttribute("data-session") || "";
    var onBoard = !!document.getElementById("board-said");
    var lines = [];
    var seen = {};
    var asks = slot.querySelectorAll("[data-pending-request]");
    for (var i = 0; i < asks.length; i++) {
      var pid = asks[i].getAttribute("data-pid");
      seen[pid] = true;
      if (!heard || heard[pid] || onBoard || asks[i].getAttribute("data-sid") === own) {
        continue;
      }
      var title = asks[i].getAttribute("data-title");
      var kind = asks[i].getAttribute("data-kind");
      lines.push(
        kind === "question"
          ? title + " asks a question"
          : title + " needs approval: " + (kind === "plan" ? "plan" : asks[i].getAttribute("data-tool"))
      );
    }
    // Kept rather than replaced, so one that drops out of the newest few and comes back
    // is not said twice.
    heard = heard || {};
    Object.keys(seen).forEach(function (pid) {
      heard[pid] = true;
    });
    if (lines.length) {
      A.say(document.getElementById("pending-said"), lines.join("; "));
    }
  }

  function initBadge() {
    showBadgeCount(readBadge());
    var slot = document.getElementById("pending-badge");
    if (slot) {
      // What the page was drawn with is known already: only later requests are new.
      sayNewRequests(slot);
    }
    document.body.addEventListener("htmx:beforeSwap", function (evt) {
      if (!slot || evt.detail.target !== slot) {
        return;
      }
      evt.detail.shouldSwap = false;
      if (!evt.detail.xhr || evt.detail.xhr.status !== 200) {
        return;
      }
      showBadge(slot, A.parseFragment(evt.detail.xhr.responseText));
      applyStates(slot);
      sayNewRequests(slot);
      var count = readBadge();
      var grew = showBadgeCount(count);
      // The session page notifies from the request itself, with its details.
      if (grew && document.hidden && !document.getElementById("transcript")) {
        A.notify(
          "Angelia: approval needed",
          count + (count === 1 ? " request is" : " requests are") + " waiting for you",
          "angelia-pending"
        );
      }
    });
  }

  function initNotifyButton() {
    var button = document.getElementById("notify-btn");
    if (button && A.needsHomeScreen && A.needsHomeScreen()) {
      A.showHomeScreenHint(button);
      return;
    }
    if (!button || !("Notification" in window)) {
      return;
    }
    var said = document.getElementById("pending-said");
    // Shown while permission was never asked, or this browser has no push subscription.
    function update() {
      button.hidden = Notification.permission !== "default";
      if (A.pushNeeded) {
        A.pushNeeded().then(function (needed) {
          button.hidden = button.hidden && !needed;
        });
      }
    }
    function subscribed(why) {
      A.say(said, why || "Notifications are on for this browser.");
      // A refusal stays readable on the button, which stays for another try.
      button.title = why || button.title;
      update();
    }
    update();
    // Permission can only be asked for from a user's click; a push subscription follows
    // from the same click once it is granted.
    button.addEventListener("click", function () {
      var done = false;
      function granted() {
        if (done) {
          return;
        }
        done = true;
        if (Notification.permission === "granted" && A.pushSupported && A.pushSupported()) {
          A.subscribePush().then(subscribed);
        } else {
          update();
        }
      }
      var asked = Notification.requestPermission(granted);
      if (asked && asked.then) {
        asked.then(granted);
      }
    });
  }

  A.initMenu = initMenu;
  A.initCopyButtons = initCopyButtons;
  A.initBadge = initBadge;
  A.initNotifyButton = initNotifyButton;
})();
