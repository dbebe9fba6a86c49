// Refreshes <main> in place every data-refresh seconds: no page reload, so the scroll
// position stays; skipped while the tab is hidden or while a box is ticked or a field is
// being typed in (a refresh must never drop a selection).
(function () {
  "use strict";
  var seconds = parseFloat(document.body.getAttribute("data-refresh") || "0");
  if (!(seconds > 0)) { return; }
  function busy() {
    var main = document.getElementById("main");
    if (!main) { return true; }
    if (main.querySelector("input:checked")) { return true; }
    var active = document.activeElement;
    return active && active.tagName === "INPUT" && main.contains(active);
  }
  function refresh() {
    if (document.hidden || busy()) { return; }
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Refresh": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null || busy()) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("main");
        var main = document.getElementById("main");
        if (fresh && main) { main.innerHTML = fresh.innerHTML; }
      })
      .catch(function () { /* the next tick tries again */ });
  }
  window.setInterval(refresh, seconds * 1000);
}());
