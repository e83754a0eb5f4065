// Web Push for this browser: "Notify me" subscribes it (from the tap itself, as iOS
// requires) through the service worker at /sw.js and hands the subscription to the server.
(function () {
  "use strict";

  var A = window.Angelia;

  function supported() {
    return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
  }

  // The server's key (base64url) as the bytes PushManager wants.
  function keyBytes(text) {
    var b64 = text.replace(/-/g, "+").replace(/_/g, "/");
    var raw = window.atob(b64 + "===".slice((b64.length + 3) % 4));
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i += 1) {
      bytes[i] = raw.charCodeAt(i);
    }
    return bytes;
  }

  // Resolves to "" once the server has this browser's subscription, else to why not.
  function subscribe() {
    if (!supported()) {
      return Promise.resolve("This browser cannot receive push notifications.");
    }
    var registration;
    return navigator.serviceWorker
      .register("/sw.js", { scope: "/" })
      .then(function () {
        return navigator.serviceWorker.ready;
      })
      .then(function (ready) {
        registration = ready;
        return A.apiRequest("GET", "/api/push/key");
      })
      .then(function (resp) {
        return resp.json();
      })
      .then(function (data) {
        return registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: keyBytes(data.public_key),
        });
      })
      .then(function (subscription) {
        var body = subscription.toJSON();
        return A.postJson(
          "/api/push/subscriptions",
          { endpoint: body.endpoint, keys: body.keys },
          "Notifications could not be turned on."
        );
      })
      .then(function (result) {
        return result.ok ? "" : result.message;
      })
      .catch(function (err) {
        return "Notifications could not be turned on: " + String((err && err.message) || err);
      });
  }

  // Whether this browser still has to subscribe (no push subscription yet).
  function needed() {
    if (!supported() || Notification.permission === "denied") {
      return Promise.resolve(false);
    }
    return navigator.serviceWorker.getRegistration("/").then(function (registration) {
      if (!registration) {
        return true;
      }
      return registration.pushManager.getSubscription().then(function (sub) {
        return !sub;
      });
    });
  }

  // iOS offers push only to a site added to the Home Screen (16.4 and later): Safari's tab
  // has no Notification at all, so there the button says how to get there instead.
  function needsHomeScreen() {
    var ios = /iP(hone|ad|od)/.test(navigator.userAgent) ||
      (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1);
    return ios && navigator.standalone !== true && !("Notification" in window);
  }

  function showHomeScreenHint(button) {
    var hint = document.getElementById("home-screen-hint");
    if (!hint) {
      return;
    }
    button.hidden = false;
    button.setAttribute("aria-expanded", "false");
    button.setAttribute("aria-controls", hint.id);
    button.addEventListener("click", function () {
      var open = hint.hidden;
      hint.hidden = !open;
      button.setAttribute("aria-expanded", String(open));
    });
  }

  A.pushSupported = supported;
  A.needsHomeScreen = needsHomeScreen;
  A.showHomeScreenHint = showHomeScreenHint;
  A.subscribePush = subscribe;
  A.pushNeeded = needed;
})();
