// Swagger UI renders an enum parameter as a <select> with no label (axe: select-name): name
// each one after its parameter as it appears. Loaded by templates/api/swagger_ui.html.
(() => {
  "use strict";
  const label = (root) => {
    for (const select of root.querySelectorAll("tr[data-param-name] select:not([aria-label])")) {
      select.setAttribute("aria-label", select.closest("tr").dataset.paramName);
    }
  };
  new MutationObserver(() => label(document)).observe(document.body, { childList: true, subtree: true });
})();
