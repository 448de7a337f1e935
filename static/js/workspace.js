// The annotation workspace: keyboard shortcuts, selection → character offsets, one queued round
// trip per action (the server answers with the item fragment, swapped in by htmx), a visible
// saving state, failed requests that keep the annotator's work, and active-time tracking.
(function () {
  "use strict";
  var ws = document.getElementById("ws");
  if (!ws) return;

  var IDLE_MS = 60000;        // no input for a minute: the annotator is away, stop counting
  var HEARTBEAT_MS = 30000;   // report active time even when nothing else is sent
  var WORD = /[\p{L}\p{M}\p{N}_]+(?:['’.,:/][\p{L}\p{M}\p{N}_]+)*/gu;

  var st = {
    chain: Promise.resolve(), busy: 0, blocked: false, leaving: false,
    exact: false, relabel: null, focus: null, caret: null, unsentMs: 0, itemMs: 0,
    lastInput: Date.now(), lastTick: Date.now()
  };

  function item() { return document.getElementById("item"); }
  function target() { return document.getElementById("target-text"); }
  function url(name) { return ws.dataset["url" + name]; }
  function csrf() {
    try { return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"]; } catch (e) { return ""; }
  }
  function toast(msg, ok) { if (window.blindspotToast) window.blindspotToast(msg, ok); }
  // The keymap comes from the server (annotator/selectors/keymap.py), the one definition the help
  // overlay and the docs are made from: key id → label, key id → action, action → its key's name.
  var KEYS = window.blindspotKeys.load("ws-keymap");
  function keyOf(action) { return KEYS.names[action]; }

  // ------------------------------------------------------------------ saving state
  function setState(state, text) {
    var el = document.getElementById("ws-state");
    if (!el) return;
    el.dataset.state = state;
    el.textContent = text;
  }
  function setMode() {
    var el = document.getElementById("ws-mode");
    if (!el) return;
    el.textContent = st.relabel ? "Press a label key for the new label (Esc cancels)" : st.exact ? "Exact characters for the next span" : "";
  }

  // ------------------------------------------------------------------ active time
  function activity() { st.lastInput = Date.now(); }
  ["keydown", "mousedown", "mousemove", "wheel", "touchstart", "scroll"].forEach(function (e) {
    document.addEventListener(e, activity, { passive: true, capture: true });
  });
  setInterval(function () {
    var now = Date.now(), dt = now - st.lastTick;
    st.lastTick = now;
    // Count only while the page is visible, the annotator did something within the idle limit,
    // and the clock did not jump (a sleeping laptop).
    if (document.visibilityState === "visible" && now - st.lastInput < IDLE_MS && dt < 5000 && !st.leaving) {
      st.unsentMs += dt;
      st.itemMs += dt;
    }
    var t = document.getElementById("ws-timer");
    if (t) t.textContent = Math.round(st.itemMs / 1000) + " s active";
  }, 1000);
  function takeActive() { var s = st.unsentMs / 1000; st.unsentMs = 0; return s; }
  function giveBack(s) { st.unsentMs += s * 1000; }
  setInterval(function () {
    if (st.busy || st.blocked || st.unsentMs < 1000) return;
    var s = takeActive(), body = new URLSearchParams({ active: s.toFixed(2) });
    fetch(url("Time"), { method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRFToken": csrf() } })
      .then(function (r) { if (!r.ok) giveBack(s); }, function () { giveBack(s); });
  }, HEARTBEAT_MS);
  window.addEventListener("pagehide", function () {
    if (st.unsentMs < 500 || !navigator.sendBeacon) return;
    var fd = new FormData();
    fd.append("csrfmiddlewaretoken", csrf());
    fd.append("active", takeActive().toFixed(2));
    navigator.sendBeacon(url("Time"), fd);
  });

  // ------------------------------------------------------------------ requests
  // Actions run one after another, each with the version the page holds when it is sent, so a
  // quick sequence of keys never conflicts with itself; a real conflict (another tab) stops the
  // queue and says so.
  // A submitted item is read-only until it is reopened (the server refuses edits too, 423).
  function readOnly() { return item() && item().dataset.status === "done"; }
  var READ_ONLY = "This item is submitted. Press " + keyOf("reopen") + " (Reopen) to change it.";
  function act(path, values, onFail) {
    if (st.blocked) {
      toast("This item changed in another tab. Reload the page to see the latest version.");
      return Promise.resolve(false);
    }
    if (readOnly() && path.indexOf("/reopen/") < 0) {
      toast(READ_ONLY, false);
      if (onFail) onFail();
      return Promise.resolve(false);
    }
    st.busy++;
    setState("saving", "Saving…");
    st.chain = st.chain.then(function () { return send(path, values || {}, onFail); });
    return st.chain;
  }

  function send(path, values, onFail) {
    var active = takeActive();
    var body = new URLSearchParams();
    Object.keys(values).forEach(function (k) { body.append(k, values[k]); });
    body.set("version", item().dataset.version);
    body.set("active", active.toFixed(2));
    return fetch(path, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "HX-Request": "true", "HX-Current-URL": location.href }
    }).then(function (r) {
      return r.text().then(function (text) {
        st.busy--;
        var redirect = r.headers.get("HX-Redirect");
        if (r.ok && redirect) {
          st.leaving = true;
          setState("saving", "Saved · opening the next item…");
          window.location.assign(redirect);
          return true;
        }
        if (r.ok) {
          var focus = st.focus, ta = document.getElementById("ws-comment");
          var typed = ta && ta.value !== ta.dataset.saved ? ta.value : null;  // unsaved comment text
          // text selected while this answer was on its way (not the span it adds) outlives the swap
          var kept = path !== url("SpanAdd") ? selectionOffsets() : null, kb = st.kb;
          htmx.swap(item(), text, { swapStyle: "outerHTML" });
          var nt = document.getElementById("ws-comment");
          if (typed !== null && nt && nt.dataset.saved !== typed) nt.value = typed;
          clearSelection();
          if (kept) { selectOffsets(kept.start, kept.end); st.kb = kb; }
          st.exact = false;
          setMode();
          restoreFocus(focus);
          // "Saved" only once nothing is queued behind this answer: each answer swaps the item
          // (and drops a selection made meanwhile), so "Saved" means no swap is still to come
          setState(st.busy ? "saving" : "saved", st.busy ? "Saving…" : "Saved");
          return true;
        }
        giveBack(active);
        var plain = (r.headers.get("Content-Type") || "").indexOf("text/plain") === 0;
        var msg = plain && text ? text : (window.blindspotHeaderText(r.headers.get("X-Blindspot-Error")) ||
          "The server answered " + r.status + ". Your work on this page is kept; try again.");
        if (r.status === 409) {
          st.blocked = true;
          setState("error", "Changed in another tab — reload");
        } else {
          setState(st.busy ? "saving" : "error", st.busy ? "Saving…" : "Not saved");
        }
        toast(msg, false);
        if (onFail) onFail();
        return false;
      });
    }, function () {
      st.busy--;
      giveBack(active);
      setState("error", "Offline — not saved");
      toast("Cannot reach the server. Your work on this page is kept; try again when you are back online.", false);
      if (onFail) onFail();
      return false;
    });
  }

  // Every button of the fragment is a real form (it works without JavaScript); here it becomes
  // one queued request that swaps the fragment.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.matches || !f.matches("#ws form[data-act]")) return;
    e.preventDefault();
    var values = {};
    new FormData(f).forEach(function (v, k) { if (k !== "csrfmiddlewaretoken" && k !== "version") values[k] = v; });
    if (f.dataset.cmd === "submit" || f.dataset.cmd === "skip") saveDirtyComment();
    if (f.dataset.cmd === "flag") {
      var ta = f.querySelector("textarea");
      act(f.action, values).then(function (ok) { if (ok && ta) sessionStorage.removeItem(draftKey()); });
      return;
    }
    act(f.action, values);
  });
  // A comment typed but not saved goes with the item when it is submitted or skipped.
  function saveDirtyComment() {
    var ta = document.getElementById("ws-comment");
    if (!ta || ta.value === ta.dataset.saved) return;
    var values = {};
    new FormData(ta.form).forEach(function (v, k) { if (k !== "csrfmiddlewaretoken" && k !== "version") values[k] = v; });
    act(ta.form.action, values).then(function (ok) { if (ok) sessionStorage.removeItem(draftKey()); });
  }
  function command(cmd, forKey) {
    var sel = "#item form[data-cmd='" + cmd + "']" + (forKey ? "[data-for='" + forKey + "']" : "");
    var f = document.querySelector(sel);
    if (!f) return false;
    var b = f.querySelector("button");
    if (b && b.disabled) return false;
    f.requestSubmit();
    return true;
  }

  // ------------------------------------------------------------------ selection ↔ offsets
  // Offsets are the server's code points, read from the runs it rendered (static/js/offsets.js):
  // the DOM text lost the message's CRs and counts UTF-16 units, so it is never counted here.
  function offsets() { return window.blindspotOffsets; }
  function selectionOffsets() { return offsets().selection(target()); }
  function selectOffsets(s, e) { if (target()) offsets().select(target(), s, e); }
  function clearSelection() {
    var sel = window.getSelection();
    if (sel && !sel.isCollapsed && target() && sel.rangeCount && sel.getRangeAt(0).intersectsNode(target())) sel.removeAllRanges();
    st.kb = null;  // the caret (st.caret) stays: → goes on after the last span
  }

  // Keyboard selection: → / ← select the next / previous word; Shift extends.
  function words() {
    var chars = offsets().chars(target()), text = chars.join(""), cp = [], out = [], m, i;
    for (i = 0; i < chars.length; i++) { cp.push(i); if (chars[i].length > 1) cp.push(i); }  // UTF-16 unit → code point
    cp.push(chars.length);
    WORD.lastIndex = 0;
    while ((m = WORD.exec(text))) out.push({ s: cp[m.index], e: cp[m.index + m[0].length] });
    return out;
  }
  // With nothing selected, → starts at the first word after the last span added (the caret), ←
  // at the last word before it; with no span yet, at the first / last word of the message.
  function firstWord(list, dir) {
    var c = st.caret, i;
    if (!c) return dir > 0 ? 0 : list.length - 1;
    if (dir > 0) { for (i = 0; i < list.length; i++) if (list[i].s >= c.e) return i; return list.length - 1; }
    for (i = list.length - 1; i >= 0; i--) if (list[i].e <= c.s) return i;
    return 0;
  }
  function moveWord(dir, extend) {
    var ws_ = words();
    if (!ws_.length) return;
    if (!st.kb) { var f = firstWord(ws_, dir); st.kb = { a: f, b: f }; }
    else if (extend) { st.kb.b = Math.max(0, Math.min(ws_.length - 1, st.kb.b + dir)); }
    else { var i = Math.max(0, Math.min(ws_.length - 1, st.kb.b + dir)); st.kb = { a: i, b: i }; }
    var lo = Math.min(st.kb.a, st.kb.b), hi = Math.max(st.kb.a, st.kb.b);
    selectOffsets(ws_[lo].s, ws_[hi].e);
  }

  // ------------------------------------------------------------------ actions
  function spanKeys() {
    return Array.prototype.map.call(document.querySelectorAll("#ws-spans [data-focus]"), function (el) { return el.dataset.focus; });
  }
  function addSpan(label, exact) {
    var off = selectionOffsets();
    if (!off) { toast("Select some text of the highlighted message first.", false); return; }
    st.caret = { s: off.start, e: off.end };
    var before = spanKeys();
    act(url("SpanAdd"), { start: off.start, end: off.end, label: label, exact: exact || st.exact ? "on" : "" }, function () {
      // The request failed: the fragment was not swapped, so put the selection back.
      selectOffsets(off.start, off.end);
    }).then(function (ok) {
      // The span just added is shown in its column, however long the lists above it: the
      // annotator sees what the key press did without scrolling (the focus stays where it was).
      var added = ok && spanKeys().filter(function (key) { return before.indexOf(key) < 0; })[0];
      if (added) document.querySelector("#ws-spans [data-focus='" + added + "']").scrollIntoView({ block: "nearest" });
    });
  }
  function focusables() { return Array.prototype.slice.call(document.querySelectorAll("#item [data-focus]")); }
  function setFocus(key) {
    st.focus = key;
    document.querySelectorAll("#item .focused").forEach(function (el) { el.classList.remove("focused"); });
    if (!key) return;
    var entry = document.querySelector("#item [data-focus='" + key + "']");
    if (!entry) { st.focus = null; return; }
    entry.classList.add("focused");
    var kind = key.charAt(0), id = key.slice(1);
    // A mark that crosses another's edge comes in parts; an overlapped one nests: light them all.
    document.querySelectorAll(kind === "s" ? "#target-text mark[data-suggestion='" + id + "']" : "#target-text mark[data-id='" + id + "']")
      .forEach(function (mark) { mark.classList.add("focused"); });
    entry.scrollIntoView({ block: "nearest" });
  }
  function restoreFocus(key) {
    if (key && document.querySelector("#item [data-focus='" + key + "']")) return setFocus(key);
    var first = document.querySelector("#item [data-focus].pending");
    setFocus(first ? first.dataset.focus : null);
  }
  function moveFocus(dir) {
    var all = focusables();
    if (!all.length) return;
    var i = all.findIndex(function (el) { return el.dataset.focus === st.focus; });
    i = i < 0 ? (dir > 0 ? 0 : all.length - 1) : (i + dir + all.length) % all.length;
    setFocus(all[i].dataset.focus);
  }
  // a / r decide the focused suggestion and move on to the next undecided one at once (before the
  // answer comes back), so a quick "a a Enter" decides two suggestions and submits.
  function nextPending(key) {
    var all = focusables(), i = all.findIndex(function (el) { return el.dataset.focus === key; });
    var after = all.slice(i + 1).concat(all.slice(0, i + 1)).filter(function (el) {
      return el.classList.contains("pending") && el.dataset.focus !== key;
    });
    return after.length ? after[0].dataset.focus : null;
  }
  function decide(cmd) {
    var on = st.focus && document.querySelector("#item [data-focus='" + st.focus + "'].pending");
    var key = on ? st.focus : nextPending(st.focus);  // a decided one has nothing left to decide
    if (!key || !command(cmd, key)) { toast("No suggestion to " + cmd + ".", false); return; }
    var entry = document.querySelector("#item [data-focus='" + key + "']");
    if (entry) entry.classList.remove("pending");
    setFocus(nextPending(key));
  }
  function relabel(key, label) {
    var id = key.slice(1);
    if (key.charAt(0) === "a") act(url("SpanRelabel"), { annotation: id, label: label });
    else if (url("ModelRelabel")) act(url("ModelRelabel"), { prediction: id, label: label });
  }
  var openDialog = window.blindspotKeys.open;

  // ------------------------------------------------------------------ keyboard
  var keyId = window.blindspotKeys.id;
  var BY_FOCUS = " (" + keyOf("focus-next") + " / " + keyOf("focus-prev") + " or a click).";
  var HANDLERS = {
    "word-next": function (e) { moveWord(1, e.shiftKey); },
    "word-prev": function (e) { moveWord(-1, e.shiftKey); },
    "exact": function () { st.exact = !st.exact; setMode(); },
    "focus-next": function () { moveFocus(1); },
    "focus-prev": function () { moveFocus(-1); },
    "accept": function () { decide("accept"); },
    "reject": function () { decide("reject"); },
    "relabel": function () { if (st.focus) { st.relabel = st.focus; setMode(); } else toast("Focus a span or suggestion first" + BY_FOCUS, false); },
    "delete": function () {
      if (!(st.focus && st.focus.charAt(0) === "a" && command("delete", st.focus))) toast("Focus one of your spans first" + BY_FOCUS, false);
    },
    "no-pii-next": function () {
      if (readOnly()) toast(READ_ONLY, false); else { saveDirtyComment(); command("no-pii-next"); }
    },
    "uncertain": function () {
      var cb = document.getElementById("ws-uncertain");
      if (readOnly()) toast(READ_ONLY, false); else if (cb) { cb.checked = !cb.checked; cb.form.requestSubmit(); }
    },
    "comment": function () { var ta = document.getElementById("ws-comment"); if (ta) ta.focus(); },
    "undo": function () { command("undo"); },
    "submit": function () {
      if (!command("submit") && readOnly()) { var nx = document.querySelector("#item a[data-next]"); if (nx) nx.click(); }
    },
    "reopen": function () { if (!command("reopen")) toast("Only a submitted item can be reopened.", false); },
    "skip": function () { command("skip"); },
    "guidelines": function () { openDialog("ws-guidelines"); },
    "help": function () { openDialog("ws-help"); },
    "escape": function () {
      if (selectionOffsets()) { clearSelection(); return; }
      setFocus(null); st.exact = false; setMode();
    }
  };

  // Label keys and command keys are disjoint (the server's keymap; a test holds it), so a key
  // means one thing whether or not a word is selected.
  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.isComposing) return;
    var el = document.activeElement, typing = el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT");
    if (document.querySelector("dialog[open]")) return;  // the dialog's own keys (Esc closes it)
    if (typing) {
      if (el.id === "ws-comment" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        // Saved: back to the page, so the next Enter submits instead of typing a newline.
        e.preventDefault(); el.form.requestSubmit(); el.blur(); if (target()) target().focus({ preventScroll: true });
      }
      else if (e.key === "Escape") el.blur();
      return;
    }
    if (e.key === "Enter" && el && (el.tagName === "BUTTON" || el.tagName === "A" || el.tagName === "SUMMARY")) return;
    var id = keyId(e);
    if (!id) return;
    var label = KEYS.labels[id], action = KEYS.commands[id];
    if (st.relabel) {
      if (id === "Escape") { st.relabel = null; setMode(); e.preventDefault(); }
      else if (label) { e.preventDefault(); var k = st.relabel; st.relabel = null; setMode(); relabel(k, label); }
      return;
    }
    if (label) { e.preventDefault(); addSpan(label, false); return; }
    if (action && HANDLERS[action]) { e.preventDefault(); HANDLERS[action](e); }
  });

  // ------------------------------------------------------------------ mouse
  document.addEventListener("mousedown", function (e) {
    // Keep the text selection when a label button is pressed.
    if (e.target.closest && e.target.closest(".label-btn")) e.preventDefault();
  });
  document.addEventListener("click", function (e) {
    var t = e.target;
    var btn = t.closest && t.closest(".label-btn");
    if (btn) {
      if (selectionOffsets()) addSpan(btn.dataset.label, e.shiftKey);
      else if (st.focus) relabel(st.focus, btn.dataset.label);
      else toast("Select text first, or focus a span to change its label.", false);
      return;
    }
    if (t.closest && t.closest("[data-open]")) return;  // keymap.js opens its dialog
    var goto = t.closest && t.closest("#item [data-focus-to]");  // "Overlaps …" links in the lists
    if (goto) { e.preventDefault(); setFocus(goto.dataset.focusTo); return; }
    var mark = t.closest && t.closest("#target-text mark");
    if (mark && window.getSelection().isCollapsed) {
      setFocus(mark.dataset.suggestion ? "s" + mark.dataset.suggestion : "a" + mark.dataset.id);
      return;
    }
    var entry = t.closest && t.closest("#item [data-focus]");
    if (entry && !t.closest("form")) setFocus(entry.dataset.focus);
  });

  // ------------------------------------------------------------------ unsaved comment drafts
  function draftKey() { return "blindspot:draft:" + ws.dataset.publicId; }
  document.addEventListener("input", function (e) {
    if (e.target.id === "ws-comment") sessionStorage.setItem(draftKey(), e.target.value);
  });
  function restoreDraft() {
    var ta = document.getElementById("ws-comment"), draft = sessionStorage.getItem(draftKey());
    if (ta && draft !== null && draft !== ta.dataset.saved && draft !== ta.value) {
      ta.value = draft;
      toast("Your unsaved comment was restored; press Ctrl+Enter to save it.", true);
    }
  }

  restoreFocus(null);
  restoreDraft();
  var t0 = target();
  if (t0) { t0.focus({ preventScroll: true }); t0.scrollIntoView({ block: "nearest" }); }  // a long window scrolls in its column
  ws.dataset.ready = "1";  // the shortcuts are bound: keys pressed from now on are handled
})();
