// @ file mentions in the message box: while the word at the caret starts with "@", a list
// of the session folder's files matching the rest of the word (characters in order, from
// /api/sessions/{id}/files); picking one puts "@<path> " in the word's place. The agent
// gets the path in the text (Claude Code reads the file itself; ACP agents that take
// embedded context also get its content). Keys and list: menu.js.
(function () {
  "use strict";

  var A = window.Angelia;
  // Fewer requests while a word is typed quickly; short enough not to be noticed.
  var DEBOUNCE_MS = 60;
  // While the folder's first listing runs, the same word is asked again this often.
  var LISTING_POLL_MS = 400;

  A.initMentions = function (text) {
    var box = document.getElementById("mentions");
    var list = document.getElementById("mentions-list");
    var empty = document.getElementById("mentions-empty");
    var more = document.getElementById("mentions-more");
    var inert = {
      key: function () {
        return false;
      },
    };
    if (!box || !list) {
      return inert;
    }
    var url = box.getAttribute("data-files-url");
    var menu = A.composerMenu(text, box, list, choose);
    var timer = null;
    // Answers can arrive out of order; only the newest request's is shown.
    var asked = 0;

    // The "@word" that ends at the caret, or null: "@" at the start or after a space.
    function word() {
      var caret = text.selectionStart;
      if (caret !== text.selectionEnd) {
        return null;
      }
      var before = text.value.slice(0, caret);
      var match = /(^|\s)@(\S*)$/.exec(before);
      if (!match) {
        return null;
      }
      return { start: caret - match[2].length - 1, end: caret, query: match[2] };
    }

    function update() {
      var at = word();
      window.clearTimeout(timer);
      if (at === null) {
        asked += 1;
        menu.close();
        return;
      }
      timer = window.setTimeout(function () {
        ask(at.query);
      }, DEBOUNCE_MS);
    }

    function ask(query) {
      var mine = (asked += 1);
      A.apiRequest("GET", url + "?q=" + encodeURIComponent(query)).then(function (response) {
        if (!response.ok) {
          return A.apiProblem(response, "Could not list the files.").then(function (problem) {
            if (mine === asked) {
              show([], problem);
            }
          });
        }
        return response.json().then(function (data) {
          var at = word();
          if (mine !== asked || at === null) {
            return;
          }
          show(data.files, "No file matches.", data.partial);
          if (data.partial && at.query === query) {
            // Only the files found so far: ask again until the listing is whole.
            timer = window.setTimeout(function () {
              ask(query);
            }, LISTING_POLL_MS);
          }
        });
      }, function () {
        if (mine === asked) {
          show([], "Could not list the files: the server did not answer.");
        }
      });
    }

    function show(paths, none, partial) {
      while (list.firstChild) {
        list.removeChild(list.firstChild);
      }
      menu.reset();
      paths.forEach(function (path, i) {
        var li = A.menuOption("mention-opt-" + (i + 1), path, "");
        li.setAttribute("data-path", path);
        li.title = path;
        list.appendChild(li);
      });
      empty.textContent = none;
      empty.hidden = paths.length !== 0 || partial === true;
      if (more) {
        more.hidden = partial !== true;
      }
      menu.open();
      menu.setActive(list.firstChild);
    }

    function choose(li) {
      var at = word();
      menu.close();
      if (at === null) {
        return;
      }
      var inserted = "@" + li.getAttribute("data-path") + " ";
      text.value = text.value.slice(0, at.start) + inserted + text.value.slice(at.end);
      var caret = at.start + inserted.length;
      text.focus();
      text.setSelectionRange(caret, caret);
      text.dispatchEvent(new Event("input"));
    }

    text.addEventListener("input", update);
    // Moving the caret into or out of an @ word opens or closes the list too.
    text.addEventListener("click", update);

    return menu;
  };
})();
