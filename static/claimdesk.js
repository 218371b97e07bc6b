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

  // A panel that a poll replaces (the job page's status) is not itself a live region: a
  // region replaced every second is announced unreliably, or from its top each time. A stable
  // region beside it ([data-live-region] naming the panel's id) says what changed, once per
  // change of state or stage; when the job has failed, focus goes to its list of problems so
  // a keyboard or screen-reader user is where the errors are, not on <body>.
  const heard = new Map();
  function announcePanel(panel) {
    const region = document.querySelector(`[data-live-region="${panel.id}"]`);
    if (!region) return;
    const state = `${panel.dataset.jobStatus}/${panel.dataset.jobStage || ""}`;
    if (heard.get(panel.id) === state) return;
    const first = !heard.has(panel.id);
    heard.set(panel.id, state);
    if (first) return; // the page was just read from its top: nothing has changed yet
    const title = panel.querySelector("h2");
    const detail = panel.querySelector(".help, .error-summary-title, p");
    region.textContent = [title, detail].filter(Boolean).map((n) => n.textContent.trim().replace(/\s+/g, " ")).join(". ");
    if (panel.dataset.jobStatus === "failed" || panel.dataset.jobStatus === "stalled") {
      const target = panel.querySelector(".error-summary") || panel.querySelector("h2");
      if (target) {
        if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
        target.focus({ preventScroll: true });
        target.scrollIntoView({ block: "nearest" });
      }
    }
  }
  function watchPanels() {
    document.querySelectorAll("[data-live-region]").forEach((region) => {
      const panel = document.getElementById(region.dataset.liveRegion);
      if (panel) announcePanel(panel);
    });
  }
  document.addEventListener("htmx:afterSettle", watchPanels);

  // A table or code block wider than its column scrolls sideways in its own box; a keyboard
  // can scroll only what can take focus (WCAG 2.1.1), so such a box gets a tab stop, named by
  // its table's caption where it has one.
  function focusableScrollers(root) {
    root.querySelectorAll(".table-wrap, .doc pre").forEach((box) => {
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.dataset.scrollFocus = "";
        if (!box.hasAttribute("role")) box.setAttribute("role", "region");
        const caption = box.querySelector("caption");
        const name = caption ? caption.textContent.trim() : box.matches("pre") ? "Code" : "Table";
        if (!box.hasAttribute("aria-label")) box.setAttribute("aria-label", `${name} (scrolls sideways)`);
      } else if (!scrolls && box.dataset.scrollFocus !== undefined) {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
        delete box.dataset.scrollFocus;
      }
    });
  }
  // On a phone a table of figures stacks each row as a card (the `stack-sm` look: each cell
  // with its column's name) instead of scrolling sideways (#34). Its cells are named here from
  // its one header row; a table whose cells span rows or columns, a matrix (#confusion), and
  // one laid out for phones already, keep their grid. Without scripts such a table scrolls.
  function stackTables(root) {
    root.querySelectorAll("table.table:not(.stack-sm):not(.adjudication-table):not(#confusion)")
      .forEach((table) => {
        const head = table.tHead;
        if (!head || head.rows.length !== 1) return;
        const names = [...head.rows[0].cells];
        const rows = [...table.tBodies].flatMap((body) => [...body.rows]);
        const spans = (cell) => cell.colSpan > 1 || cell.rowSpan > 1;
        if (names.some(spans) || rows.some((row) => [...row.cells].some(spans))) return;
        if (rows.some((row) => row.cells.length !== names.length)) return;
        rows.forEach((row) => {
          [...row.cells].forEach((cell, i) => {
            const name = names[i].textContent.trim();
            if (name && !cell.hasAttribute("data-label") && cell.tagName === "TD") {
              cell.setAttribute("data-label", name);
            }
          });
        });
        table.classList.add("stack-sm", "stacked-by-script");
      });
  }
  stackTables(document);
  document.addEventListener("htmx:afterSettle", (event) => stackTables(event.target));

  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => focusableScrollers(document), 200);
  });
  document.addEventListener("htmx:afterSettle", () => focusableScrollers(document));
  document.addEventListener("toggle", () => focusableScrollers(document), true);

  // A table of contents marked [data-tabs] becomes tabs (the ARIA tabs pattern): one section
  // shown at a time, arrow keys and Home/End between the tabs, the address's #fragment
  // choosing the section (a link to anything inside one opens it). Without scripts it stays
  // a list of links to sections that are all shown.
  function tabs(nav) {
    const links = Array.from(nav.querySelectorAll("a[data-tab]"));
    const panels = links.map((link) => document.getElementById(link.dataset.tab));
    if (!links.length || panels.some((panel) => !panel)) return;
    nav.setAttribute("role", "tablist");
    links.forEach((link, i) => {
      link.id = link.id || `tab-${link.dataset.tab}`;
      link.setAttribute("role", "tab");
      link.setAttribute("aria-controls", panels[i].id);
      panels[i].setAttribute("role", "tabpanel");
      panels[i].setAttribute("aria-labelledby", link.id);
    });
    const show = (index, { focus = false, remember = true } = {}) => {
      links.forEach((link, i) => {
        const on = i === index;
        link.setAttribute("aria-selected", String(on));
        link.tabIndex = on ? 0 : -1;
        panels[i].hidden = !on;
      });
      if (focus) links[index].focus();
      if (remember) history.replaceState(null, "", `#${panels[index].id}`);
      focusableScrollers(panels[index]);
    };
    const fromHash = () => {
      const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
      const index = target ? panels.findIndex((panel) => panel.contains(target)) : -1;
      return { index, target };
    };
    const start = fromHash();
    show(Math.max(0, start.index), { remember: false });
    if (start.target && start.index >= 0) start.target.scrollIntoView();
    nav.addEventListener("click", (event) => {
      const link = event.target.closest("a[data-tab]");
      if (!link) return;
      event.preventDefault();
      show(links.indexOf(link), { focus: true });
    });
    nav.addEventListener("keydown", (event) => {
      const at = links.indexOf(document.activeElement);
      if (at < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: links.length - 1 }[event.key];
      if (to === undefined) return;
      event.preventDefault();
      show((to + links.length) % links.length, { focus: true });
    });
    window.addEventListener("hashchange", () => {
      const { index, target } = fromHash();
      if (index < 0) return;
      show(index, { remember: false });
      target.scrollIntoView();
      if (target.tabIndex >= 0 || target.hasAttribute("tabindex")) target.focus();
    });
    // A section swapped in by htmx (the comparison, once computed) keeps its place as a panel.
    document.addEventListener("htmx:afterSettle", () => {
      const index = links.findIndex((link) => link.getAttribute("aria-selected") === "true");
      const fresh = links.map((link) => document.getElementById(link.dataset.tab));
      fresh.forEach((panel, i) => {
        if (!panel) return;
        panels[i] = panel;
        panel.setAttribute("role", "tabpanel");
        panel.setAttribute("aria-labelledby", links[i].id);
        panel.hidden = i !== index;
      });
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("[data-tabs]").forEach(tabs);
    revealCloseButtons(document);
    watchPanels();
    focusableScrollers(document);
  });
  // Content swapped in by htmx may carry its own flash messages.
  document.addEventListener("htmx:load", (event) => revealCloseButtons(event.target));
})();
