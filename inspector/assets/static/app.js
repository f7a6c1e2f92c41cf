// hookback inspector: live rows (server-sent events), keyboard navigation and
// replay without leaving the page. Everything works without it, but live.
"use strict";

(function () {
  function liveRows() {
    var table = document.getElementById("reviews");
    if (!table || !window.EventSource) return;
    var rows = document.getElementById("rows");
    var empty = document.getElementById("empty");
    var live = document.getElementById("live");
    var keep = parseInt(table.dataset.keep, 10) || 500;
    var q = table.dataset.query;
    var src = new EventSource("/stream?after=" + encodeURIComponent(table.dataset.after) + (q ? "&" + q : ""));
    src.onopen = function () { live.textContent = "live"; live.classList.add("on"); };
    src.onerror = function () { live.textContent = "reconnecting\u2026"; live.classList.remove("on"); };
    src.addEventListener("review", function (ev) {
      // The row is HTML rendered (and escaped) by the server's template.
      rows.insertAdjacentHTML("afterbegin", ev.data);
      var tr = rows.firstElementChild;
      if (tr) tr.classList.add("fresh");
      while (rows.children.length > keep) rows.removeChild(rows.lastElementChild);
      if (empty) empty.hidden = true;
    });
  }

  function keys() {
    document.addEventListener("keydown", function (ev) {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      var t = ev.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
      if (ev.key === "/") {
        var ns = document.getElementById("namespace");
        if (ns) { ev.preventDefault(); ns.focus(); ns.select(); }
        return;
      }
      if (ev.key !== "j" && ev.key !== "k") return;
      var links = Array.prototype.slice.call(document.querySelectorAll("#rows a.open"));
      if (!links.length) return;
      var i = links.indexOf(document.activeElement);
      i = ev.key === "j" ? Math.min(i + 1, links.length - 1) : Math.max(i - 1, 0);
      links[i].focus();
      ev.preventDefault();
    });
  }

  function replay() {
    var form = document.getElementById("replay");
    var out = document.getElementById("replay-out");
    if (!form || !out || !window.fetch) return;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var button = form.querySelector("button");
      button.disabled = true;
      out.textContent = "Replaying\u2026";
      fetch(form.action, { method: "POST", headers: { "X-Hookback-Fragment": "1" } })
        .then(function (r) { return r.text(); })
        .then(function (html) { out.innerHTML = html; })
        .catch(function (err) { out.textContent = "Replay failed: " + err; })
        .finally(function () { button.disabled = false; });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    liveRows();
    keys();
    replay();
  });
})();
