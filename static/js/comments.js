// Review comments on the Changes tab (templates/_review_comments.html lists them). Every
// diff line that carries data-path, data-line and data-side gets a small "+" button; it
// opens a form under the line, the comment is posted to the JSON API and shown under its
// line, and the list below the diffs is fetched again from the server (one rendering of
// it, the template's) so its count and its Send button stay right. Sending is that
// list's plain form.
(function () {
  "use strict";

  var A = window.Angelia;

  var STATE_TEXT = { open: "not sent yet", sent: "sent · line unchanged", answered: "changed since" };

  function lineKey(path, side, line) {
    return side + ":" + line + ":" + path;
  }

  function describe(path, line, side) {
    return "Comment on " + path + " line " + line + (side === "old" ? " (removed)" : "");
  }

  // The cell or element a line's attributes are on, the row under which its comments go.
  function rowOf(carrier) {
    return carrier.closest("tr") || carrier;
  }

  // The box under a line that holds its comments and its form, made on first use.
  function boxFor(carrier) {
    var row = rowOf(carrier);
    var key = carrier.getAttribute("data-review-key");
    var next = row.nextElementSibling;
    while (next && next.classList.contains("review-under")) {
      if (next.getAttribute("data-review-key") === key) {
        return next.querySelector(".review-box");
      }
      next = next.nextElementSibling;
    }
    var holder;
    var box = document.createElement("div");
    box.className = "review-box";
    if (row.tagName === "TR") {
      holder = document.createElement("tr");
      var cell = document.createElement("td");
      var span = 0;
      for (var i = 0; i < row.cells.length; i++) {
        span += row.cells[i].colSpan || 1;
      }
      cell.colSpan = span || 1;
      cell.appendChild(box);
      holder.appendChild(cell);
    } else {
      holder = document.createElement("div");
      holder.appendChild(box);
    }
    holder.className = "review-under";
    holder.setAttribute("data-review-key", key);
    // After this line's earlier boxes, if another side of the same row has one.
    var after = row;
    while (after.nextElementSibling && after.nextElementSibling.classList.contains("review-under")) {
      after = after.nextElementSibling;
    }
    after.insertAdjacentElement("afterend", holder);
    return box;
  }

  function showComment(carrier, c) {
    var box = boxFor(carrier);
    var note = document.createElement("div");
    var state = c.status === "open" ? "open" : c.answered ? "answered" : "sent";
    note.className = "review-note review-" + state;
    note.setAttribute("data-comment", c.id);
    var tag = document.createElement("span");
    tag.className = "tag review-state";
    tag.textContent = STATE_TEXT[state];
    var body = document.createElement("p");
    body.className = "review-body";
    body.textContent = c.body;
    note.appendChild(tag);
    note.appendChild(body);
    var form = box.querySelector("form");
    box.insertBefore(note, form);
    return note;
  }

  function init() {
    var panel = document.getElementById("review-comments");
    if (!panel || !window.fetch || !A) {
      return;
    }
    var api = panel.getAttribute("data-api");
    // By line key: the element with the line's attributes, and its "+" button.
    var carriers = {};
    var buttons = {};

    // The list is the server's rendering: fetched again after each change.
    function refreshList() {
      return fetch(panel.getAttribute("data-fragment"), { credentials: "same-origin" })
        .then(function (resp) {
          return resp.ok ? resp.text() : "";
        })
        .then(function (html) {
          var fresh = html && A.parseFragment(html).querySelector("#review-comments");
          if (fresh) {
            panel.replaceWith(fresh);
            panel = fresh;
          }
        })
        .catch(function () {
          // The list stays as it was; a reload shows it.
        });
    }

    function openForm(carrier) {
      var box = boxFor(carrier);
      var existing = box.querySelector("form");
      if (existing) {
        existing.querySelector("textarea").focus();
        return;
      }
      var path = carrier.getAttribute("data-path");
      var line = carrier.getAttribute("data-line");
      var side = carrier.getAttribute("data-side");
      var form = document.createElement("form");
      form.className = "review-form";
      var id = "review-text-" + Math.random().toString(36).slice(2);
      var label = document.createElement("label");
      label.className = "visually-hidden";
      label.htmlFor = id;
      label.textContent = describe(path, line, side);
      var text = document.createElement("textarea");
      text.id = id;
      text.name = "body";
      text.rows = 3;
      text.maxLength = 10000;
      text.required = true;
      text.placeholder = "What should change here?";
      var problem = document.createElement("p");
      problem.className = "form-error";
      problem.setAttribute("role", "alert");
      problem.hidden = true;
      var save = document.createElement("button");
      save.type = "submit";
      save.className = "btn small primary";
      save.textContent = "Save comment";
      var cancel = document.createElement("button");
      cancel.type = "button";
      cancel.className = "btn small";
      cancel.textContent = "Cancel";
      var actions = document.createElement("div");
      actions.className = "review-actions";
      actions.appendChild(save);
      actions.appendChild(cancel);
      form.appendChild(label);
      form.appendChild(text);
      form.appendChild(problem);
      form.appendChild(actions);
      box.appendChild(form);

      function close() {
        form.remove();
        var button = buttons[carrier.getAttribute("data-review-key")];
        if (button) {
          button.focus();
        }
      }
      cancel.addEventListener("click", close);
      form.addEventListener("keydown", function (e) {
        if (e.key === "Escape") {
          e.preventDefault();
          close();
        }
      });
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        save.disabled = true;
        problem.hidden = true;
        var body = { path: path, line: parseInt(line, 10), side: side, body: text.value };
        A.postJson(api, body, "The comment was not saved.").then(function (result) {
          save.disabled = false;
          if (!result.ok) {
            problem.textContent = result.message;
            problem.hidden = false;
            return;
          }
          // The saved comment takes the focus from the form that goes: left on the
          // removed button, it would fall to <body>, far from the line.
          var note = showComment(carrier, result.data);
          note.setAttribute("role", "group");
          note.setAttribute("aria-label", describe(path, line, side));
          A.focusOn(note);
          form.remove();
          refreshList();
        });
      });
      text.focus();
    }

    var found = document.querySelectorAll("[data-path][data-line][data-side]");
    for (var i = 0; i < found.length; i++) {
      var carrier = found[i];
      var path = carrier.getAttribute("data-path");
      var line = carrier.getAttribute("data-line");
      var side = carrier.getAttribute("data-side");
      if (!/^\d+$/.test(line || "") || (side !== "new" && side !== "old")) {
        continue;
      }
      var key = lineKey(path, side, line);
      carrier.setAttribute("data-review-key", key);
      carriers[key] = carrier;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "review-add";
      // No text of its own (the "+" is CSS), so the line's text stays the line's.
      button.setAttribute("aria-label", describe(path, line, side));
      button.title = "Comment on this line";
      buttons[key] = button;
      button.addEventListener(
        "click",
        (function (c) {
          return function () {
            openForm(c);
          };
        })(carrier)
      );
      if (carrier.tagName === "TR") {
        carrier.cells[0].insertBefore(button, carrier.cells[0].firstChild);
      } else if (carrier.tagName === "TD" || carrier.tagName === "TH") {
        carrier.insertBefore(button, carrier.firstChild);
      } else {
        carrier.parentNode.insertBefore(button, carrier);
      }
    }

    fetch(api, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (resp) {
        return resp.ok ? resp.json() : [];
      })
      .then(function (list) {
        (Array.isArray(list) ? list : []).forEach(function (c) {
          var carrier = carriers[lineKey(String(c.path), String(c.side), String(c.line))];
          if (carrier) {
            showComment(carrier, c);
          }
        });
      })
      .catch(function () {
        // The comments stay listed below the diffs.
      });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
