// Keyboard shortcuts for the triage loop; the pages work without them.
// j/k: next/previous row, x: mark it, o or Enter: open it, /: search, n: more.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("table.list tbody tr[data-href]"));
  var cur = -1;
  function move(i) {
    if (!rows.length) return;
    if (cur >= 0) rows[cur].classList.remove("cur");
    cur = Math.max(0, Math.min(rows.length - 1, i));
    rows[cur].classList.add("cur");
    rows[cur].scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (t === "INPUT" || t === "TEXTAREA" || t === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) return;
    var el;
    switch (e.key) {
      case "j": move(cur + 1); break;
      case "k": move(cur - 1); break;
      case "x":
        if (cur < 0) return;
        el = rows[cur].querySelector("input[type=checkbox]");
        if (el) el.checked = !el.checked;
        break;
      case "o": case "Enter":
        if (cur < 0) return;
        window.location.assign(rows[cur].getAttribute("data-href"));
        break;
      case "/":
        el = document.getElementById("q");
        if (el) el.focus();
        break;
      case "n":
        el = document.getElementById("next");
        if (el) window.location.assign(el.href);
        break;
      default: return;
    }
    e.preventDefault();
  });
})();
