// claimdesk: small progressive enhancements; every page works without this file.
(() => {
  "use strict";

  // Close buttons ship `hidden` because they do nothing without JavaScript.
  function revealCloseButtons(root) {
    for (const button of root.querySelectorAll(".flash-close[hidden]")) {
      button.hidden = false;
    }
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest(".flash-close");
    if (!button) return;
    const flash = button.closest(".flash");
    if (!flash) return;
    const container = flash.parentElement;
    flash.remove();
    if (container && container.classList.contains("flashes") && !container.children.length) {
      container.remove();
    }
    // The focused button is gone; put keyboard users back at the start of the content.
    const main = document.getElementById("content");
    if (main) main.focus({ preventScroll: true });
  });

  // After htmx swaps in a form that was refused, or a panel with a message, keyboard focus
  // was left on <body> and the message could be off-screen: move both to what changed.
  // The labelling screen saves as you type and keeps focus where the reviewer is.
  document.addEventListener("htmx:afterSettle", (event) => {
    const root = event.detail.elt;
    if (!(root instanceof Element) || root.closest(".labelling")) return;
    // Only after a form was sent: a GET swap (the calibration page's split select) keeps
    // focus on the control the reader is using.
    const verb = event.detail.requestConfig && event.detail.requestConfig.verb;
    if (verb !== "post") return;
    const invalid = root.querySelector(
      ".has-error input, .has-error select, .has-error textarea, .error-summary"
    );
    const target = invalid || root.querySelector(".flash");
    if (!target) return;
    if (!target.matches("input, select, textarea")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "nearest" });
  });

  document.addEventListener("DOMContentLoaded", () => revealCloseButtons(document));
  // Content swapped in by htmx may carry its own flash messages.
  document.addEventListener("htmx:load", (event) => revealCloseButtons(event.target));
})();
