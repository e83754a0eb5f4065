// The Devices page (templates/devices.html): once a phone redeems a pairing, reload so the
// desktop sees "Pair '<name>'?" with Allow and Refuse.
(function () {
  "use strict";
  var list = document.getElementById("pairings-waiting");
  if (!list) {
    return;
  }
  var shown = list.getAttribute("data-ids") || "";
  function poll() {
    fetch("/api/pairings", { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (rows) {
        if (rows) {
          var ids = rows.map(function (row) { return row.id; }).join(" ");
          if (ids !== shown) {
            window.location.replace("/devices");
            return;
          }
        }
        window.setTimeout(poll, 1500);
      }, function () { window.setTimeout(poll, 3000); });
  }
  window.setTimeout(poll, 1500);
})();
