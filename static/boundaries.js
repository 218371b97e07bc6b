// claimdesk claim-boundary editor: select text in the answer to add it as a claim, make it a
// claim's span, or merge two claims; put the caret inside a claim to split it there. The
// offsets forms below the answer do the same without JavaScript; this fills the same kind of
// forms (add, adjust, split, merge) and submits them, and htmx swaps the editor as usual.
//
// Offsets are the server's: Unicode code points of the answer text (Python's str indexes),
// counted from each segment's data-start, never UTF-16 units (an emoji is one, not two).
(() => {
  "use strict";

  const codePoints = (text) => Array.from(text).length;

  // The offset in the answer text of a point (node, offset) inside #boundary-text.
  function offsetOf(root, node, offset) {
    const element = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    let segment = element && element.closest("[data-start]");
    if (!segment || !root.contains(segment)) {
      // A point between segments (on the root itself): count the text before it.
      const range = document.createRange();
      range.setStart(root, 0);
      range.setEnd(node, offset);
      return codePoints(range.toString());
    }
    const range = document.createRange();
    range.setStart(segment, 0);
    range.setEnd(node, offset);
    return Number(segment.dataset.start) + codePoints(range.toString());
  }

  function claims(root) {
    return [...root.querySelectorAll(".claim[data-claim]")].map((el) => ({
      pk: el.dataset.claim,
      number: Number(el.dataset.number),
      start: Number(el.dataset.start),
      end: Number(el.dataset.start) + codePoints(el.textContent),
    }));
  }

  // The selection as [start, end) with surrounding whitespace trimmed, or a caret position.
  function selected(root) {
    const selection = window.getSelection();
    if (!selection || !selection.rangeCount) return null;
    const range = selection.getRangeAt(0);
    if (!root.contains(range.startContainer) || !root.contains(range.endContainer)) return null;
    let start = offsetOf(root, range.startContainer, range.startOffset);
    let end = offsetOf(root, range.endContainer, range.endOffset);
    if (range.collapsed) return { caret: start };
    const text = Array.from(root.textContent);
    while (start < end && /\s/.test(text[start])) start += 1;
    while (end > start && /\s/.test(text[end - 1])) end -= 1;
    if (start === end) return null;
    return { start, end, text: text.slice(start, end).join("") };
  }

  // A caret inside a word splits before that word, as the split list offers.
  function wordStart(root, at) {
    const text = Array.from(root.textContent);
    while (at > 0 && !/\s/.test(text[at - 1]) && !/\s/.test(text[at] || " ")) at -= 1;
    return at;
  }

  function show(tools, action, values, label) {
    for (const form of tools.querySelectorAll("form[data-span-action]")) {
      const on = form.dataset.spanAction === action;
      form.hidden = !on;
      if (!on) continue;
      for (const [name, value] of Object.entries(values)) {
        const input = form.querySelector(`input[name="${name}"]`);
        if (input) input.value = String(value);
      }
      const button = form.querySelector("button[data-template]");
      if (button) {
        button.textContent = button.dataset.template.replace(/\{(\w+)\}/g, (_, key) =>
          String(label[key] ?? "")
        );
      }
    }
  }

  function update() {
    const root = document.getElementById("boundary-text");
    const tools = document.getElementById("span-tools");
    if (!root || !tools) return;
    tools.hidden = false;
    const status = tools.querySelector("#span-selection");
    const found = selected(root);
    const all = claims(root);
    const hide = (message) => {
      show(tools, "", {}, {});
      status.textContent = message || "";
    };
    if (!found) return hide("");
    if ("caret" in found) {
      const at = wordStart(root, found.caret);
      const claim = all.find((c) => c.start < at && at < c.end);
      if (!claim) return hide("");
      status.textContent = `Caret in claim ${claim.number} at character ${at}.`;
      return show(tools, "split", { claim: claim.pk, at }, { number: claim.number });
    }
    const touched = all.filter((c) => c.start < found.end && found.start < c.end);
    const shown = found.text.length > 60 ? `${found.text.slice(0, 57)}…` : found.text;
    status.textContent = `Selected ${found.start}–${found.end}: “${shown}”`;
    if (!touched.length) {
      return show(tools, "add", { start: found.start, end: found.end }, {});
    }
    if (touched.length === 1) {
      const claim = touched[0];
      return show(
        tools,
        "adjust",
        { claim: claim.pk, start: found.start, end: found.end },
        { number: claim.number }
      );
    }
    if (touched.length === 2 && touched[1].number === touched[0].number + 1) {
      return show(
        tools,
        "merge",
        { claim: touched[0].pk },
        { numbers: `${touched[0].number} and ${touched[1].number}` }
      );
    }
    hide(`${status.textContent} — it runs over ${touched.length} claims: merge two at a time.`);
  }

  document.addEventListener("selectionchange", update);
  document.addEventListener("DOMContentLoaded", update);
  // The editor is swapped by htmx after every edit: show the tools in the new one too.
  document.addEventListener("htmx:afterSettle", update);
})();
