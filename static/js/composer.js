// The message box: Enter sends, Escape goes to a request waiting for an answer, the list
// of slash commands while the message starts with "/" (its keys and list: menu.js), and
// the permission mode selector in the chat header, switched in place.
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
    var hint = document.getElementById("mode-hint");
    function sync() {
      // The confirmation only matters for bypass; without this script it is always shown.
      if (confirm) {
        confirm.hidden = select.value !== BYPASS || form.getAttribute("data-mode") === BYPASS;
      }
      // The options show the mode's name alone; what the chosen one means follows it.
      var chosen = select.options[select.selectedIndex];
      var help = chosen ? chosen.title : "";
      select.title = "Permission mode" + (help ? ": " + help : "");
      if (hint) {
        hint.textContent = help;
      }
    }
    select.addEventListener("change", sync);
    sync();
    form.addEventListener("submit", function (evt) {
      var api = form.getAttribute("data-api");
      if (!api || !window.fetch) {
        return; // the plain form post, which comes back to the page
      }
      // In place: a reload would lose the reader's place and send focus to the top.
      evt.preventDefault();
      if (form.getAttribute("aria-busy") === "true") {
        return;
      }
      var box = form.querySelector("input[name=confirm]");
      if (select.value === form.getAttribute("data-mode")) {
        showModeProblem(form, "");
        select.focus();
        return; // already the mode in use
      }
      // The server would refuse it too; said here, the box to tick gets focus at once.
      if (select.value === BYPASS && box && !box.checked) {
        showModeProblem(
          form,
          "Tick the box to confirm: bypassPermissions runs every tool without asking."
        );
        box.focus();
        return;
      }
      switchMode(form, select, api);
    });
  }

  function switchMode(form, select, api) {
    var wanted = select.value;
    var box = form.querySelector("input[name=confirm]");
    form.setAttribute("aria-busy", "true");
    showModeProblem(form, "");
    A.apiRequest("POST", api, { mode: wanted, confirm: !!(box && box.checked) })
      .then(
        function (response) {
          if (response.ok) {
            showMode(wanted);
            if (box) {
              box.checked = false;
            }
            select.focus();
            return null;
          }
          // The attempt stays chosen, as after the plain post, so a missing
          // confirmation is one tick and Switch away.
          return A.apiProblem(response, "The mode was not switched").then(function (text) {
            showModeProblem(form, text);
          });
        },
        function () {
          showModeProblem(form, "The mode was not switched: the server did not answer.");
        }
      )
      .then(function () {
        form.removeAttribute("aria-busy");
      });
  }

  // The refusal under the picker, where the plain post's page shows it.
  function showModeProblem(form, text) {
    var problem = document.getElementById("mode-error");
    if (!text) {
      if (problem) {
        problem.remove();
      }
      return;
    }
    if (!problem) {
      problem = document.createElement("p");
      problem.className = "form-error";
      problem.id = "mode-error";
      problem.setAttribute("role", "alert");
      (form.querySelector(".head-pop") || form).appendChild(problem);
    }
    problem.textContent = text;
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
    // A finished session's composer is off (its worktree is gone): nothing to wire.
    if (!form || !text || form.hasAttribute("data-closed")) {
      return;
    }

    function grow() {
      // Setting style through the CSSOM is allowed by the CSP; inline style attributes
      // in the markup are not.
      text.style.height = "auto";
      text.style.height = text.scrollHeight + 2 + "px";
    }

    // The slash commands, and the @ file mentions (mentions.js) when the page has them.
    var menus = [initSlash(text)];
    if (A.initMentions) {
      menus.push(A.initMentions(text));
    }

    text.addEventListener("input", grow);
    text.addEventListener("keydown", function (evt) {
      if (evt.isComposing || evt.keyCode === 229) {
        return;
      }
      if (menus.some(function (menu) { return menu.key(evt); })) {
        evt.preventDefault();
        return;
      }
      if (evt.key === "Escape") {
        // Focus stays here when a card arrives, so this Escape is often meant for the
        // card: it goes there, and neither stops the turn nor denies anything (a second
        // Escape on the card denies it). Stopping is Ctrl+. or the Stop button.
        if (A.goToOldestCard()) {
          evt.preventDefault();
        }
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
    if (!box || !list) {
      return { key: function () { return false; } };
    }
    // Descriptions by name: Claude Code describes its commands once, at start, and then
    // only names them with each turn.
    var described = {};
    options().forEach(function (li) {
      var desc = li.querySelector(".menu-desc");
      described[li.getAttribute("data-cmd")] = desc ? desc.textContent : "";
    });
    var menu = A.composerMenu(text, box, list, choose);

    function options() {
      return Array.prototype.slice.call(list.querySelectorAll("li[data-cmd]"));
    }

    // Only the command word itself: once a space follows, the user is writing its
    // arguments and the list would be in the way.
    function query() {
      var match = /^\/(\S*)$/.exec(text.value);
      return match ? match[1].toLowerCase() : null;
    }

    function update() {
      var q = query();
      if (q === null) {
        menu.close();
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
      if (all.length !== 0 && !first) {
        menu.close();
        return;
      }
      menu.open();
      menu.setActive(prefixed || first);
    }

    function choose(li) {
      text.value = "/" + li.getAttribute("data-cmd") + " ";
      menu.close();
      text.focus();
      text.setSelectionRange(text.value.length, text.value.length);
      text.dispatchEvent(new Event("input"));
    }

    text.addEventListener("input", update);

    // New lists arrive with session_info (Claude: names) and commands (described) events;
    // each entry is {name, description}, description null when the event gave none.
    function setCommands(entries) {
      while (list.firstChild) {
        list.removeChild(list.firstChild);
      }
      entries.forEach(function (entry, i) {
        if (entry.description !== null) {
          described[entry.name] = entry.description;
        }
        var li = A.menuOption("slash-opt-" + (i + 1), "/" + entry.name, described[entry.name]);
        li.setAttribute("data-cmd", entry.name);
        list.appendChild(li);
      });
      menu.reset();
      if (menu.isOpen()) {
        update();
      } else if (empty) {
        empty.hidden = entries.length !== 0;
      }
    }
    A.slashCommands = setCommands;

    return menu;
  }

  A.initModeForm = initModeForm;
  A.showMode = showMode;
  A.initComposer = initComposer;
})();
