// Release review, keyboard first, with the keys every deciding screen shares
// (annotator/selectors/keymap.py, read through static/js/keymap.js): a confirms (PII), r dismisses
// (not PII), s skips, u undoes the last verdict, a label key (digits, Shift+digits) chooses the
// label a confirmation gives. A kept number is confirmed only by its label key: a alone does not.
// The form works the same without JavaScript (buttons and a select).
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  function click(id) {
    var el = document.getElementById(id);
    if (el) el.click();
  }
  function isNumber() {
    var form = document.getElementById("review-form");
    return form && form.hasAttribute("data-number");
  }
  function choose(label) {
    var select = document.getElementById("review-label");
    if (!select || !Array.prototype.some.call(select.options, function (o) { return o.value === label; })) return;
    select.value = label;
    if (isNumber()) click("review-confirm");
  }
  var HANDLERS = {
    "accept": function () {
      var hint = document.getElementById("review-number-hint");
      if (isNumber()) { if (hint) hint.classList.add("notice"); } else click("review-confirm");
    },
    "reject": function () { click("review-dismiss"); },
    "skip": function () { click("review-skip"); },
    "undo": function () { click("review-undo"); },
    "help": function () { window.blindspotKeys.open("review-help"); },
    "escape": function () {}  // the open dialog closes itself
  };
  document.addEventListener("keydown", function (ev) {
    if (ev.defaultPrevented || typing(ev.target)) return;
    var KEYS = window.blindspotKeys.load("review-keymap"), id = window.blindspotKeys.id(ev);
    var label = id && KEYS.labels[id], action = id && KEYS.commands[id];
    if (label) { ev.preventDefault(); choose(label); }
    else if (action && HANDLERS[action]) { ev.preventDefault(); HANDLERS[action](); }
  });
})();
