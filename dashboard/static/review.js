// The review page's live queue: every access-request event from the
// server-sent stream updates or inserts its row. Everything an event carries
// was written by a sandbox or a tenant: it is only ever set as text.
(function () {
  "use strict";
  var table = document.getElementById("queue");
  if (!table || table.dataset.live !== "1" || !window.EventSource) return;
  var body = table.tBodies[0];
  var empty = document.getElementById("q-empty");
  var tmpl = document.getElementById("q-row");

  function text(row, cls, s) { row.querySelector(cls).textContent = s; }
  function list(v, none) { return v && v.length ? v.join(",") : none; }
  function time(s) { return s ? s.replace("T", " ").replace(/\.\d+/, "").replace("Z", "Z") : ""; }

  function fill(row, ev) {
    var who = ev.tenant + (ev.class ? " / " + ev.class : "") + (ev.run ? " / " + ev.run : "");
    text(row, ".c-time", time(ev.created_at));
    text(row, ".c-who", who);
    text(row, ".c-host", ev.host);
    text(row, ".c-what", list(ev.ports, "default") + " · " + list(ev.methods, "any") + " · " + list(ev.paths, "any"));
    text(row, ".c-reason", ev.justification);
    var held = (ev.held ? ev.held + " held" : "") + (ev.joined > 1 ? " · " + ev.joined + " filings" : "");
    text(row, ".c-held", held);
    var form = row.querySelector("form");
    if (form) {
      form.action = "/review/" + encodeURIComponent(ev.id);
      var run = form.querySelector("option[value=run]");
      if (run) {
        run.disabled = !ev.run;
        if (ev.run) run.selected = true; else form.querySelector("option[value=class]").selected = true;
      }
    }
  }

  function onEvent(e) {
    var ev;
    try { ev = JSON.parse(e.data); } catch (_) { return; }
    if (!ev || typeof ev.id !== "string") return;
    var row = document.getElementById("q-" + ev.id);
    if (ev.state !== "pending") {
      if (row) row.remove();
    } else {
      if (!row) {
        row = tmpl.content.firstElementChild.cloneNode(true);
        row.id = "q-" + ev.id;
        row.dataset.id = ev.id;
        row.classList.add("fresh");
        body.insertBefore(row, body.firstChild);
      }
      if (row.querySelector(".c-host")) fill(row, ev);
      else {
        // A server-rendered row: only the counters change.
        var cells = row.cells;
        cells[5].textContent = (ev.held ? ev.held + " held" : "") + (ev.joined > 1 ? " · " + ev.joined + " filings" : "");
      }
    }
    empty.hidden = body.querySelectorAll("tr[data-id]").length > 0;
  }

  var es = new EventSource("/api/access-requests/events");
  es.addEventListener("access", onEvent);
})();
