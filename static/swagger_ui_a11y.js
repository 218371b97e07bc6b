// Swagger UI as axe wants it, fixed as it renders (loaded by templates/api/swagger_ui.html):
// - an enum parameter is a <select> with no label (select-name): name each one after its
//   parameter;
// - an example body is a scrollable <pre> a keyboard cannot reach (scrollable-region-focusable):
//   make each focusable and name it.
(() => {
  "use strict";
  const fix = (root) => {
    for (const select of root.querySelectorAll("tr[data-param-name] select:not([aria-label])")) {
      select.setAttribute("aria-label", select.closest("tr").dataset.paramName);
    }
    for (const code of root.querySelectorAll(".highlight-code > pre:not([tabindex])")) {
      code.setAttribute("tabindex", "0");
      code.setAttribute("role", "region");
      code.setAttribute("aria-label", "Example");
    }
  };
  new MutationObserver(() => fix(document)).observe(document.body, { childList: true, subtree: true });
})();
