// Keyboard shortcuts of the BQAS review page (no dependencies, no network).
// Queue: j/k move the selection, Enter or o opens it. Item: j/k next/previous item, 1/2/3 verdict,
// a confirm every judge value, s save, d dismiss, u back to the queue. Esc leaves a text field; ? toggles the help.
(function () {
  "use strict";
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && el.type !== "radio" && el.type !== "checkbox") || el.isContentEditable;
  }
  function follow(id) {
    var link = document.getElementById(id);
    if (link) window.location.href = link.href;
  }
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.row"));
  var selected = rows.length ? 0 : -1;
  function select(i) {
    if (!rows.length) return;
    selected = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r, n) { r.classList.toggle("sel", n === selected); });
    rows[selected].scrollIntoView({ block: "nearest" });
  }
  if (rows.length) select(0);
  rows.forEach(function (r, n) {
    r.addEventListener("click", function (ev) {
      if (ev.target.tagName === "A") return;
      select(n);
      window.location.href = r.getAttribute("data-href");
    });
  });
  var form = document.getElementById("review-form");
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "Escape") {
      if (document.activeElement) document.activeElement.blur();
      document.getElementById("help").classList.remove("show");
      return;
    }
    if (typing(ev.target)) return;
    var key = ev.key;
    if (key === "?") { document.getElementById("help").classList.toggle("show"); ev.preventDefault(); return; }
    if (form) {
      if (key === "j") { follow("next"); ev.preventDefault(); }
      else if (key === "k") { follow("prev"); ev.preventDefault(); }
      else if (key === "u") { follow("back"); ev.preventDefault(); }
      else if (key === "1" || key === "2" || key === "3") {
        var radio = form.querySelector('input[name="verdict"][data-key="' + key + '"]');
        if (radio) { radio.checked = true; radio.focus(); }
        ev.preventDefault();
      } else if (key === "a") {
        // Tick every "confirm judge's value" box; if all are ticked already, untick them.
        var boxes = Array.prototype.slice.call(form.querySelectorAll('input[type="checkbox"][name^="confirm_"]'));
        var all = boxes.length && boxes.every(function (b) { return b.checked; });
        boxes.forEach(function (b) { b.checked = !all; });
        ev.preventDefault();
      } else if (key === "s") { document.getElementById("save").click(); ev.preventDefault(); }
      else if (key === "d") { document.getElementById("dismiss").click(); ev.preventDefault(); }
      return;
    }
    if (rows.length) {
      if (key === "j") { select(selected + 1); ev.preventDefault(); }
      else if (key === "k") { select(selected - 1); ev.preventDefault(); }
      else if (key === "Enter" || key === "o") { window.location.href = rows[selected].getAttribute("data-href"); ev.preventDefault(); }
    }
  });
})();
