// A pick list over the message box, shared by the slash commands (composer.js) and the
// @ file mentions (mentions.js): which option is active, ArrowUp/ArrowDown to move,
// Enter or Tab to take it, Escape to close, a click to take one, the aria wiring.
(function () {
  "use strict";

  var A = window.Angelia;

  // box: the element shown and hidden; list: the role=listbox <ul>; choose(li) takes an
  // option. The caller fills the list and opens it; this keeps the keys and the active one.
  A.composerMenu = function (text, box, list, choose) {
    var active = null;

    function shown() {
      return Array.prototype.slice.call(list.querySelectorAll("li[role=option]")).filter(
        function (li) {
          return !li.hidden;
        }
      );
    }

    function setActive(li) {
      if (active) {
        active.classList.remove("is-active");
        active.setAttribute("aria-selected", "false");
        // The other menu may own the attribute now; only this one's option is dropped.
        if (text.getAttribute("aria-activedescendant") === active.id) {
          text.removeAttribute("aria-activedescendant");
        }
      }
      active = li;
      if (li) {
        li.classList.add("is-active");
        li.setAttribute("aria-selected", "true");
        text.setAttribute("aria-controls", list.id);
        text.setAttribute("aria-activedescendant", li.id);
        li.scrollIntoView({ block: "nearest" });
      }
    }

    function close() {
      box.hidden = true;
      setActive(null);
    }

    function open() {
      box.hidden = false;
      text.setAttribute("aria-controls", list.id);
    }

    function move(step) {
      var visible = shown();
      if (!visible.length) {
        return;
      }
      var at = visible.indexOf(active);
      setActive(visible[(at + step + visible.length) % visible.length]);
    }

    text.addEventListener("blur", function () {
      // A click on an option lands after the blur; mousedown below keeps the focus.
      close();
    });
    list.addEventListener("mousedown", function (evt) {
      evt.preventDefault();
    });
    list.addEventListener("click", function (evt) {
      var li = evt.target.closest ? evt.target.closest("li[role=option]") : null;
      if (li) {
        choose(li);
      }
    });

    return {
      open: open,
      close: close,
      setActive: setActive,
      // Forgets the active option (the list was refilled).
      reset: function () {
        active = null;
      },
      isOpen: function () {
        return !box.hidden;
      },
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
  };

  // One option: the name, and the description beside it when there is one; both as text.
  A.menuOption = function (id, name, description) {
    var li = document.createElement("li");
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", "false");
    li.id = id;
    var label = document.createElement("span");
    label.className = "menu-name";
    label.textContent = name;
    li.appendChild(label);
    if (description) {
      li.appendChild(document.createTextNode(" "));
      var desc = document.createElement("span");
      desc.className = "menu-desc";
      desc.textContent = description;
      li.appendChild(desc);
    }
    return li;
  };
})();
