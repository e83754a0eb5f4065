// The phone's pairing page (templates/pair.html): takes the secret from the URL's fragment
// (never sent in a request line), clears it from the address bar and history, sends it
// (or the typed code) with the device's name, then waits for the computer's Allow.
(function () {
  "use strict";
  var secret = null;
  var match = /^#s=([A-Za-z0-9_-]{20,100})$/.exec(window.location.hash);
  if (match) {
    secret = match[1];
  }
  if (window.location.hash) {
    history.replaceState(null, "", window.location.pathname);
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body),
    }).then(function (r) {
      return r.json().then(function (data) {
        return { ok: r.ok, data: data };
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("pair-form");
    var status = document.getElementById("pair-status");
    var submit = document.getElementById("pair-submit");
    if (secret) {
      document.getElementById("pair-from-link").hidden = false;
      document.getElementById("pair-code-row").hidden = true;
    }
    function say(text) {
      status.textContent = text;
    }
    function wait(waiting) {
      post("/api/pairings/redeem/status", { waiting: waiting }).then(
        function (r) {
          var state = r.ok ? r.data.state : "refused";
          if (state === "allowed") {
            say("Paired. Opening Angelia…");
            window.location.replace("/");
          } else if (state === "asked") {
            window.setTimeout(function () { wait(waiting); }, 1000);
          } else {
            say("The computer refused this device, or the pairing ended. Make a new one there.");
            submit.disabled = false;
          }
        },
        function () {
          window.setTimeout(function () { wait(waiting); }, 2000);
        }
      );
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var name = document.getElementById("pair-name").value;
      var body = { name: name };
      if (secret) {
        body.secret = secret;
      } else {
        body.code = document.getElementById("pair-code").value;
      }
      submit.disabled = true;
      post("/api/pairings/redeem", body).then(
        function (r) {
          if (!r.ok) {
            var detail = typeof r.data.detail === "string" ? r.data.detail : "This pairing did not work.";
            say(detail);
            secret = null;
            document.getElementById("pair-code-row").hidden = false;
            submit.disabled = false;
            return;
          }
          say("Waiting: on the computer where Angelia runs, allow '" + name + "' on the Devices page.");
          wait(r.data.waiting);
        },
        function () {
          say("Angelia could not be reached. Try again.");
          submit.disabled = false;
        }
      );
    });
  });
})();
