// The composer's choice while the agent works: queue the message (the composer's own
// request, it waits for the turn to end) or send it now, into the running turn, through
// POST /api/sessions/<id>/steer. The choice shows only while a turn runs; a backend that
// cannot take a message mid-turn offers the queue alone, with the reason it gives.
(function () {
  "use strict";

  var A = window.Angelia;

  function initSteer() {
    var box = document.getElementById("steer-choice");
    var form = document.getElementById("composer");
    var text = document.getElementById("composer-text");
    if (!box || !form || !text) {
      return;
    }
    var url = box.getAttribute("data-steer-url");
    var nowOption = document.getElementById("steer-now-option");
    var now = document.getElementById("steer-now");
    var queue = document.getElementById("steer-queue");
    var why = document.getElementById("steer-why");
    var errorBox = document.getElementById("composer-error");
    var canSteer = false;

    function show(state) {
      canSteer = !!state.can_steer;
      nowOption.hidden = !canSteer;
      why.hidden = canSteer;
      why.textContent = canSteer ? "" : state.reason || "";
      if (!canSteer) {
        queue.checked = true;
      }
    }

    function update() {
      var working = A.turnActive();
      if (working && box.hidden) {
        // Asked each time a turn starts: an agent says whether it can once it runs.
        fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(function (resp) {
            return resp.ok ? resp.json() : null;
          })
          .then(function (state) {
            if (state) {
              show(state);
            }
          })
          .catch(function () {});
      }
      if (!working) {
        // Each turn starts from the queue, so "now" is always a choice made for this turn.
        queue.checked = true;
      }
      box.hidden = !working;
    }

    // Before htmx sees it: a message for the running turn takes the steering request.
    document.addEventListener(
      "submit",
      function (evt) {
        if (evt.target !== form || box.hidden || !canSteer || !now.checked) {
          return;
        }
        evt.preventDefault();
        evt.stopImmediatePropagation();
        var message = text.value;
        if (A.attachedCount && A.attachedCount() > 0) {
          // Only text goes into a running turn; nothing is sent, nothing is lost.
          errorBox.textContent =
            "Images go with a queued message only: choose Queue, or remove them to send now.";
          return;
        }
        if (message.trim() === "") {
          return;
        }
        A.postJson(url, { text: message }, "Could not send the message now").then(function (r) {
          if (r.ok) {
            A.composerSent();
          } else if (errorBox) {
            // The text stays in the box: queue it, or send it again.
            errorBox.textContent = r.message;
          }
        });
      },
      true
    );

    var status = document.getElementById("session-status");
    if (status && window.MutationObserver) {
      new MutationObserver(update).observe(status, {
        subtree: true,
        attributes: true,
        childList: true,
      });
    }
    update();
  }

  A.initSteer = initSteer;
})();
