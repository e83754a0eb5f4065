// Angelia's page scripts share one namespace, window.Angelia; this file, loaded first,
// makes it and puts the helpers used by more than one of them on it: parsing server
// fragments, local times, error text from a response, requests to the JSON API, cost and
// token formats, the tab title, asking the approvals badge to update, desktop
// notifications and stopping the running turn.
// The scripts are plain files loaded with `defer`, in the order templates/base.html lists
// them, under `script-src 'self'`: no inline handlers anywhere, everything is wired by id,
// class or data attribute.
(function () {
  "use strict";

  var A = (window.Angelia = window.Angelia || {});

  function parseFragment(html) {
    // The server renders these fragments with autoescaping; a <template> parses them
    // without running anything or fetching images.
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    return tpl.content;
  }

  function localiseTimes(root) {
    var nodes = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < nodes.length; i++) {
      var when = new Date(nodes[i].getAttribute("datetime"));
      if (!isNaN(when.getTime())) {
        var exact = when.toLocaleString(undefined, {
          dateStyle: "medium",
          timeStyle: "short",
        });
        // A time said relatively ("3 minutes ago") keeps its words; the exact one is its title.
        if (nodes[i].hasAttribute("data-relative")) nodes[i].title = exact;
        else nodes[i].textContent = exact;
      }
    }
  }

  function responseMessage(xhr, fallback) {
    if (!xhr || xhr.status === 0) {
      return fallback + " The server did not answer.";
    }
    var body = (xhr.responseText || "").trim();
    // Only short plain-text bodies are shown, and only as text.
    if (body && body.length < 500 && body.charAt(0) !== "<") {
      return body;
    }
    return fallback + " (HTTP " + xhr.status + ")";
  }

  // A request to the JSON API from this page: same-origin, with the CSRF token.
  function apiRequest(method, url, body) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    var headers = { Accept: "application/json", "X-CSRF-Token": meta ? meta.content : "" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
    }
    return fetch(url, {
      method: method,
      headers: headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  // A refused API request's reason, as text: the first field's message of a 422, the
  // detail of any other error, else ``fallback`` and the status.
  function apiProblem(response, fallback) {
    var plain = fallback + " (HTTP " + response.status + ")";
    return response.json().then(
      function (data) {
        var detail = data && data.detail;
        if (Array.isArray(detail) && detail.length && detail[0].message) {
          return String(detail[0].message);
        }
        return typeof detail === "string" && detail ? detail : plain;
      },
      function () {
        return plain;
      }
    );
  }

  function formatCost(usd) {
    // Mirrors formatting.format_cost, so a live update reads like a reload.
    if (Math.abs(usd) >= 1) {
      return "$" + usd.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    }
    var parts = usd.toFixed(4).replace(/0+$/, "").split(".");
    var frac = parts[1] || "";
    while (frac.length < 2) {
      frac += "0";
    }
    return "$" + parts[0] + "." + frac;
  }

  function formatTokens(count) {
    if (count < 1000) {
      return String(Math.round(count));
    }
    if (count < 1000000) {
      return (count / 1000).toFixed(1) + "k";
    }
    return (count / 1000000).toFixed(1) + "M";
  }

  // ---- pending approvals and notifications ----------------------------------------

  // The title's "(n) " prefix is the badge count: approvals waiting in any session.
  var baseTitle = document.title.replace(/^\(\d+\)\s*/, "");

  // Asks the sidebar badge to poll now instead of at its next tick.
  function refreshBadge() {
    if (window.htmx && document.getElementById("pending-badge")) {
      htmx.trigger(document.body, "angelia-pending");
    }
  }

  function canNotify() {
    return "Notification" in window && Notification.permission === "granted";
  }

  function notify(title, body, tag) {
    if (!canNotify()) {
      return;
    }
    try {
      var note = new Notification(title, { body: body, tag: tag });
      note.onclick = function () {
        window.focus();
        note.close();
      };
    } catch (err) {
      // Some platforms only allow notifications from a service worker; the title
      // badge still shows the count.
    }
  }

  // The session's turn is running (or waiting on an approval): Stop has something to stop.
  function turnActive() {
    var badge = document.querySelector("#session-status .status");
    var status = badge ? badge.getAttribute("data-status") : "";
    return status === "working" || status === "waiting";
  }

  // Presses the real Stop button, so Escape and a click share one request path.
  function interruptTurn() {
    var stop = document.getElementById("stop-btn");
    if (!stop || !turnActive()) {
      return false;
    }
    if (window.htmx) {
      htmx.process(stop);
    }
    stop.click();
    return true;
  }

  // ---- JSON API requests (attach.js, rewind.js) -------------------------------------

  // The reason an API error body gives: {"detail": "text"}, or a list of
  // {field, message} for invalid input, where images[i] is the (i+1)-th image.
  function detailMessage(detail) {
    if (typeof detail === "string") {
      return detail;
    }
    if (!Array.isArray(detail)) {
      return "";
    }
    return detail
      .map(function (item) {
        var field = String((item && item.field) || "");
        var message = String((item && item.message) || "");
        var image = /^images[.[](\d+)\]?(?:\.|$)/.exec(field);
        if (image) {
          return "Image " + (parseInt(image[1], 10) + 1) + ": " + message;
        }
        return field ? field + ": " + message : message;
      })
      .join(" ");
  }

  // POSTs ``body`` as JSON with the page's CSRF token (cookie auth needs it). Always
  // resolves, to {ok, status, data, message}; message is why it failed, else "".
  function postJson(url, body, fallback) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRF-Token": meta ? meta.getAttribute("content") : "",
      },
      body: JSON.stringify(body),
    }).then(
      function (resp) {
        return resp
          .json()
          .catch(function () {
            return {};
          })
          .then(function (data) {
            var why = resp.ok ? "" : detailMessage(data && data.detail);
            return {
              ok: resp.ok,
              status: resp.status,
              data: data || {},
              message: resp.ok ? "" : why || fallback + " (HTTP " + resp.status + ")",
            };
          });
      },
      function () {
        return { ok: false, status: 0, data: {}, message: fallback + " The server did not answer." };
      }
    );
  }

  // ---- live updates: focus kept when markup is replaced, short announcements --------

  var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";

  // How to find the focused element again in a fresh rendering of the markup around it.
  function focusSelector(el) {
    if (el.id) {
      return "#" + CSS.escape(el.id);
    }
    var tag = el.tagName.toLowerCase();
    var name = el.getAttribute("name");
    if (name) {
      var value = tag === "button" ? el.getAttribute("value") : null;
      return tag + '[name="' + CSS.escape(name) + '"]' + (value ? '[value="' + CSS.escape(value) + '"]' : "");
    }
    var href = el.getAttribute("href");
    if (href) {
      return tag + '[href="' + CSS.escape(href) + '"]';
    }
    var field = el.getAttribute("data-field");
    return field ? tag + '[data-field="' + CSS.escape(field) + '"]' : null;
  }

  function focusOn(el) {
    if (!el) {
      return;
    }
    if (!el.matches(FOCUSABLE)) {
      el.setAttribute("tabindex", "-1");
    }
    el.focus({ preventScroll: true });
  }

  // Puts fresh where old is. Focus inside old would fall to <body> and leave a keyboard
  // or screen-reader user nowhere: it goes to the same control in fresh, else to
  // fallback(fresh).
  function replaceKeepingFocus(old, fresh, fallback) {
    var focused = old.contains(document.activeElement) ? document.activeElement : null;
    var selector = focused && focusSelector(focused);
    old.replaceWith(fresh);
    if (!focused) {
      return;
    }
    var again = null;
    if (selector && fresh.matches(selector)) {
      again = fresh;
    } else if (selector) {
      // Two links to the same page (a card's title and its Open button) are told
      // apart by their order.
      var before = Array.prototype.indexOf.call(old.querySelectorAll(selector), focused);
      again = fresh.querySelectorAll(selector)[before] || fresh.querySelector(selector);
    }
    focusOn(again || fallback(fresh));
  }

  // One short line in a status region. The same line again is still said: the region is
  // emptied first, since a screen reader hears a change, not a write.
  function say(region, text) {
    if (!region || !text) {
      return;
    }
    if (region.textContent !== text) {
      region.textContent = text;
      return;
    }
    region.textContent = "";
    window.setTimeout(function () {
      region.textContent = text;
    }, 150);
  }

  A.focusOn = focusOn;
  A.replaceKeepingFocus = replaceKeepingFocus;
  A.say = say;
  A.detailMessage = detailMessage;
  A.postJson = postJson;
  A.parseFragment = parseFragment;
  A.localiseTimes = localiseTimes;
  A.responseMessage = responseMessage;
  A.apiRequest = apiRequest;
  A.apiProblem = apiProblem;
  A.formatCost = formatCost;
  A.formatTokens = formatTokens;
  A.baseTitle = baseTitle;
  A.refreshBadge = refreshBadge;
  A.notify = notify;
  A.interruptTurn = interruptTurn;
  A.turnActive = turnActive;
})();
