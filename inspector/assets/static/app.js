// hookback inspector: live rows (server-sent events), keyboard navigation and
// replay without leaving the page. Everything works without it, but live.
"use strict";

(function () {
  function liveRows() {
    var table = document.getElementById("reviews");
    if (!table || table.dataset.live !== "true" || !window.EventSource) return;
    var rows = document.getElementById("rows");
    var empty = document.getElementById("empty");
    var live = document.getElementById("live");
    var older = document.getElementById("older");
    // One page of rows: new ones push the oldest onto the next page.
    var keep = parseInt(table.dataset.keep, 10) || 100;
    var q = table.dataset.query;
    var src = new EventSource("/stream?after=" + encodeURIComponent(table.dataset.after) + (q ? "&" + q : ""));
    src.onopen = function () { live.textContent = "live"; live.classList.add("on"); };
    src.onerror = function () { live.textContent = "reconnecting\u2026"; live.classList.remove("on"); };
    // Rows that arrive together go in together, once per frame: at a
    // hundred admissions a second, one insert per event would keep the
    // browser laying out the table all the time, and its CPU is the
    // machine's that hookback answers the apiserver with.
    var pending = [];
    var fresh = [];
    function flush() {
      var html = pending.reverse().join("");
      pending = [];
      for (var i = 0; i < fresh.length; i++) fresh[i].classList.remove("fresh");
      var before = rows.children.length;
      rows.insertAdjacentHTML("afterbegin", html);
      var added = rows.children.length - before;
      fresh = Array.prototype.slice.call(rows.children, 0, Math.min(added, 20));
      for (var j = 0; j < fresh.length; j++) fresh[j].classList.add("fresh");
      if (rows.children.length > keep) {
        var cut = document.createRange();
        cut.setStartBefore(rows.children[keep]);
        cut.setEndAfter(rows.lastElementChild);
        cut.deleteContents();
        if (older) {
          older.href = "/?before=" + encodeURIComponent(rows.lastElementChild.dataset.id) + (q ? "&" + q : "");
          older.hidden = false;
        }
      }
      if (empty) empty.hidden = true;
    }
    // A review on the page changed (its comparison with the deployed
    // webhook came in): its row is replaced where it is.
    src.addEventListener("update", function (ev) {
      var t = document.createElement("template");
      t.innerHTML = ev.data;
      var tr = t.content.firstElementChild;
      var old = tr && rows.querySelector('tr[data-id="' + tr.dataset.id + '"]');
      if (old) old.replaceWith(tr);
      else if (tr) for (var i = 0; i < pending.length; i++) {
        // Still waiting for its frame: send the newer one in its place.
        if (pending[i].indexOf('data-id="' + tr.dataset.id + '"') >= 0) pending[i] = ev.data;
      }
    });
    src.addEventListener("review", function (ev) {
      // The row is HTML rendered (and escaped) by the server's template.
      if (!pending.length) window.requestAnimationFrame(flush);
      pending.push(ev.data);
      // A hidden tab runs no frames: keep only what the list would show.
      if (pending.length > keep) pending.splice(0, pending.length - keep);
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
