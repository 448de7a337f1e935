// Selections <-> stored offsets, for the workspace and adjudication pages.
//
// The server renders a message as runs, <span class="run" data-from data-to>, carrying the
// code-point offsets of their text (annotator/rendering.py). The DOM text is not the stored text:
// the HTML parser turned CRLF and CR into LF and dropped NUL (those characters come as "ctl" runs
// with a stand-in), and JavaScript counts UTF-16 units where the server counts code points. So an
// offset is always a run's own offset plus the code points before the point inside that run, never
// a count over textContent.
(function () {
  "use strict";

  function runs(root) { return Array.prototype.slice.call(root.querySelectorAll(".run[data-from]")); }
  function from(run) { return Number(run.dataset.from); }
  function to(run) { return Number(run.dataset.to); }
  function opaque(run) { return run.classList.contains("ctl"); }

  // The stored offset of the DOM boundary point (node, offset) inside root.
  function offsetAt(root, node, offset) {
    var el = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    var run = el && el.closest(".run[data-from]");
    if (run && root.contains(run)) {
      var pre = document.createRange();
      pre.selectNodeContents(run);
      pre.setEnd(node, offset);
      var before = pre.toString();
      if (opaque(run)) return before.length ? to(run) : from(run);  // a stand-in is taken whole or not at all
      return Math.min(to(run), from(run) + Array.from(before).length);
    }
    // Between elements, or inside a label tag: the offset of the first run at or after the point.
    var at = document.createRange();
    at.setStart(node, offset);
    var all = runs(root);
    for (var i = 0; i < all.length; i++) if (at.comparePoint(all[i], 0) >= 0) return from(all[i]);
    return all.length ? to(all[all.length - 1]) : 0;
  }

  // The DOM point of a stored offset (to put a selection back). Where two runs meet, an end point
  // stays in the earlier run and a start point goes to the later one, so neither takes in a label tag.
  function pointAt(root, cp, isEnd) {
    var all = runs(root), last = null;
    for (var i = 0; i < all.length; i++) {
      var t = all[i].firstChild;
      if (!t) continue;
      last = t;
      if (cp > to(all[i]) || (cp === to(all[i]) && !isEnd)) continue;
      if (cp <= from(all[i])) return { node: t, offset: 0 };
      if (opaque(all[i])) return { node: t, offset: t.data.length };
      return { node: t, offset: Array.from(t.data).slice(0, cp - from(all[i])).join("").length };
    }
    return last ? { node: last, offset: last.data.length } : { node: root, offset: 0 };
  }

  // The stored text as an array with one string per code point. A stand-in gives back its CR or
  // CRLF; any other control character comes back as "\u0000", which is all that snapping needs.
  function chars(root) {
    var out = [];
    runs(root).forEach(function (run) {
      var cs = opaque(run) ? (run.textContent === "\n" ? ["\r", "\n"] : ["\u0000"]) : Array.from(run.textContent);
      for (var i = from(run); i < to(run); i++) out[i] = cs[Math.min(i - from(run), cs.length - 1)];
    });
    for (var j = 0; j < out.length; j++) if (out[j] === undefined) out[j] = "\u0000";
    return out;
  }

  // The current selection as stored offsets, clipped to root; null when it holds nothing of root.
  function selection(root) {
    var sel = window.getSelection();
    if (!root || !sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    var r = sel.getRangeAt(0), all = runs(root);
    if (!all.length || !r.intersectsNode(root)) return null;
    var s = root.contains(r.startContainer) ? offsetAt(root, r.startContainer, r.startOffset) : from(all[0]);
    var e = root.contains(r.endContainer) ? offsetAt(root, r.endContainer, r.endOffset) : to(all[all.length - 1]);
    return e > s ? { start: s, end: e } : null;
  }

  function select(root, start, end) {
    var a = pointAt(root, start, false), b = pointAt(root, end, true), r = document.createRange();
    r.setStart(a.node, a.offset);
    r.setEnd(b.node, b.offset);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(r);
  }

  window.blindspotOffsets = { offsetAt: offsetAt, pointAt: pointAt, chars: chars, selection: selection, select: select };
})();
