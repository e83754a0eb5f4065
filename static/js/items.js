// What each kind of transcript item does to the page when it arrives over SSE, besides
// being appended: streamed text, tool call states, the turn's totals, older plans
// folding, the session's status, model and slash commands. (Queued messages: queue.js.)
(function () {
  "use strict";

  var A = window.Angelia;

  // As the partial words them (formatting.TOOL_STATE_LABELS).
  var STATE_LABELS = { running: "running", done: "done", failed: "failed", stopped: "cancelled" };

  // The updates for the transcript ``log``.
  A.transcriptItems = function (log) {
    function liveBubble(mid, seq) {
      var bubble = document.getElementById("live-" + mid);
      if (!bubble) {
        bubble = document.createElement("div");
        bubble.className = "event msg assistant live";
        bubble.id = "live-" + mid;
        bubble.setAttribute("data-kind", "text_stream");
        bubble.setAttribute("data-mid", mid);
        bubble.setAttribute("aria-hidden", "true");
        var body = document.createElement("div");
        body.className = "live-text";
        bubble.appendChild(body);
        log.appendChild(bubble);
      }
      bubble.setAttribute("data-seq", String(seq));
      return bubble;
    }

    // Streamed text is put on the page once per frame, not once per piece: a burst of
    // pieces arrives as one task, and touching the page for each would lay it out again
    // for each (seconds of frozen page at 1,000 pieces a second).
    var pending = [];
    var frame = 0;
    var hooks = null;

    // ``around``: {after} called once per frame after putting the text in.
    function onDelta(data, seq, around) {
      var span = A.parseFragment(data).querySelector(".delta");
      if (!span) {
        return;
      }
      pending.push({ mid: span.getAttribute("data-mid") || "", seq: seq, text: span.textContent });
      hooks = around || null;
      if (!frame) {
        frame = requestAnimationFrame(flushDeltas);
      }
    }

    function flushDeltas() {
      if (frame) {
        cancelAnimationFrame(frame);
        frame = 0;
      }
      if (!pending.length) {
        return;
      }
      var runs = [];
      pending.forEach(function (piece) {
        var last = runs[runs.length - 1];
        if (last && last.mid === piece.mid) {
          last.text += piece.text;
          last.seq = piece.seq;
        } else {
          runs.push({ mid: piece.mid, seq: piece.seq, text: piece.text });
        }
      });
      pending = [];
      runs.forEach(function (run) {
        var bubble = liveBubble(run.mid, run.seq);
        bubble.querySelector(".live-text").appendChild(document.createTextNode(run.text));
      });
      if (hooks) {
        hooks.after();
      }
    }

    function replaceLive(live, data) {
      // The finished message takes the streaming bubble's place, so nothing jumps.
      var fragment = A.parseFragment(data);
      var nodes = Array.prototype.slice.call(fragment.children);
      live.replaceWith(fragment);
      nodes.forEach(function (node) {
        htmx.process(node);
      });
    }

    function onModeChanged(data) {
      var el = A.parseFragment(data).querySelector("[data-mode]");
      if (el) {
        A.showMode(el.getAttribute("data-mode"));
      }
    }

    function setToolState(tcid, state) {
      var calls = log.querySelectorAll(".tool-call[data-tcid]");
      for (var i = 0; i < calls.length; i++) {
        if (calls[i].getAttribute("data-tcid") === tcid) {
          setState(calls[i], state);
        }
      }
    }

    function setState(call, state) {
      call.classList.remove("state-" + call.getAttribute("data-state"));
      call.classList.add("state-" + state);
      call.setAttribute("data-state", state);
      var label = call.querySelector(".state-text");
      if (label) {
        label.textContent = STATE_LABELS[state] || state;
      }
    }

    function onToolResult(data) {
      var el = A.parseFragment(data).querySelector("[data-tcid]");
      if (el) {
        var failed = el.classList.contains("is-error");
        setToolState(el.getAttribute("data-tcid"), failed ? "failed" : "done");
      }
    }

    function onTurnEnd(data) {
      var running = log.querySelectorAll('.tool-call[data-state="running"]');
      for (var i = 0; i < running.length; i++) {
        setState(running[i], "stopped");
      }
      // The header's totals grow by the turn's share, as the server adds it up.
      var end = A.parseFragment(data).querySelector("[data-kind]");
      if (!end) {
        return;
      }
      var cost = document.getElementById("session-cost");
      var turnCost = parseFloat(end.getAttribute("data-cost"));
      if (cost && !isNaN(turnCost)) {
        var total = (parseFloat(cost.getAttribute("data-usd")) || 0) + turnCost;
        cost.setAttribute("data-usd", String(total));
        cost.textContent = A.formatCost(total);
      }
      var tokens = document.getElementById("session-tokens");
      if (tokens) {
        var tin = (parseInt(tokens.getAttribute("data-in"), 10) || 0) +
          (parseInt(end.getAttribute("data-tokens-in"), 10) || 0);
        var tout = (parseInt(tokens.getAttribute("data-out"), 10) || 0) +
          (parseInt(end.getAttribute("data-tokens-out"), 10) || 0);
        tokens.setAttribute("data-in", String(tin));
        tokens.setAttribute("data-out", String(tout));
        tokens.querySelector(".tokens-text").textContent =
          A.formatTokens(tin) + " in / " + A.formatTokens(tout) + " out";
        tokens.hidden = !(tin || tout);
      }
    }

    // Each plan replaces the one before it: older ones fold into a one-line summary.
    function settlePlans(keepLast) {
      var plans = log.querySelectorAll("details.plan:not(.is-old)");
      var upTo = keepLast ? plans.length - 1 : plans.length;
      for (var i = 0; i < upTo; i++) {
        plans[i].open = false;
        plans[i].classList.add("is-old");
        var label = plans[i].querySelector(".plan-label");
        if (label) {
          label.textContent = "Earlier plan";
        }
      }
    }

    // {name, description}; description null when the event names the command only.
    function commandsOf(el) {
      var spans = el.querySelectorAll("[data-cmd]");
      var entries = [];
      for (var i = 0; i < spans.length; i++) {
        entries.push({
          name: spans[i].getAttribute("data-cmd"),
          description: spans[i].getAttribute("data-desc"),
        });
      }
      return entries;
    }

    function onCommands(data) {
      var el = A.parseFragment(data).querySelector("[data-kind]");
      if (el && A.slashCommands) {
        A.slashCommands(commandsOf(el));
      }
    }

    function onStatus(data) {
      var el = A.parseFragment(data).querySelector("[data-status]");
      var holder = document.getElementById("session-status");
      var badge = holder ? holder.querySelector(".status") : null;
      if (!el || !badge) {
        return;
      }
      var status = el.getAttribute("data-status");
      badge.className = "status status-" + status;
      badge.setAttribute("data-status", status);
      badge.textContent = status === "waiting" ? "waiting for you" : status;
    }

    function onSessionInfo(data) {
      var el = A.parseFragment(data).querySelector("[data-kind]");
      if (!el) {
        return;
      }
      var model = el.getAttribute("data-model");
      var source = el.getAttribute("data-api-key-source");
      var modelBox = document.getElementById("session-model");
      if (model && modelBox) {
        modelBox.textContent = model;
      }
      var auth = document.getElementById("session-auth");
      if (source && auth) {
        var shown = auth.querySelector(".auth-source");
        shown.textContent = el.getAttribute("data-api-key-label") || source;
        shown.title = "apiKeySource reported by the CLI: " + source;
        auth.hidden = false;
      }
      // Claude lists its slash commands here; an empty list leaves the known ones.
      var listed = commandsOf(el);
      if (listed.length && A.slashCommands) {
        A.slashCommands(listed);
      }
    }

    return {
      onDelta: onDelta,
      flushDeltas: flushDeltas,
      replaceLive: replaceLive,
      onModeChanged: onModeChanged,
      onToolResult: onToolResult,
      onTurnEnd: onTurnEnd,
      settlePlans: settlePlans,
      onCommands: onCommands,
      onStatus: onStatus,
      onSessionInfo: onSessionInfo,
    };
  };
})();
