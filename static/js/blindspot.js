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
  window.blindspotToast = toast;
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var msg = xhr.getResponseHeader("X-Blindspot-Error") || (xhr.status === 403 ? "You may not do that." :
      xhr.status === 409 ? "This item changed in another tab. Reload to see the latest version." :
      "The server answered " + xhr.status + ". Your work on this page is kept; try again.");
    toast(msg, false);
  });
  document.addEventListener("htmx:sendError", function () {
    toast("Cannot reach the server. Your work on this page is kept; try again when you are back online.", false);
  });
})();

// <select data-autosubmit> submits its form on change (was an inline onchange, which the CSP refuses).
document.addEventListener("change", function (e) {
  var el = e.target;
  if (el.matches && el.matches("[data-autosubmit]") && el.form) el.form.requestSubmit();
});
