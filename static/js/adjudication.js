// Adjudication workspace, keyboard first: 1-9 keep or drop a candidate, select text in the target
// message and press a label key to add a span (snapped to whole words), Enter saves, Shift+Enter
// saves confirming that marked text left out is not PII, Esc clears.
// Without JavaScript the same form works with checkboxes and the "add by offsets" fields.
(function () {
  var WORD = /[\p{L}\p{M}\p{N}_'’@.\-]/u;

  // Offsets come from the runs the server rendered with their code-point offsets
  // (static/js/offsets.js), never from textContent, which lost the message's CRs and counts UTF-16
  // units; snapping walks the stored text one code point at a time.
  function selection(target) {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    var r = sel.getRangeAt(0);
    if (!target.contains(r.startContainer) || !target.contains(r.endContainer)) return null;
    var off = window.blindspotOffsets.selection(target);
    if (!off) return null;
    var text = window.blindspotOffsets.chars(target), s = off.start, e = off.end;
    while (s > 0 && WORD.test(text[s - 1]) && WORD.test(text[s])) s--;
    while (e < text.length && WORD.test(text[e - 1]) && WORD.test(text[e])) e++;
    while (s < e && /\s/.test(text[s])) s++;
    while (e > s && /\s/.test(text[e - 1])) e--;
    if (s >= e) return null;
    return { start: s, end: e, text: text.slice(s, e).join("") };
  }

  function addCandidate(list, span, label) {
    var empty = list.querySelector("[data-empty]");
    if (empty) empty.remove();
    var n = list.querySelectorAll("li").length + 1;
    var li = document.createElement("li");
    li.className = "added";
    li.dataset.i = String(n);
    var lab = document.createElement("label");
    var box = document.createElement("input");
    box.type = "checkbox"; box.name = "span"; box.checked = true;
    box.value = span.start + ":" + span.end + ":" + label.label;
    var kbd = document.createElement("kbd"); kbd.textContent = n <= 9 ? String(n) : "";
    var mark = document.createElement("mark");
    mark.style.setProperty("--c", label.color || "#fde68a");
    mark.textContent = span.text;
    var tag = document.createElement("span"); tag.className = "tag"; tag.textContent = label.label;
    mark.appendChild(tag);
    var who = document.createElement("span"); who.className = "muted small"; who.textContent = "added by you";
    lab.append(box, " ", kbd, " ", mark, " ", who);
    li.appendChild(lab);
    list.appendChild(li);
  }

  function init() {
    var form = document.getElementById("adj-form");
    var target = document.getElementById("adj-target");
    var list = document.getElementById("adj-candidates");
    var data = document.getElementById("adj-labels");
    if (!form || !target || !list || !data) return;
    var labels = JSON.parse(data.textContent);
    document.addEventListener("keydown", function (ev) {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (ev.target.closest && ev.target.closest("textarea, input:not([type=checkbox]), select")) return;
      if (ev.key === "Enter") {
        ev.preventDefault();
        var confirm = document.getElementById("adj-confirm-drop");
        if (confirm && ev.shiftKey) confirm.checked = true;
        form.requestSubmit();
        return;
      }
      if (ev.key === "Escape") { window.getSelection().removeAllRanges(); return; }
      if (/^[1-9]$/.test(ev.key)) {
        var box = list.querySelector('li[data-i="' + ev.key + '"] input[type=checkbox]');
        if (box) { box.checked = !box.checked; ev.preventDefault(); }
        return;
      }
      var key = ev.key.toLowerCase();
      for (var i = 0; i < labels.length; i++) {
        if (labels[i].key === key) {
          var span = selection(target);
          if (span) {
            addCandidate(list, span, labels[i]);
            window.getSelection().removeAllRanges();
            ev.preventDefault();
          } else if (window.blindspotToast) {
            window.blindspotToast("Select words in the highlighted message first, then press a label key.", false);
          }
          return;
        }
      }
    });
  }
  document.addEventListener("DOMContentLoaded", init);
})();
