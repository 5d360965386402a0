(function () {
  "use strict";
  var errors = [];
  var blocked = [];
  function show() {
    var b = document.body;
    if (!b) return;
    b.setAttribute("data-errors", errors.join(" | "));
    b.setAttribute("data-blocked", blocked.join(" | "));
  }
  window.onerror = function (message, source, line) {
    errors.push(String(message) + " (line " + line + ")");
    show();
    return false;
  };
  document.addEventListener("securitypolicyviolation", function (e) {
    blocked.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
    show();
  });
  // A numeric cell's key, or null for a figure not measured (data-v=""
  // or no number in the text), which sorts last either way.
  function key(cell, numeric) {
    var v = cell.getAttribute("data-v");
    if (numeric) {
      var x = parseFloat(v !== null ? v : cell.textContent);
      return isNaN(x) ? null : x;
    }
    return (v !== null ? v : cell.textContent).toLowerCase();
  }
  function sortBy(th) {
    var table = th.closest("table");
    var body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.classList.contains("num");
    var asc = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
      if (x === null || y === null) return (x === null) - (y === null);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable thead th").forEach(function (th) {
      th.addEventListener("click", function () { sortBy(th); });
    });
    var b = document.body;
    b.setAttribute("data-svg-count", String(document.querySelectorAll("svg").length));
    b.setAttribute("data-table-rows", String(document.querySelectorAll("tbody tr").length));
    show();
  });
})();
