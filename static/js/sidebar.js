// The sessions sidebar, live. The server sends the rows it would draw now (an event
// named "sidebar": {"sessions": [{id, title, status, label, day}, ...]}, newest first;
// app/web/sidebar.py) on the page's own stream when it carries them (#nav-sessions'
// data-via), else on /sidebar/live. Each message is applied in place: a row that did
// not change is not touched, one that did has its title or dot changed, only rows out
// of place are moved and new ones built like the template's (templates/base.html). The
// list is no live region, so nothing is announced; focus on a row's link stays there.
// Titles are untrusted text: they only ever go in as textContent.
(function () {
  "use strict";

  var A = window.Angelia;
  var EVENT = "sidebar";

  function el(tag, className) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    return node;
  }

  function makeRow(row, current) {
    var li = el("li");
    li.setAttribute("data-nav-sid", row.id);
    var link = el("a");
    link.href = "/sessions/" + encodeURIComponent(row.id);
    if (row.id === current) link.setAttribute("aria-current", "page");
    var title = el("span", "nav-title");
    title.setAttribute("data-title-of", row.id);
    var dot = el("span");
    dot.setAttribute("data-status-of", row.id);
    dot.appendChild(el("span", "visually-hidden"));
    link.appendChild(title);
    link.appendChild(dot);
    li.appendChild(link);
    showRow(li, row);
    return li;
  }

  // Only what differs is written, so an unchanged row is left exactly as it is.
  function showRow(li, row) {
    var title = li.querySelector(".nav-title");
    if (title && title.textContent !== row.title) title.textContent = row.title;
    var dot = li.querySelector("[data-status-of]");
    if (!dot) return;
    var className = "dot dot-" + row.status;
    if (dot.className !== className) dot.className = className;
    if (dot.title !== row.label) dot.title = row.label;
    var said = dot.querySelector(".visually-hidden");
    if (said && said.textContent !== row.label) said.textContent = row.label;
  }

  // The rows in runs of the same day, as the template groups them.
  function byDay(rows) {
    var runs = [];
    rows.forEach(function (row) {
      var last = runs[runs.length - 1];
      if (!last || last.day !== row.day) {
        last = { day: row.day, rows: [] };
        runs.push(last);
      }
      last.rows.push(row);
    });
    return runs;
  }

  // Each day's label and the list after it, by the day it names.
  function shownGroups(box) {
    var groups = {};
    Array.prototype.forEach.call(box.querySelectorAll(".nav-heading"), function (h) {
      var list = h.nextElementSibling;
      if (list && list.tagName === "UL" && !groups[h.textContent]) {
        groups[h.textContent] = { heading: h, list: list };
      }
    });
    return groups;
  }

  // Puts node where `before` is (at the end if null), unless it is there already: moving
  // a list would take the focus off a link in it.
  function place(parent, node, before) {
    if (node === before) return;
    if (node.parentNode === parent && node.nextElementSibling === before) return;
    parent.insertBefore(node, before);
  }

  function apply(box, rows) {
    var current = box.getAttribute("data-current") || "";
    var focused = box.contains(document.activeElement) ? document.activeElement : null;
    var rowsShown = {};
    Array.prototype.forEach.call(box.querySelectorAll("li[data-nav-sid]"), function (li) {
      rowsShown[li.getAttribute("data-nav-sid")] = li;
    });
    var groups = shownGroups(box);
    var at = box.firstElementChild;
    byDay(rows).forEach(function (run) {
      var group = groups[run.day];
      delete groups[run.day];
      if (!group) {
        // As the template's: a label seen, and the day as the list's name heard.
        var heading = el("p", "nav-heading");
        heading.setAttribute("aria-hidden", "true");
        heading.textContent = run.day;
        var list = el("ul", "nav-sessions");
        list.setAttribute("aria-label", run.day);
        group = { heading: heading, list: list };
      }
      place(box, group.heading, at);
      place(box, group.list, group.heading.nextElementSibling);
      at = group.list.nextElementSibling;
      var cursor = group.list.firstElementChild;
      run.rows.forEach(function (row) {
        var li = rowsShown[row.id];
        delete rowsShown[row.id];
        if (li) showRow(li, row);
        else li = makeRow(row, current);
        // Only a row out of place moves: the one before which it goes stays put.
        if (li === cursor) cursor = cursor.nextElementSibling;
        else group.list.insertBefore(li, cursor);
      });
    });
    Object.keys(rowsShown).forEach(function (sid) {
      rowsShown[sid].remove();
    });
    Object.keys(groups).forEach(function (day) {
      groups[day].heading.remove();
      groups[day].list.remove();
    });
    if (focused && document.activeElement !== focused) {
      // A moved link lost focus on the way: it gets it back where it is now. A link
      // whose session left gives it to the list's first link, or the next link below.
      var target = box.contains(focused)
        ? focused
        : box.querySelector("a") || document.querySelector(".nav-all");
      if (target) target.focus({ preventScroll: true });
    }
  }

  function initSidebar() {
    var box = document.getElementById("nav-sessions");
    if (!box || !window.EventSource) return;
    function onMessage(evt) {
      var data;
      try {
        data = JSON.parse(evt.data);
      } catch (err) {
        return;
      }
      if (data && Array.isArray(data.sessions)) apply(box, data.sessions);
    }
    var url = box.getAttribute("data-stream");
    if (url) {
      A.eventSource(url).addEventListener(EVENT, onMessage);
      return;
    }
    // The page's own stream carries them: listen on it (and on it again if reopened).
    A.onEventSource(function (source) {
      source.addEventListener(EVENT, onMessage);
    });
  }

  A.initSidebar = initSidebar;
})();
