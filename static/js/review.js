// Release review, keyboard first, with the keymap every deciding screen shares
// (annotator/selectors/keymap.py, read through static/js/keymap.js): a confirms (PII), r dismisses
// (not PII), a label key chooses the label a confirmation gives, s skips. The form works the same
// without JavaScript (buttons and a select).
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function click(id) {
    var el = document.getElementById(id);
    if (el) el.click();
  }
  var HANDLERS = {
    "accept": function () { click("review-confirm"); },
    "reject": function () { click("review-dismiss"); },
    "skip": function () { click("review-skip"); },
    "help": function () { window.blindspotKeys.open("review-help"); },
    "escape": function () {}  // the open dialog closes itself
  };
  document.addEventListener("keydown", function (ev) {
    if (ev.defaultPrevented || typing(ev.target) || document.querySelector("dialog[open]")) return;
    if (!document.getElementById("review-form")) return;
    var KEYS = window.blindspotKeys.load("review-keymap"), id = window.blindspotKeys.id(ev);
    var label = id && KEYS.labels[id], action = id && KEYS.commands[id];
    var select = document.getElementById("review-label");
    if (label && select) { ev.preventDefault(); select.value = label; }
    else if (action) { ev.preventDefault(); HANDLERS[action](); }
  });
})();
