// The board's live stream: each card that appears or changes replaces its old self by id,
// one that leaves goes. The server sends every card id first on each (re)connect, so a
// card that left while the stream was down goes too. The cards are no live region: a
// whole card read out again on each change is too much to listen to, so #board-said
// says one short line per change that matters ("beta needs approval: Bash",
// "beta finished"). Focus inside a replaced card stays on the same control, else goes
// to the card's title link.
(function () {
  "use strict";
  var A = window.Angelia;
  var cards = document.getElementById("board-cards");
  if (!cards || !window.EventSource) return;
  var empty = document.getElementById("board-empty");
  var said = document.getElementById("board-said");

  // What a status change means, after the session's title.
  var BECAME = {
    working: "is working",
    waiting: "waits for you",
    idle: "finished",
    ended: "ended",
    failed: "failed",
    interrupted: "was interrupted",
    // Its backend still runs, waiting for the next message: the turn is over.
    live: "finished",
  };

  function showEmpty() {
    if (empty) empty.hidden = cards.querySelector(".board-card") !== null;
  }

  function titleOf(card) {
    var link = card.querySelector(".board-card-title");
    return link ? link.textContent.trim() : "A session";
  }

  function askOf(card) {
    var ask = card.querySelector(".board-approval[data-pid]");
    if (!ask) return null;
    return { pid: ask.getAttribute("data-pid"), kind: ask.getAttribute("data-kind"), tool: ask.getAttribute("data-tool") };
  }

  // The one line a change is worth, or "" when it is not worth interrupting for
  // (new git counts, a new last line).
  function change(old, card) {
    var title = titleOf(card);
    var ask = askOf(card);
    var before = old ? askOf(old) : null;
    if (ask && (!before || before.pid !== ask.pid)) {
      if (ask.kind === "question") return title + " asks a question";
      if (ask.kind === "plan") return title + " needs approval: plan";
      return title + " needs approval: " + ask.tool;
    }
    var status = card.getAttribute("data-status");
    if (old && old.getAttribute("data-status") === status) return "";
    if (!old) return title + (status === "working" ? " started working" : " is on the board");
    return title + " " + (BECAME[status] || "is " + status);
  }

  // Where focus goes when its control is gone: the card's title link, or when the card
  // left, the next card's (else the page's heading).
  function titleLink(card) {
    return card.querySelector(".board-card-title a") || card;
  }

  function keepOnly(ids) {
    var wanted = {};
    ids.forEach(function (id) { wanted["board-" + id] = true; });
    Array.prototype.slice.call(cards.querySelectorAll(".board-card")).forEach(function (el) {
      if (!wanted[el.id]) remove(el, false);
    });
  }

  function remove(card, announce) {
    var hadFocus = card.contains(document.activeElement);
    var next = card.nextElementSibling || card.previousElementSibling;
    if (announce) A.say(said, titleOf(card) + " left the board");
    card.remove();
    if (hadFocus) A.focusOn(next ? titleLink(next) : document.querySelector("h1"));
  }

  function place(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html.trim();
    var card = holder.content.firstElementChild;
    if (!card || !card.id) return;
    var old = document.getElementById(card.id);
    var line = change(old, card);
    if (old) A.replaceKeepingFocus(old, card, titleLink);
    else cards.prepend(card);
    if (window.htmx) window.htmx.process(card);
    A.say(said, line);
  }

  // An answer given on a card swaps the decided line in where its buttons were: focus
  // goes to that line rather than to <body>.
  var answering = null;
  cards.addEventListener("htmx:beforeSwap", function (evt) {
    var target = evt.detail.target;
    answering = target && target.contains(document.activeElement) ? target : null;
  });
  cards.addEventListener("htmx:afterSwap", function (evt) {
    if (!answering || evt.detail.target !== answering) return;
    var card = answering.closest(".board-card");
    answering = null;
    if (document.activeElement && document.activeElement !== document.body) return;
    var line = evt.detail.target.querySelector("summary, a[href], button");
    A.focusOn(line || (card && titleLink(card)));
  });

  // Through static/js/link.js, which closes it when Angelia stops.
  var source = A.eventSource(cards.dataset.stream);
  source.addEventListener("ids", function (e) { keepOnly(JSON.parse(e.data).ids); showEmpty(); });
  source.addEventListener("card", function (e) { place(e.data); showEmpty(); });
  source.addEventListener("gone", function (e) {
    var el = document.getElementById("board-" + JSON.parse(e.data).id);
    if (el) remove(el, true);
    showEmpty();
  });
  window.addEventListener("pagehide", function () { source.close(); });
})();
