// The live transcript: staying at the bottom (or on a permalink's event) while content
// grows, the pending approvals count, the SSE stream (dropping what a reconnect replays,
// handing each message to its kind's update in items.js, queue.js, model.js or
// subagents.js), reconnect notices and pages of earlier events loaded above.
(function () {
  "use strict";

  var A = window.Angelia;

  var FOLLOW_SLACK_PX = 48;
  // Room left above an event scrolled to, so its top edge is plainly not cut off.
  var REVEAL_MARGIN_PX = 8;
  var RECONNECT_NOTICE_MS = 2000;

  function initTranscript() {
    var log = document.getElementById("transcript");
    if (!log) {
      return;
    }
    var jump = document.getElementById("jump");
    var notice = document.getElementById("conn-notice");
    var lastSeq = parseInt(log.getAttribute("data-last-seq") || "0", 10) || 0;
    // Pinned to the bottom until the reader scrolls up; or held on one event (a
    // permalink's) until the reader scrolls at all.
    var follow = true;
    var anchor = null;
    // Where the page itself last scrolled to: a scroll event landing there is not the
    // reader's doing.
    var placedAt = -1;
    var localPending = -1;
    var noticeTimer = null;

    function atBottom() {
      return log.scrollHeight - log.scrollTop - log.clientHeight <= FOLLOW_SLACK_PX;
    }

    function scrollTo(top) {
      log.scrollTop = top;
      placedAt = log.scrollTop;
    }

    function toBottom() {
      scrollTo(log.scrollHeight);
      if (jump) {
        jump.hidden = true;
      }
    }

    // The event whole in the middle of the view, or its top at the view's top when it is
    // taller than the view.
    function showEvent(target) {
      var box = target.getBoundingClientRect();
      var top = box.top - log.getBoundingClientRect().top - log.clientTop + log.scrollTop;
      var room = log.clientHeight - box.height;
      scrollTo(room >= 2 * REVEAL_MARGIN_PX ? top - room / 2 : top - REVEAL_MARGIN_PX);
    }

    function revealEvent(target) {
      follow = false;
      anchor = target;
      showEvent(target);
    }

    // Sending a message: the reader wants to see it and what comes back.
    function followLatest() {
      follow = true;
      anchor = null;
      toBottom();
    }

    // Rows that arrive after the first layout (the rewind actions, images, fonts, a
    // folded header) change the heights above the end without any new event: while
    // pinned, the view goes on to the end, and a permalink's event stays in view.
    function keepPlace() {
      if (anchor && log.contains(anchor)) {
        showEvent(anchor);
      } else if (follow) {
        toBottom();
      }
    }

    function watchSizes() {
      if (!window.ResizeObserver || !window.MutationObserver) {
        return;
      }
      var sizes = new ResizeObserver(keepPlace);
      sizes.observe(log);
      for (var i = 0; i < log.children.length; i++) {
        sizes.observe(log.children[i]);
      }
      new MutationObserver(function (changes) {
        changes.forEach(function (change) {
          for (var j = 0; j < change.addedNodes.length; j++) {
            if (change.addedNodes[j].nodeType === 1) {
              sizes.observe(change.addedNodes[j]);
            }
          }
        });
      }).observe(log, { childList: true });
    }

    function afterNewContent() {
      var empty = log.querySelector(".empty");
      if (empty) {
        empty.remove();
      }
      if (follow) {
        toBottom();
      } else if (jump) {
        jump.hidden = false;
      }
      updatePending();
    }

    function updatePending() {
      var cards = log.querySelectorAll('.perm[data-status="pending"]');
      var count = cards.length;
      var note = document.getElementById("pending-note");
      var number = document.getElementById("pending-count");
      if (note && number) {
        // The note sits in a status region: rewriting the same number would announce it again.
        if (number.textContent !== String(count)) {
          number.textContent = String(count);
        }
        note.hidden = count === 0;
      }
      var hint = document.getElementById("composer-hint");
      if (hint) {
        hint.hidden = count === 0;
      }
      // Only the oldest card answers to Enter/Escape, so only it shows the key hints.
      var marked = log.querySelectorAll(".perm.is-next");
      for (var i = 0; i < marked.length; i++) {
        marked[i].classList.remove("is-next");
      }
      if (count) {
        cards[0].classList.add("is-next");
      }
      if (localPending >= 0 && count !== localPending) {
        A.refreshBadge();
      }
      localPending = count;
    }

    log.addEventListener("scroll", function () {
      if (Math.abs(log.scrollTop - placedAt) < 2) {
        return;
      }
      placedAt = -1;
      anchor = null;
      follow = atBottom();
      if (follow && jump) {
        jump.hidden = true;
      }
    });
    if (jump) {
      jump.addEventListener("click", followLatest);
    }
    // The header's count goes to the card that Enter and Escape answer, ready for a key.
    var pendingNote = document.getElementById("pending-note");
    if (pendingNote) {
      pendingNote.addEventListener("click", function (evt) {
        var card = log.querySelector(".perm.is-next");
        if (!card) {
          return;
        }
        evt.preventDefault();
        revealEvent(card);
        var first = card.querySelector("button, input, textarea, select");
        if (first) {
          first.focus({ preventScroll: true });
        }
      });
    }

    var items = A.transcriptItems(log);
    // What these kinds do to the page besides being appended as they arrive.
    var alsoUpdate = {
      permission_request: A.onPermissionRequest,
      mode_changed: items.onModeChanged,
      model_changed: A.onModelChanged,
      models: A.onModels,
      tool_result: function (data) {
        items.onToolResult(data);
        A.onSubagentCallResult(log, data);
      },
      turn_end: function (data) {
        items.onTurnEnd(data);
        A.onSubagentsTurnEnd(log);
      },
      plan: function () {
        items.settlePlans(false);
      },
      commands: items.onCommands,
      status: items.onStatus,
      session_info: items.onSessionInfo,
      note: onNote,
    };

    // A followed terminal session whose CLI exits: the banner stops saying it runs.
    function onNote(data) {
      var running = document.getElementById("follow-running");
      if (running && A.parseFragment(data).querySelector("[data-note='terminal_exited']")) {
        running.textContent = "Its CLI has exited: it can be continued here.";
      }
    }

    log.addEventListener("htmx:sseBeforeMessage", function (evt) {
      var msg = evt.detail;
      if (typeof msg.data !== "string") {
        // A connection failure reaches listeners of an event named "error" too.
        evt.preventDefault();
        return;
      }
      var seq = parseInt(msg.lastEventId, 10);
      if (!isNaN(seq)) {
        // A reconnect replays from the page's starting point; what we already show is
        // dropped here instead of appearing twice.
        if (seq <= lastSeq) {
          evt.preventDefault();
          return;
        }
        lastSeq = seq;
        log.setAttribute("data-last-seq", String(seq));
      }
      if (msg.type === "text_delta") {
        evt.preventDefault();
        // The page follows once per frame of text, not for every piece.
        items.onDelta(msg.data, seq, { after: afterNewContent });
        return;
      }
      // Whatever comes next goes after the text streamed so far.
      items.flushDeltas();
      switch (msg.type) {
        case "assistant_message": {
          var mid = A.parseFragment(msg.data).querySelector("[data-mid]");
          var live = mid ? document.getElementById("live-" + mid.getAttribute("data-mid")) : null;
          if (live) {
            evt.preventDefault();
            items.replaceLive(live, msg.data);
            afterNewContent();
            return;
          }
          break; // a subagent's message has no live bubble: it may nest below
        }
        case "permission_decision":
          // The request's card collapses to the line saying who decided what; a second
          // line would say it again. Without the card (an earlier page) the line stays.
          if (A.markDecided(msg.data)) {
            evt.preventDefault();
            afterNewContent();
          }
          return;
        case "user_message":
          // One that has to wait goes below the running turn (queue.js).
          if (A.onQueuedMessage(msg.data)) {
            evt.preventDefault();
            updatePending();
            return;
          }
          break;
        case "queued_sent":
        case "queued_dropped":
        case "queued_edited":
          evt.preventDefault();
          A.onQueueEvent(log, msg.data);
          return;
        case "task":
          evt.preventDefault();
          A.onTask(log, msg.data);
          return;
      }
      // A subagent's item goes into the group under its call instead of the log's end.
      if (A.nestSubagentItem(log, msg.type, msg.data)) {
        evt.preventDefault();
        if (Object.prototype.hasOwnProperty.call(alsoUpdate, msg.type)) {
          alsoUpdate[msg.type](msg.data);
        }
        A.localiseTimes(log);
        afterNewContent();
        return;
      }
      if (Object.prototype.hasOwnProperty.call(alsoUpdate, msg.type)) {
        alsoUpdate[msg.type](msg.data);
      }
    });

    log.addEventListener("htmx:sseMessage", function (evt) {
      A.localiseTimes(log);
      afterNewContent();
      A.tickWaits();
    });

    log.addEventListener("htmx:sseError", function (evt) {
      var cause = evt.detail && evt.detail.error;
      if (cause && typeof cause.data === "string") {
        return; // a stored error event sent as "error", not a lost connection
      }
      // When the extension has to build a new EventSource, the browser's Last-Event-ID
      // is gone; asking for what follows our last event keeps the replay short.
      var url = log.getAttribute("sse-connect");
      if (url) {
        log.setAttribute("sse-connect", url.replace(/([?&]after=)\d+/, "$1" + lastSeq));
      }
      if (notice && noticeTimer === null) {
        noticeTimer = window.setTimeout(function () {
          // Gone quiet meanwhile (static/js/link.js): its banner says so instead.
          notice.hidden = A.linkHalted();
        }, RECONNECT_NOTICE_MS);
      }
    });

    log.addEventListener("htmx:sseOpen", function () {
      if (noticeTimer !== null) {
        window.clearTimeout(noticeTimer);
        noticeTimer = null;
      }
      if (notice) {
        notice.hidden = true;
      }
    });

    // A decision made in this tab swaps the card; the counts follow.
    document.body.addEventListener("htmx:afterSwap", function (evt) {
      var target = evt.detail.target;
      if (target && target.classList && target.classList.contains("earlier")) {
        A.settleQueues(log);
        A.nestLoose(log);
        items.settlePlans(true);
      }
      updatePending();
    });

    // Long sessions open at the end, unless a permalink (#e-<seq>) asks for an event.
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target && log.contains(target)) {
      A.revealNested(target);
      revealEvent(target);
    } else {
      toBottom();
    }
    watchSizes();
    updatePending();
    A.revealEvent = revealEvent;
    A.followLatest = followLatest;
  }

  // Until the transcript has started, nothing to scroll.
  A.revealEvent = function (target) {
    target.scrollIntoView({ block: "start" });
  };
  A.followLatest = function () {};
  A.initTranscript = initTranscript;
})();
