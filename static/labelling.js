// The labelling screen's keyboard and selection behaviour. The page works without it (every
// claim form is shown and saves with its own button); this script shows one claim at a time,
// maps the shortcuts, copies a selected passage text into the quote, and highlights quotes.
(function () {
  "use strict";
  const root = document.getElementById("labelling");
  if (!root) return;
  document.body.classList.add("js");

  const forms = Array.from(root.querySelectorAll(".claim-form"));
  const spans = Array.from(root.querySelectorAll(".claim[data-claim]"));
  const passages = Array.from(root.querySelectorAll(".passage"));
  const dialog = document.getElementById("shortcuts");
  const original = new Map(passages.map((p) => [p, p.querySelector(".passage-text").textContent]));
  let selected = null;

  const formFor = (i) => forms.find((f) => f.dataset.claim === String(i));
  const spanFor = (i) => document.getElementById("claim-span-" + i);

  function select(index, focus) {
    if (!forms.length) return;
    index = Math.max(0, Math.min(forms.length - 1, index));
    selected = index;
    forms.forEach((f) => f.classList.toggle("selected", f.dataset.claim === String(index)));
    root.querySelectorAll(".claim[data-claim]").forEach((s) =>
      s.classList.toggle("selected", s.dataset.claim === String(index)));
    const span = spanFor(index);
    if (span && focus) span.focus({ preventScroll: false });
    highlight();
  }

  function change(form) {
    form.dispatchEvent(new Event("change", { bubbles: true }));
    highlight();
  }

  const normalise = (text) => text.replace(/\s+/g, " ").trim();
  const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  function highlight() {
    const form = selected === null ? null : formFor(selected);
    const quoteInput = form && form.querySelector(".quote-input");
    const quote = quoteInput ? normalise(quoteInput.value) : "";
    const evidence = form
      ? Array.from(form.querySelectorAll("input[name=evidence_ids]:checked")).map((i) => i.value)
      : [];
    passages.forEach((passage) => {
      const node = passage.querySelector(".passage-text");
      const text = original.get(passage);
      const chosen = evidence.includes(passage.dataset.passage);
      passage.classList.toggle("cited", chosen);
      node.textContent = text;
      if (!chosen || !quote) return;
      const pattern = new RegExp(quote.split(" ").map(escapeRegExp).join("\\s+"));
      const match = pattern.exec(text);
      if (!match) return;
      const mark = document.createElement("mark");
      mark.textContent = match[0];
      node.replaceChildren(
        document.createTextNode(text.slice(0, match.index)),
        mark,
        document.createTextNode(text.slice(match.index + match[0].length)),
      );
    });
  }

  function setRadio(form, name, value) {
    const input = form.querySelector(`input[name="${name}"][value="${value}"]`);
    if (!input || input.disabled) return;
    input.checked = true;
    if (name === "support" && value === "supported") {
      const none = form.querySelector('input[name="severity"][value="none"]');
      if (none) none.checked = true;
    }
    change(form);
  }

  function cycleSeverity(form) {
    const options = Array.from(form.querySelectorAll('input[name="severity"]'));
    if (!options.length) return;
    const current = options.findIndex((o) => o.checked);
    options[(current + 1) % options.length].checked = true;
    change(form);
  }

  const typing = (el) => el && (el.tagName === "TEXTAREA" ||
    (el.tagName === "INPUT" && !["radio", "checkbox"].includes(el.type)) || el.isContentEditable);

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(document.activeElement)) {
      if (event.key === "Escape") document.activeElement.blur();
      return;
    }
    const form = selected === null ? null : formFor(selected);
    const key = event.key;
    if (key === "?") { dialog && dialog.showModal(); event.preventDefault(); return; }
    if (key === "j" || key === "ArrowDown") { select((selected ?? -1) + 1, true); event.preventDefault(); return; }
    if (key === "k" || key === "ArrowUp") { select((selected ?? 1) - 1, true); event.preventDefault(); return; }
    if (key === "Enter") {
      const button = document.getElementById("submit-button");
      if (button && !button.disabled) { button.form.requestSubmit(button); event.preventDefault(); }
      return;
    }
    if (!form) return;
    // The support choices carry their key (1 2 3, or 1 2 on a binary scale).
    const support = form.querySelector(`input[name="support"][data-key="${CSS.escape(key)}"]`);
    if (support) { setRadio(form, "support", support.value); event.preventDefault(); return; }
    if (key === "s") { cycleSeverity(form); event.preventDefault(); return; }
    if (key === "e") {
      const box = form.querySelector('input[name="requires_evidence"]');
      if (box && !box.disabled) { box.checked = !box.checked; change(form); }
      event.preventDefault();
    }
  });

  root.addEventListener("click", (event) => {
    const span = event.target.closest(".claim[data-claim]");
    if (span) select(Number(span.dataset.claim), true);
  });

  root.addEventListener("change", (event) => {
    if (event.target.closest(".claim-form")) highlight();
  });
  // Typing in a quote or a note saves a draft after a pause (hx-trigger="autosave delay:800ms").
  // htmx could filter keyup itself, but it evaluates such filters with Function(), which the
  // Content-Security-Policy forbids; the event is named here instead.
  root.addEventListener("keyup", (event) => {
    if (event.target.classList && event.target.classList.contains("autosave")) {
      event.target.dispatchEvent(new CustomEvent("autosave", { bubbles: true }));
    }
  });

  root.addEventListener("input", (event) => {
    if (event.target.classList.contains("quote-input")) highlight();
  });

  // Selecting text inside one passage quotes it for the selected claim.
  document.addEventListener("mouseup", () => {
    const selection = window.getSelection();
    if (!selection || selection.isCollapsed || selected === null) return;
    const anchor = selection.anchorNode && selection.anchorNode.parentElement;
    const focus = selection.focusNode && selection.focusNode.parentElement;
    const passage = anchor && anchor.closest(".passage");
    if (!passage || !focus || focus.closest(".passage") !== passage) return;
    const text = normalise(selection.toString());
    if (!text) return;
    const form = formFor(selected);
    const quote = form.querySelector(".quote-input");
    if (!quote || quote.disabled) return;
    quote.value = text;
    const box = form.querySelector(`input[name="evidence_ids"][value="${CSS.escape(passage.dataset.passage)}"]`);
    if (box) box.checked = true;
    selection.removeAllRanges();
    change(form);
  });

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-open-shortcuts]") && dialog) dialog.showModal();
  });

  // After a save, the server's swapped-in claim mark must keep the selection outline. Only
  // the outline: re-running select() would rebuild the passages and drop a text selection
  // the reviewer is making while the save lands.
  document.body.addEventListener("htmx:oobAfterSwap", () => {
    if (selected === null) return;
    const span = spanFor(selected);
    if (span) span.classList.add("selected");
  });

  const wanted = root.dataset.selected;
  const firstOpen = spans.find((s) => !s.querySelector(".label-mark"));
  select(wanted !== "" ? Number(wanted) : firstOpen ? Number(firstOpen.dataset.claim) : 0, false);
})();
