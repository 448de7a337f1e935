// Site-wide behaviour: a visible message whenever an htmx request fails, so no action is lost silently.
(function () {
  function toast(text, ok) {
    var el = document.getElementById("toast");
    if (!el) return;
    el.textContent = text;
    el.className = ok ? "toast ok" : "toast";
    el.hidden = false;
    clearTimeout(el._t);
    el._t = setTimeout(function () { el.hidden = true; }, ok ? 2500 : 8000);
  }
  // X-Blindspot-Error carries a JSON string (ASCII, \u escapes: headers are latin-1, see
  // annotator/views/refusals.py); a plain value from elsewhere is shown as it is.
  function headerText(value) {
    if (!value) return "";
    try { var parsed = JSON.parse(value); return typeof parsed === "string" ? parsed : value; }
    catch (err) { return value; }
  }
  window.blindspotToast = toast;
  window.blindspotHeaderText = headerText;
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var plain = (xhr.getResponseHeader("Content-Type") || "").indexOf("text/plain") === 0;
    var msg = (plain && xhr.responseText) || headerText(xhr.getResponseHeader("X-Blindspot-Error")) ||
      (xhr.status === 403 ? "You may not do that." :
      xhr.status === 409 ? "This item changed in another tab. Reload to see the latest version." :
      "The server answered " + xhr.status + ". Your work on this page is kept; try again.");
    toast(msg, false);
  });
  // A notice a partial sends in HX-Trigger ({"blindspot:notice": "..."}), e.g. a queued job while
  // the broker is away (annotator/middleware.py).
  document.addEventListener("blindspot:notice", function (e) {
    if (e.detail && e.detail.value) toast(e.detail.value, true);
  });
  document.addEventListener("htmx:sendError", function () {
    toast("Cannot reach the server. Your work on this page is kept; try again when you are back online.", false);
  });
})();

// A flash that says a job was queued ("Run #4 rules queued.") goes once the page shows the job
// finished (its polled progress carries data-job-finished): it would say something no longer true.
(function () {
  function dropJobFlash() {
    if (!document.querySelector("[data-job-finished]")) return;
    document.querySelectorAll(".flash li.job").forEach(function (li) {
      var list = li.parentElement;
      li.remove();
      if (!list.children.length) list.remove();
    });
  }
  document.addEventListener("DOMContentLoaded", dropJobFlash);
  document.addEventListener("htmx:afterSettle", dropJobFlash);
})();

// A result rendered below a long form (a plan's dry run) is brought into view: the page would
// otherwise open at its top, and the result would look like nothing happened.
document.addEventListener("DOMContentLoaded", function () {
  var el = document.querySelector("[data-reveal]");
  if (el) el.scrollIntoView({ block: "start" });
});

// <select data-autosubmit> submits its form on change (was an inline onchange, which the CSP refuses).
document.addEventListener("change", function (e) {
  var el = e.target;
  if (el.matches && el.matches("[data-autosubmit]") && el.form) el.form.requestSubmit();
});
