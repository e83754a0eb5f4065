// A subagent's work, folded under the Agent call that runs it: its items arriving over
// SSE (they name the call in data-parent) go into the call's group, its task reports
// keep the group's status line current, and a link to an item inside a closed group
// opens it. The server nests the same way on a page render (app/web/nesting.py).
(function () {
  "use strict";

  var A = window.Angelia;

  // As the status line's macro words them (templates/_macros.html, subagent_status).
  var LABELS = {
    running: "running\u2026",
    completed: "completed",
    failed: "failed",
    stopped: "stopped",
    killed: "stopped",
  };
  var NESTED = { assistant_message: true, thought: true, tool_call: true, tool_result: true };

  // Tool call ids come from the agent: escaped whole, so no id can break a selector.
  function quoted(value) {
    return '"' + CSS.escape(value) + '"';
  }

  function groupOf(log, tcid) {
    return log.querySelector(".subagent[data-subagent-for=" + quoted(tcid) + "]");
  }

  function statusText(group) {
    var status = group.getAttribute("data-status") || "running";
    var parts = [LABELS[status] || status];
    var tool = group.getAttribute("data-last-tool");
    var summary = group.getAttribute("data-summary");
    if (tool) {
      parts.push("last tool: " + tool);
    }
    if (summary) {
      parts.push(summary);
    }
    return parts.join(" \u00b7 ");
  }

  function setStatus(group, status) {
    group.classList.remove("status-" + group.getAttribute("data-status"));
    group.classList.add("status-" + status);
    group.setAttribute("data-status", status);
    group.querySelector(".subagent-status").textContent = statusText(group);
  }

  function part(tag, className, text) {
    var el = document.createElement(tag);
    el.className = className;
    el.textContent = text;
    return el;
  }

  // The group for a call the page did not know runs a subagent (not named Agent): made
  // next to the call, empty, in the shape the server renders.
  function ensureGroup(log, tcid) {
    var found = groupOf(log, tcid);
    if (found) {
      return found;
    }
    var call = log.querySelector(".tool-call[data-tcid=" + quoted(tcid) + "]");
    if (!call) {
      return null;
    }
    var group = document.createElement("details");
    group.className = "subagent status-running";
    group.setAttribute("data-subagent-for", tcid);
    group.setAttribute("data-status", "running");
    var summary = document.createElement("summary");
    var name = part("span", "subagent-name", "");
    name.appendChild(part("span", "subagent-kind", "Subagent"));
    name.appendChild(document.createTextNode(" \u00b7 "));
    name.appendChild(part("span", "subagent-desc", "(no description)"));
    name.appendChild(document.createTextNode(" "));
    name.appendChild(part("span", "subagent-type", ""));
    summary.appendChild(name);
    summary.appendChild(document.createTextNode(" "));
    summary.appendChild(part("span", "subagent-status", LABELS.running));
    group.appendChild(summary);
    group.appendChild(part("div", "subagent-log", ""));
    call.insertAdjacentElement("afterend", group);
    return group;
  }

  // Puts a subagent's item from an SSE message into its group; false leaves the message
  // to be appended as usual (not a subagent's, or its call is not on the page).
  function nest(log, type, data) {
    if (!NESTED[type]) {
      return false;
    }
    var fragment = A.parseFragment(data);
    var root = fragment.querySelector("[data-parent]");
    var group = root ? ensureGroup(log, root.getAttribute("data-parent")) : null;
    if (!group) {
      return false;
    }
    var body = group.querySelector(".subagent-log");
    Array.prototype.slice.call(fragment.children).forEach(function (node) {
      body.appendChild(node);
      htmx.process(node);
    });
    return true;
  }

  // A task report: the fields it sets replace the group's, empty ones keep theirs.
  function applyReport(log, report) {
    var group = ensureGroup(log, report.getAttribute("data-task-for"));
    if (!group) {
      return false;
    }
    ["data-summary", "data-last-tool"].forEach(function (name) {
      var value = report.getAttribute(name);
      if (value) {
        group.setAttribute(name, value);
      }
    });
    var description = report.getAttribute("data-description");
    var type = report.getAttribute("data-subagent-type");
    // Later reports describe what the subagent does now; the first one names it.
    if (description && !group.hasAttribute("data-named")) {
      group.querySelector(".subagent-desc").textContent = description;
      group.setAttribute("data-named", "");
    }
    if (type) {
      group.querySelector(".subagent-type").textContent = "(" + type + ")";
    }
    setStatus(group, report.getAttribute("data-status") || group.getAttribute("data-status"));
    return true;
  }

  function onTask(log, data) {
    var report = A.parseFragment(data).querySelector("[data-task-for]");
    if (report) {
      applyReport(log, report);
    }
  }

  // The call itself ended: a subagent whose reports still say running ended with it.
  function onCallResult(log, data) {
    var result = A.parseFragment(data).querySelector("[data-tcid]");
    var group = result ? groupOf(log, result.getAttribute("data-tcid")) : null;
    if (group && group.getAttribute("data-status") === "running") {
      setStatus(group, result.classList.contains("is-error") ? "failed" : "completed");
    }
  }

  function onTurnEnd(log) {
    var running = log.querySelectorAll('.subagent[data-status="running"]');
    for (var i = 0; i < running.length; i++) {
      setStatus(running[i], "stopped");
    }
  }

  // A page loaded above may hold the call of a subagent whose later items, reports and
  // result this page shows: the items join its group, the reports and the result (in
  // order, oldest first) bring its status line up to date.
  function nestLoose(log) {
    var loose = log.querySelectorAll("[data-parent], [data-task-for]:not([data-applied])");
    for (var i = 0; i < loose.length; i++) {
      var node = loose[i];
      if (node.hasAttribute("data-task-for")) {
        if (groupOf(log, node.getAttribute("data-task-for")) && applyReport(log, node)) {
          node.setAttribute("data-applied", "");
        }
        continue;
      }
      var group = node.closest(".subagent") ? null : groupOf(log, node.getAttribute("data-parent"));
      if (group) {
        group.querySelector(".subagent-log").appendChild(node);
      }
    }
    var running = log.querySelectorAll('.subagent[data-status="running"]');
    for (var j = 0; j < running.length; j++) {
      var tcid = running[j].getAttribute("data-subagent-for");
      var result = log.querySelector(".tool-result[data-tcid=" + quoted(tcid) + "]");
      if (result) {
        setStatus(running[j], result.classList.contains("is-error") ? "failed" : "completed");
      }
    }
  }

  // A permalink to a subagent's item opens the groups around it.
  function reveal(el) {
    for (var node = el.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS" && node.classList.contains("subagent")) {
        node.open = true;
      }
    }
  }

  A.nestSubagentItem = nest;
  A.onTask = onTask;
  A.onSubagentCallResult = onCallResult;
  A.onSubagentsTurnEnd = onTurnEnd;
  A.nestLoose = nestLoose;
  A.revealNested = reveal;
})();
