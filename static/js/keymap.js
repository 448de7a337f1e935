// The keymap a page was rendered with (annotator/selectors/keymap.py, one definition for the
// workspace, adjudication and the release review): each screen's script reads it here and names
// keydowns the way it does, so no script binds a key of its own.
(function () {
  "use strict";
  function open(id) {
    var d = document.getElementById(id);
    if (d && !d.open) d.showModal();
  }
  // A button with data-open="<dialog id>" opens it: the help a ? key opens, the guidelines.
  document.addEventListener("click", function (e) {
    var opener = e.target.closest && e.target.closest("[data-open]");
    if (opener) open(opener.dataset.open);
  });
  window.blindspotKeys = {
    open: open,
    // key id → label, key id → action, action → the key it names
    load: function (id) { return JSON.parse(document.getElementById(id).textContent); },
    // A keydown as the keymap names it: a digit by its physical key (Digit1, Numpad1: the same on
    // every layout), with "Shift+" for the second ten labels; a letter in lower case; "Ctrl+z";
    // "Shift+Enter".
    id: function (e) {
      if (e.altKey) return null;
      if (e.ctrlKey || e.metaKey) return e.key.toLowerCase() === "z" ? "Ctrl+z" : null;
      var digit = /^(?:Digit|Numpad)([0-9])$/.exec(e.code || "");
      if (digit) return (e.shiftKey ? "Shift+" : "") + digit[1];
      if (e.key === "Enter" && e.shiftKey) return "Shift+Enter";
      return e.key.length === 1 ? e.key.toLowerCase() : e.key;
    }
  };
})();
