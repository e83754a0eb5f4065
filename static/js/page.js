// The page around the content: the sidebar and chat header folding on narrow screens,
// copy buttons on code blocks, the approvals badge with the count in the tab title, and
// the button that asks for desktop notifications.
(function () {
  "use strict";

  var A = window.Angelia;

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
      foldOnNarrow(headToggle, more, !!more.querySelector("[role=alert]:not([hidden]), details[open]"));
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

  A.initMenu = initMenu;
  A.initCopyButtons = initCopyButtons;
  A.initBadge = initBadge;
  A.initNotifyButton = initNotifyButton;
})();
