// The board's live stream: each card that appears or changes replaces its old self by id,
// one that leaves goes. The server sends every card id first on each (re)connect, so a
// card that left while the stream was down goes too.
(function () {
  "use strict";
  var cards = document.getElementById("board-cards");
  if (!cards || !window.EventSource) return;
  var empty = document.getElementById("board-empty");

  function showEmpty() {
    if (empty) empty.hidden = cards.querySelector(".board-card") !== null;
  }

  function keepOnly(ids) {
    var wanted = {};
    ids.forEach(function (id) { wanted["board-" + id] = true; });
    Array.prototype.slice.call(cards.querySelectorAll(".board-card")).forEach(function (el) {
      if (!wanted[el.id]) el.remove();
    });
  }

  function place(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html.trim();
    var card = holder.content.firstElementChild;
    if (!card || !card.id) return;
    var old = document.getElementById(card.id);
    if (old) old.replaceWith(card);
    else cards.prepend(card);
    if (window.htmx) window.htmx.process(card);
  }

  // Through static/js/link.js, which closes it when Angelia stops.
  var source = window.Angelia.eventSource(cards.dataset.stream);
  source.addEventListener("ids", function (e) { keepOnly(JSON.parse(e.data).ids); showEmpty(); });
  source.addEventListener("card", function (e) { place(e.data); showEmpty(); });
  source.addEventListener("gone", function (e) {
    var el = document.getElementById("board-" + JSON.parse(e.data).id);
    if (el) el.remove();
    showEmpty();
  });
  window.addEventListener("pagehide", function () { source.close(); });
})();
