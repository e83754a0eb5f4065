// Messages that wait in the app until the agent is free: they sit below the transcript
// (#queue-waiting) with Edit (an inline text box) and Drop, sent to the JSON API; the
// queue's events (queued_sent, queued_dropped, queued_edited, each naming its message by
// queued_seq) settle them, and one that went moves into the transcript where it went.
(function () {
  "use strict";

  var A = window.Angelia;

  var GONE = "Already sent: it can no longer be changed.";

  function area() {
    return document.getElementById("queue-waiting");
  }

  function showArea() {
    var box = area();
    if (box) {
      box.hidden = !box.querySelector(".msg.user");
    }
  }

  // A new waiting message goes below the running turn; true when it did.
  function onQueuedMessage(data) {
    var box = area();
    var fragment = A.parseFragment(data);
    if (!box || !fragment.querySelector('.msg.user[data-queue="waiting"]')) {
      return false;
    }
    box.appendChild(fragment);
    showArea();
    A.localiseTimes(box);
    return true;
  }

  // Messages still waiting on a page of earlier events join the others below.
  function gatherWaiting(log) {
    var box = area();
    if (!box) {
      return;
    }
    var found = log.querySelectorAll('.msg.user[data-queue="waiting"][data-queue-url]');
    for (var i = found.length - 1; i >= 0; i--) {
      box.insertBefore(found[i], box.firstChild);
    }
    showArea();
  }

  function messageFor(event) {
    var seq = event.getAttribute("data-queued-seq");
    if (seq) {
      return document.querySelector('.msg.user[data-seq="' + seq + '"][data-queue]');
    }
    // Stored before queue events named their message: the oldest waiting one with its text.
    var text = (event.querySelector(".queue-text") || event).textContent;
    var waiting = document.querySelectorAll('.msg.user[data-queue="waiting"]');
    for (var i = 0; i < waiting.length; i++) {
      var bubble = waiting[i].querySelector(".bubble");
      if (bubble && bubble.textContent === text) {
        return waiting[i];
      }
    }
    return null;
  }

  function showText(message, text) {
    var bubble = message.querySelector(".bubble");
    if (!bubble || bubble.textContent === text) {
      return;
    }
    bubble.textContent = text;
    var who = message.querySelector(".who");
    if (who && !who.querySelector(".queue-edited")) {
      var mark = document.createElement("span");
      mark.className = "queue-edited muted";
      mark.textContent = "(edited)";
      who.appendChild(document.createTextNode(" "));
      who.appendChild(mark);
    }
  }

  // The message stops waiting: it went, or it was dropped. Its tools go with it; one that
  // went is an ordinary message from now on.
  function settle(message, outcome) {
    message.setAttribute("data-queue", outcome);
    message.classList.remove("queue-waiting");
    if (outcome === "sent") {
      message.classList.remove("queued");
    } else {
      message.classList.add("queue-" + outcome);
    }
    message.removeAttribute("data-queue-url");
    ["queue-tools", "queue-editor"].forEach(function (name) {
      var part = message.querySelector("." + name);
      if (part) {
        if (part.contains(document.activeElement)) {
          message.setAttribute("tabindex", "-1");
          message.focus();
        }
        part.remove();
      }
    });
    var label = message.querySelector(".queue-label");
    if (label && outcome === "sent") {
      label.remove();
    } else if (label) {
      label.textContent = "dropped: not sent";
    }
  }

  // A message that stopped waiting leaves the area below the transcript for the place
  // of the event saying so: where that event sits on the page, or the log's end for one
  // arriving now.
  function place(log, message, event) {
    var box = area();
    if (event && log.contains(event)) {
      event.parentNode.insertBefore(message, event);
    } else if (box && box.contains(message)) {
      log.appendChild(message);
    }
    showArea();
  }

  // Applies one queue event (an element from the server's fragment) to its message.
  function apply(log, event) {
    var message = messageFor(event);
    if (!message) {
      return false;
    }
    var outcome = event.getAttribute("data-queue-event");
    var text = (event.querySelector(".queue-text") || event).textContent;
    if (message.getAttribute("data-queue") === "waiting") {
      showText(message, text);
      if (outcome !== "edited") {
        place(log, message, event);
        settle(message, outcome);
      } else {
        var box = message.querySelector(".queue-editor textarea");
        var editor = message.querySelector(".queue-editor");
        if (box && editor && editor.hidden) {
          box.value = text;
        }
      }
    }
    event.setAttribute("data-settled", "");
    return true;
  }

  function onQueueEvent(log, data) {
    var event = A.parseFragment(data).querySelector("[data-queue-event]");
    if (event && !apply(log, event)) {
      // Its message is on a page of earlier events not loaded yet: kept (hidden) at its
      // place for when that page comes.
      log.appendChild(event);
    }
  }

  // A page of earlier events may hold queue events whose message the server rendered
  // on another page; replaying them in order settles it. What still waits joins the
  // messages below the transcript.
  function settleQueues(log) {
    var events = log.querySelectorAll("[data-queue-event]:not([data-settled])");
    for (var i = 0; i < events.length; i++) {
      apply(log, events[i]);
    }
    gatherWaiting(log);
  }

  // ---- Edit and Drop ------------------------------------------------------------

  // Once it went, the API answers 409: what the user needs to hear is that it went.
  function problem(response) {
    if (response.status === 409) {
      return Promise.resolve(GONE);
    }
    return A.apiProblem(response, "Not changed");
  }

  function say(message, text) {
    var box = message.querySelector(".queue-problem");
    if (box) {
      box.textContent = text;
    }
  }

  function openEditor(message, open) {
    var editor = message.querySelector(".queue-editor");
    var edit = message.querySelector(".queue-edit");
    var bubble = message.querySelector(".bubble");
    if (!editor || !edit) {
      return;
    }
    editor.hidden = !open;
    // While the text box is open, Save and Cancel are the only ways on.
    edit.parentElement.hidden = open;
    if (bubble) {
      bubble.hidden = open;
    }
    edit.setAttribute("aria-expanded", open ? "true" : "false");
    var box = editor.querySelector("textarea");
    if (open && box) {
      box.value = bubble ? bubble.textContent : box.value;
      box.focus();
    } else {
      edit.focus();
    }
  }

  function failed(message, response) {
    return problem(response).then(function (text) {
      say(message, text);
      if (response.status === 409) {
        openEditor(message, false);
        var tools = message.querySelector(".queue-tools");
        if (tools) {
          tools.remove();
        }
      }
    });
  }

  function offline(message) {
    say(message, "Not changed: the server did not answer.");
  }

  function save(message) {
    var url = message.getAttribute("data-queue-url");
    var box = message.querySelector(".queue-editor textarea");
    if (!url || !box) {
      return;
    }
    var text = box.value;
    A.apiRequest("PATCH", url, { text: text }).then(function (response) {
      if (!response.ok) {
        return failed(message, response);
      }
      say(message, "");
      showText(message, text);
      openEditor(message, false);
    }, function () {
      offline(message);
    });
  }

  function drop(message) {
    var url = message.getAttribute("data-queue-url");
    if (!url) {
      return;
    }
    A.apiRequest("DELETE", url).then(function (response) {
      if (!response.ok) {
        return failed(message, response);
      }
      say(message, "");
      place(document.getElementById("transcript"), message, null);
      settle(message, "dropped");
    }, function () {
      offline(message);
    });
  }

  function initQueue() {
    document.addEventListener("click", function (evt) {
      var button = evt.target.closest ? evt.target.closest("button") : null;
      var message = button ? button.closest(".msg.user[data-queue-url]") : null;
      if (!message) {
        return;
      }
      if (button.classList.contains("queue-edit")) {
        openEditor(message, button.getAttribute("aria-expanded") !== "true");
      } else if (button.classList.contains("queue-cancel")) {
        openEditor(message, false);
      } else if (button.classList.contains("queue-drop")) {
        drop(message);
      }
    });
    document.addEventListener("submit", function (evt) {
      var form = evt.target;
      var message = form.classList.contains("queue-editor") ? form.closest(".msg.user") : null;
      if (message) {
        evt.preventDefault();
        save(message);
      }
    });
    // Escape in the box cancels the edit, before any other meaning it has on the page.
    document.addEventListener(
      "keydown",
      function (evt) {
        var editor = evt.target.closest ? evt.target.closest(".queue-editor") : null;
        if (editor && evt.key === "Escape") {
          evt.preventDefault();
          evt.stopPropagation();
          openEditor(editor.closest(".msg.user"), false);
        }
      },
      true
    );
  }

  A.onQueuedMessage = onQueuedMessage;
  A.onQueueEvent = onQueueEvent;
  A.settleQueues = settleQueues;
  A.initQueue = initQueue;
})();
