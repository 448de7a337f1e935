// Release review, keyboard first: y confirms (PII), n dismisses (not PII), 1-9 choose the label a
// confirmation gives, j skips. The form works the same without JavaScript (buttons and a select).
(function () {
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return;
    var form = document.getElementById("review-form");
    if (!form) return;
    var click = function (id) {
      var el = document.getElementById(id);
      if (el) { ev.preventDefault(); el.click(); }
    };
    if (ev.key === "y") click("review-confirm");
    else if (ev.key === "n") click("review-dismiss");
    else if (ev.key === "j") click("review-skip");
    else if (/^[1-9]$/.test(ev.key)) {
      var select = document.getElementById("review-label");
      var i = parseInt(ev.key, 10) - 1;
      if (select && i < select.options.length) { ev.preventDefault(); select.selectedIndex = i; }
    }
  });
})();
