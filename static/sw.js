// Angelia's service worker: shows a Web Push as a notification, and opens its session when
// the notification is tapped. No offline cache: the page is always the server's.
// Every push shows a notification (iOS revokes a subscription whose pushes show nothing).
"use strict";

// The notification for one push's payload ({kind, session_id, title, body, url}).
function noticeFor(data) {
  // Only a path of this app: "//host" or "/\\host" would open another site.
  var url = typeof data.url === "string" && /^\/(?![\/\\])/.test(data.url) ? data.url : "/";
  return {
    title: String(data.title || "Angelia"),
    options: {
      body: String(data.body || ""),
      // One notification per session: a newer one replaces it.
      tag: "angelia-" + String(data.session_id || "app"),
      renotify: true,
      data: { url: url, kind: String(data.kind || "") },
    },
  };
}

// Where a tap goes: a window already on that page (focused), else a new one.
function openOrFocus(windows, url, open) {
  for (var i = 0; i < windows.length; i += 1) {
    var path = new URL(windows[i].url).pathname;
    if (path === url && "focus" in windows[i]) {
      return windows[i].focus();
    }
  }
  return open(url);
}

self.addEventListener("push", function (event) {
  var data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (err) {
    data = {};
  }
  var notice = noticeFor(data);
  event.waitUntil(self.registration.showNotification(notice.title, notice.options));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var url = (event.notification.data && event.notification.data.url) || "/";
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
      return openOrFocus(windows, url, function (to) {
        return self.clients.openWindow(to);
      });
    })
  );
});
