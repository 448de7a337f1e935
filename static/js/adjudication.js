// Adjudication, keyboard first, with the keymap every deciding screen shares
// (annotator/selectors/keymap.py, read through static/js/keymap.js): a digit adds the selected
// words (snapped to whole words) with that label, j / k walk the candidates, a keeps and r drops
// the focused one and move on, u undoes, Enter saves, Shift+Enter saves confirming that marked text
// left out is not PII, c writes a reply, Esc leaves a text box, clears the selection, then the focus.
// Without JavaScript the same form works with checkboxes and the "add by offsets" fields.
(function () {
  "use strict";
  var WORD = /[\p{L}\p{M}\p{N}_'’@.\-]/u;
  // Spaces, sentence punctuation and quotes at a selection's ends name nobody: they stay out (as
  // the workspace's snapping does, annotator/services/workspace.py).
  var EDGE = /[\s?!.,;:…"“”«»¿¡]/u;

  // Offsets come from the runs the server rendered with their code-point offsets
  // (static/js/offsets.js), never from textContent, which lost the message's CRs and counts UTF-16
  // units; snapping walks the stored text one code point at a time.
  // A selection dragged past the message's ends is clipped to the message.
  function selection(target) {
    var off = window.blindspotOffsets.selection(target);
    if (!off) return null;
    var text = window.blindspotOffsets.chars(target), s = off.start, e = off.end;
    while (s > 0 && WORD.test(text[s - 1]) && WORD.test(text[s])) s--;
    while (e < text.length && WORD.test(text[e - 1]) && WORD.test(text[e])) e++;
    while (s < e && EDGE.test(text[s])) s++;
    while (e > s && EDGE.test(text[e - 1])) e--;
    if (s >= e) return null;
    return { start: s, end: e, text: text.slice(s, e).join("") };
  }

  function addCandidate(list, span, label, color) {
    var empty = list.querySelector("[data-empty]");
    if (empty) empty.remove();
    var li = document.createElement("li");
    li.className = "added";
    var lab = document.createElement("label");
    var box = document.createElement("input");
    box.type = "checkbox"; box.name = "span"; box.checked = true;
    box.value = span.start + ":" + span.end + ":" + label;
    var mark = document.createElement("mark");
    mark.style.setProperty("--c", color || "#fde68a");
    mark.textContent = span.text;
    var tag = document.createElement("span"); tag.className = "tag"; tag.textContent = label;
    mark.appendChild(tag);
    var who = document.createElement("span"); who.className = "muted small"; who.textContent = "added by you";
    lab.append(box, " ", mark, " ", who);
    li.appendChild(lab);
    list.appendChild(li);
    return li;
  }

  function init() {
    var form = document.getElementById("adj-form");
    var target = document.getElementById("adj-target");
    var list = document.getElementById("adj-candidates");
    if (!form || !target || !list) return;
    var KEYS = window.blindspotKeys.load("adj-keymap");
    var colors = JSON.parse(document.getElementById("adj-colors").textContent);
    var focus = null, undo = [];
    function toast(msg) { if (window.blindspotToast) window.blindspotToast(msg, false); }
    function items() { return Array.prototype.slice.call(list.querySelectorAll("li:not([data-empty])")); }
    function setFocus(li) {
      items().forEach(function (el) { el.classList.remove("focused"); });
      focus = li || null;
      if (focus) { focus.classList.add("focused"); focus.scrollIntoView({ block: "nearest" }); }
    }
    function move(dir) {
      var all = items(), i = all.indexOf(focus);
      if (!all.length) return;
      setFocus(all[i < 0 ? (dir > 0 ? 0 : all.length - 1) : (i + dir + all.length) % all.length]);
    }
    function decide(keep) {
      var li = focus || items()[0];
      if (!li) { toast("No candidate span to " + (keep ? "keep." : "drop.")); return; }
      var box = li.querySelector("input[type=checkbox]"), was = box.checked;
      box.checked = keep;
      undo.push(function () { box.checked = was; setFocus(li); });
      var all = items(), next = all[all.indexOf(li) + 1];
      setFocus(next || null);
    }
    function addSpan(label) {
      var span = selection(target);
      if (!span) { toast("Select words in the highlighted message first, then press a label key."); return; }
      var li = addCandidate(list, span, label, colors[label]);
      window.getSelection().removeAllRanges();
      undo.push(function () { li.remove(); if (focus === li) setFocus(null); });
    }
    function submit(confirm) {
      var box = document.getElementById("adj-confirm-drop");
      if (confirm && box) box.checked = true;
      form.requestSubmit();
    }
    var HANDLERS = {
      "focus-next": function () { move(1); },
      "focus-prev": function () { move(-1); },
      "accept": function () { decide(true); },
      "reject": function () { decide(false); },
      "comment": function () { document.getElementById("adj-reply").focus(); },
      "undo": function () { var last = undo.pop(); if (last) last(); else toast("Nothing to undo."); },
      "submit": function () { submit(false); },
      "submit-confirm": function () { submit(true); },
      "help": function () { window.blindspotKeys.open("adj-help"); },
      "escape": function () {
        if (selection(target)) window.getSelection().removeAllRanges(); else setFocus(null);
      }
    };
    document.addEventListener("keydown", function (ev) {
      if (ev.defaultPrevented || ev.isComposing || document.querySelector("dialog[open]")) return;
      var el = ev.target;
      if (el.closest && el.closest("textarea, input:not([type=checkbox]), select")) {
        if (ev.key === "Escape") { el.blur(); ev.preventDefault(); }
        else if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && el.tagName === "TEXTAREA") {
          ev.preventDefault(); submit(false);
        }
        return;
      }
      if (ev.key === "Enter" && el.closest && el.closest("button, a, summary")) return;
      var id = window.blindspotKeys.id(ev);
      if (!id) return;
      var label = KEYS.labels[id], action = KEYS.commands[id];
      if (label) { ev.preventDefault(); addSpan(label); }
      else if (action && HANDLERS[action]) { ev.preventDefault(); HANDLERS[action](); }
    });
    list.addEventListener("click", function (ev) {
      var li = ev.target.closest && ev.target.closest("li:not([data-empty])");
      if (li) setFocus(li);
    });
    form.dataset.ready = "1";  // the shortcuts are bound: keys pressed from now on are handled
  }
  document.addEventListener("DOMContentLoaded", init);
})();
