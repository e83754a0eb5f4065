// The message box: Enter sends, Escape stops, the list of slash commands while the
// message starts with "/", and the permission mode selector in the chat header.
(function () {
  "use strict";

  var A = window.Angelia;

  // Replaces the list of slash commands: set once the composer has one, and called with
  // the lists that arrive over SSE (items.js).
  A.slashCommands = null;

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
        A.interruptTurn();
        return;
      }
      if (evt.key !== "Enter" || evt.shiftKey) {
        return;
      }
      evt.preventDefault();
      // Attached images (attach.js) are a message even without text.
      if (text.value.trim() === "" && !A.attachedCount()) {
        return;
      }
      if (form.requestSubmit) {
        form.requestSubmit();
      } else {
        htmx.trigger(form, "submit");
      }
    });

    // After a message went: an empty box again (attach.js calls it too), and the view
    // at the end, where the message and its answer show.
    function sent() {
      A.followLatest();
      text.value = "";
      // Through the input listeners, so the box shrinks and the command list closes.
      text.dispatchEvent(new Event("input"));
      if (errorBox) {
        errorBox.textContent = "";
      }
    }
    A.composerSent = sent;

    form.addEventListener("htmx:confirm", function (evt) {
      // An empty message is never sent (the Stop button shares this form).
      if (evt.detail.elt === form && text.value.trim() === "") {
        evt.preventDefault();
      } else if (evt.detail.elt === form) {
        // Whatever the reader was looking at, what they send shows at the end.
        A.followLatest();
      }
    });

    form.addEventListener("htmx:afterRequest", function (evt) {
      if (evt.detail.elt !== form) {
        if (errorBox && !evt.detail.successful) {
          errorBox.textContent = A.responseMessage(evt.detail.xhr, "Could not stop the agent.");
        }
        return;
      }
      if (evt.detail.successful) {
        sent();
      } else if (errorBox) {
        errorBox.textContent = A.responseMessage(evt.detail.xhr, "The message was not sent.");
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
    A.slashCommands = setCommands;

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

  A.initModeForm = initModeForm;
  A.showMode = showMode;
  A.initComposer = initComposer;
})();
