// The labelling screen's script. The page works without it: the server renders the editor of
// one claim (?claim=N) with the passage controls bound to it, and each form saves with its own
// button. With it, the one editor serves every claim (each claim's draft rides on its link as
// data-label), every change saves a draft at once, and the whole task can be done from the
// keyboard. Saves carry the version they were made from; a 409 means another tab saved first,
// and the newer labels are shown instead of being overwritten.
(function () {
  "use strict";
  const root = document.getElementById("labelling");
  if (!root) return;
  document.body.classList.add("js");

  const claimForm = document.getElementById("claim-form"); // absent when there are no claims
  const answerForm = () => document.getElementById("answer-form"); // replaced after a 409
  const dialog = document.getElementById("shortcuts");
  // "Flag for the lead": its link opens the dialog here (the link's page where scripts are off).
  const flagDialog = document.getElementById("flag-dialog");
  const announcer = document.getElementById("announcer");
  const shortcutsOn = root.dataset.shortcuts === "on";
  const claimsUrl = root.dataset.claimsUrl;
  const passages = Array.from(root.querySelectorAll(".passage"));
  const original = new Map(passages.map((p) => [p, p.querySelector(".passage-text").textContent]));
  const spanFor = (i) => document.getElementById("claim-span-" + i);
  const spans = () => Array.from(root.querySelectorAll(".claim[data-claim]"));
  const claimCount = spans().length;
  let selected = claimForm ? Number(claimForm.dataset.claim) : null;
  let currentPassage = null; // the passage last focused or quoted: what x and c act on
  // Disabled by itself or by a disabled fieldset around it (a submitted task's form): the
  // .disabled property reads only the element's own attribute.
  const off = (el) => el.matches(":disabled");

  // --- Each claim's draft ------------------------------------------------------------------

  // Values edited here and not yet confirmed by the server, per claim: they win over the
  // claim's data-label, so switching away and back never shows an older value.
  const local = new Map();
  const stateOf = (i) => ({ ...JSON.parse(spanFor(i).dataset.label), ...(local.get(i) || {}) });
  const serverVersion = (i) => JSON.parse(spanFor(i).dataset.label).v;
  const field = (name) => claimForm.elements.namedItem(name);
  const passageOf = (pid) => passages.find((p) => p.dataset.passage === pid);

  function readEditor() {
    const data = new FormData(claimForm);
    const citations = {};
    for (const [name, value] of data.entries()) {
      if (name.startsWith("citation:")) citations[name.slice(9)] = value;
    }
    const needs = field("requires_evidence");
    return {
      support: data.get("support") || "",
      severity: data.get("severity") || "",
      requires_evidence: needs ? needs.checked : true,
      evidence_ids: data.getAll("evidence_ids"),
      evidence_quote: data.get("evidence_quote") || "",
      citations: citations,
      note: data.get("note") || "",
    };
  }

  function setChoice(name, value) {
    const group = claimForm.querySelectorAll(`input[name="${name}"]`);
    group.forEach((input) => { input.checked = input.value === value; });
  }

  // Fill the editor (and the passages' controls) with claim i's draft.
  function fill(i) {
    const data = stateOf(i);
    claimForm.dataset.claim = String(i);
    claimForm.action = claimsUrl + i + "/";
    field("version").value = String(data.v);
    document.getElementById("claim-heading-number").textContent = String(i + 1);
    document.getElementById("claim-heading-text").textContent = claimText(i);
    setChoice("support", data.support);
    setChoice("severity", data.severity);
    const needs = field("requires_evidence");
    if (needs) needs.checked = data.requires_evidence;
    const quote = field("evidence_quote");
    if (quote) quote.value = data.evidence_quote;
    field("note").value = data.note;
    const cited = new Map(data.cited);
    passages.forEach((passage) => {
      const pid = passage.dataset.passage;
      const box = passage.querySelector("input[name=evidence_ids]");
      if (box) box.checked = data.evidence_ids.includes(pid);
      const verdict = passage.querySelector(".citation-verdict");
      if (verdict) {
        const citedHere = cited.get(pid) === true;
        verdict.hidden = !citedHere;
        verdict.disabled = !citedHere || claimForm.querySelector("fieldset").disabled;
        verdict.querySelectorAll("input").forEach((input) => {
          input.checked = citedHere && data.citations[pid] === input.value;
        });
      }
    });
    const list = document.getElementById("citation-list");
    if (list) {
      list.replaceChildren(...citationItems(data.cited));
    }
    const evidence = document.getElementById("evidence-list");
    if (evidence) evidence.textContent = data.evidence_ids.join(", ") || "none chosen";
    showNotes(data);
    const stale = document.getElementById("stale-message");
    if (stale) stale.hidden = true;
    highlight();
  }

  function citationItems(cited) {
    if (!cited.length) {
      const none = document.createElement("li");
      none.className = "muted";
      none.textContent = "none";
      return [none];
    }
    return cited.map(([pid, found]) => {
      const item = document.createElement("li");
      const id = document.createElement("span");
      if (found) {
        id.className = "citation";
        id.textContent = pid;
        const hint = document.createElement("span");
        hint.className = "muted";
        hint.textContent = " · verdict on the passage";
        item.append(id, hint);
      } else {
        id.className = "citation-not-found";
        id.textContent = pid + " · citation_not_found";
        item.append(id);
      }
      return item;
    });
  }

  function showNotes(data) {
    claimForm.querySelectorAll(".field-note").forEach((note) => {
      const name = note.dataset.field;
      const problem = data.problems[name];
      const message = problem || data.missing[name] || "";
      note.textContent = message;
      note.hidden = !message;
      note.classList.toggle("error", Boolean(problem));
      note.classList.toggle("needed", !problem);
    });
  }

  function claimText(i) {
    const span = spanFor(i).cloneNode(true);
    span.querySelectorAll(".claim-number, .label-mark").forEach((n) => n.remove());
    return span.textContent.trim();
  }

  // --- Saving ------------------------------------------------------------------------------

  const timers = new Map();
  const dirty = new Set();
  const pending = new Map(); // key -> FormData built when the change was made
  const inflight = new Map(); // key -> Promise
  const keyOf = (form) => (form === claimForm ? "claim:" + selected : "answer");
  // For tests and for anyone curious: how many saves wait or run (0 when all is saved).
  const busy = () => {
    document.body.dataset.saving = String(dirty.size + pending.size + inflight.size);
  };
  busy();

  function changed(form, delay) {
    const key = keyOf(form);
    if (form === claimForm) local.set(selected, readEditor());
    dirty.add(key);
    clearTimeout(timers.get(key));
    if (delay) timers.set(key, setTimeout(() => flush(key), delay));
    else flush(key);
    busy();
  }

  function flush(key) {
    clearTimeout(timers.get(key));
    timers.delete(key);
    if (!dirty.has(key)) return;
    dirty.delete(key);
    // The body is taken now, while the editor still shows this claim.
    pending.set(key, new FormData(key === "answer" ? answerForm() : claimForm));
    pump(key);
    busy();
  }

  const flushAll = () => Array.from(dirty).forEach(flush);

  async function settled() {
    flushAll();
    while (inflight.size) await Promise.allSettled(Array.from(inflight.values()));
  }

  function pump(key) {
    if (inflight.has(key) || !pending.has(key)) return;
    const body = pending.get(key);
    pending.delete(key);
    const index = key === "answer" ? null : Number(key.slice(6));
    body.set(
      "version",
      String(index === null ? document.getElementById("answer-version").value : serverVersion(index)),
    );
    const url = index === null ? answerForm().action : claimsUrl + index + "/";
    const request = send(url, body, index).finally(() => {
      inflight.delete(key);
      if (index !== null && !pending.has(key) && !dirty.has(key)) {
        local.delete(index);
        // What the server now says is wrong or missing, once nothing newer is on its way.
        if (selected === index) showNotes(stateOf(index));
      }
      pump(key);
      busy();
    });
    inflight.set(key, request);
    busy();
  }

  async function send(url, body, index) {
    const what = index === null ? "Whole answer" : `Claim ${index + 1}`;
    let response;
    try {
      response = await fetch(url, {
        method: "POST",
        body: body,
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
        keepalive: true, // a save started as the page is left still arrives
      });
    } catch (error) {
      announce(`${what} not saved: the server cannot be reached. Your change stays on this page.`,
        { kept: true });
      return;
    }
    const html = await response.text();
    if (response.status === 409 && index !== null && html.includes("claim-span-")) {
      const message = applyParts(html, "stale-message");
      local.delete(index);
      pending.delete("claim:" + index);
      if (selected === index) {
        fill(index);
        const stale = document.getElementById("stale-message");
        stale.textContent = message;
        stale.hidden = false;
      }
      announce(message, { kept: true });
    } else if (response.status === 409 && index === null && html.includes("answer-form")) {
      applyParts(html);
      announce(answerForm().querySelector(".stale-message").textContent, { kept: true });
    } else if (response.ok) {
      applyParts(html);
      const time = document.querySelector("#task-status .save-time");
      if (time) time.textContent = "Saved " + new Date().toTimeString().slice(0, 8);
      announce(`${what} saved.`, { kept: true });
    } else {
      announce(`${what} not saved: ${html.trim() || response.statusText}`, { kept: true });
    }
  }

  // The reply's parts marked hx-swap-oob replace the elements with their ids (htmx's
  // out-of-band swap, done here so a 409 is handled like a 200). Returns the text of `read`.
  function applyParts(html, read) {
    const template = document.createElement("template");
    template.innerHTML = html;
    let text = "";
    let refocus = null;
    template.content.querySelectorAll("[id]").forEach((part) => {
      if (read && part.id === read) { text = part.textContent; return; }
      if (!part.hasAttribute("hx-swap-oob")) return;
      part.removeAttribute("hx-swap-oob");
      const old = document.getElementById(part.id);
      if (!old) return;
      // A keyboard user on the claim being saved keeps their place: focus moves to the
      // element that replaces the one they were on.
      if (old.contains(document.activeElement)) refocus = part;
      old.replaceWith(part);
    });
    decorate(); // gives the claims their tab stops again
    if (refocus) refocus.focus({ preventScroll: true });
    refreshStatus();
    return text;
  }

  // The status bar, from every claim's state (data-label) and the answer's (#answer-state):
  // the same words the server uses ("claim 2: quote missing; whole answer: relevance
  // missing"), so a save's reply needs to carry only what it changed.
  function refreshStatus() {
    const status = document.getElementById("task-status");
    if (!status) return;
    const items = [];
    const fieldsOf = (data) => Array.from(new Set([...Object.keys(data.problems), ...Object.keys(data.missing)]));
    spans().forEach((span) => {
      const fields = fieldsOf(JSON.parse(span.dataset.label));
      if (fields.length) items.push({ item: span.dataset.claim, name: `claim ${Number(span.dataset.claim) + 1}`, fields });
    });
    const answer = document.getElementById("answer-state");
    if (answer) {
      const fields = fieldsOf(JSON.parse(answer.dataset.state));
      if (fields.length) items.push({ item: "answer", name: "whole answer", fields });
    }
    const todo = status.querySelector(".to-do, .ready");
    if (items.length) {
      const words = items.slice(0, 2).map((i) =>
        `${i.name}: ${Array.from(new Set(i.fields.map(fieldName))).join(", ")} missing`);
      todo.className = "to-do";
      todo.textContent = words.join("; ") + (items.length > 2 ? `; ${items.length - 2} more` : "");
      status.dataset.firstItem = items[0].item;
      status.dataset.firstField = items[0].fields[0];
    } else {
      todo.className = "ready";
      todo.textContent = "ready to submit";
      delete status.dataset.firstItem;
      delete status.dataset.firstField;
    }
    const button = document.getElementById("submit-button");
    if (button) {
      if (items.length) {
        button.setAttribute("aria-disabled", "true");
        button.setAttribute("aria-describedby", "task-status");
      } else {
        button.removeAttribute("aria-disabled");
        button.removeAttribute("aria-describedby");
      }
    }
  }

  // Messages waiting for the polite region's next reading, and its timer.
  let unread = [];
  let reading = null;

  function announce(text, { kept = false } = {}) {
    // A polite region that stays on the page: replaced regions are not announced reliably.
    // Messages that arrive within those 30 ms are written together: two saves that come back
    // at once are both said (the answer's and a claim's run side by side). A message that is
    // not `kept` (where the focus went) replaces one like it that is still waiting.
    if (!kept) unread = unread.filter((message) => message.kept);
    unread.push({ text, kept });
    if (reading !== null) return;
    announcer.textContent = "";
    reading = window.setTimeout(() => {
      announcer.textContent = unread.map((message) => message.text).join(" ");
      unread = [];
      reading = null;
    }, 30);
  }

  const textLike = (el) => el && (el.tagName === "TEXTAREA" || el.isContentEditable ||
    (el.tagName === "INPUT" && !["radio", "checkbox", "button", "submit", "hidden"].includes(el.type)));

  root.addEventListener("input", (event) => {
    const form = event.target.form;
    if (!form || !(form === claimForm || form === answerForm())) return;
    if (textLike(event.target)) {
      changed(form, 700);
      if (event.target.classList.contains("quote-input")) highlight();
    }
  });
  root.addEventListener("change", (event) => {
    const form = event.target.form;
    if (!form || !(form === claimForm || form === answerForm())) return;
    changed(form, 0);
    if (form === claimForm) {
      if (event.target.name === "evidence_ids") {
        currentPassage = event.target.closest(".passage");
        const list = document.getElementById("evidence-list");
        if (list) list.textContent = readEditor().evidence_ids.join(", ") || "none chosen";
      }
      highlight();
    }
  });
  // Leaving the page must not lose a change still waiting for its pause.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") flushAll();
  });

  function fire(input) {
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // --- Selecting a claim -------------------------------------------------------------------

  function decorate() {
    spans().forEach((span) => {
      const on = Number(span.dataset.claim) === selected;
      span.classList.toggle("selected", on);
      span.tabIndex = on ? 0 : -1; // one tab stop for the claims: the selected one
      if (on) span.setAttribute("aria-current", "true");
      else span.removeAttribute("aria-current");
    });
  }

  function select(index, focus) {
    if (!claimForm || !claimCount) return;
    index = Math.max(0, Math.min(claimCount - 1, index));
    if (index !== selected) {
      // A quote being selected belongs to the claim it was selected for: it is taken for that
      // claim now, and the selection is cleared so that it never becomes the next claim's quote.
      quoteNow();
      dropPassageSelection();
      lastQuote = ""; // the next claim's quote may be the same words
      flush("claim:" + selected);
      selected = index;
      fill(index);
      window.history.replaceState(null, "", "?claim=" + index);
    }
    decorate();
    const span = spanFor(index);
    span.scrollIntoView({ block: "nearest" });
    if (focus) {
      document.getElementById("claim-heading").focus({ preventScroll: true });
      const data = stateOf(index);
      const missing = Object.keys({ ...data.problems, ...data.missing });
      announce(`Claim ${index + 1} of ${claimCount}: ${claimText(index)}.` +
        (missing.length ? ` Missing: ${missing.map(fieldName).join(", ")}.` : ""));
    }
  }

  root.addEventListener("click", (event) => {
    const span = event.target.closest(".claim[data-claim]");
    if (!span) return;
    event.preventDefault();
    select(Number(span.dataset.claim), true);
  });

  // --- Passages: quotes from any selection -------------------------------------------------

  const normalise = (text) => text.replace(/\s+/g, " ").trim();
  const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  // A passage holding a selection, or the keyboard caret of the focused passage, keeps its
  // text nodes: rebuilding them would drop the selection or send the caret back to the start.
  function selectionIn(passage) {
    const selection = window.getSelection();
    if (!selection || !selection.rangeCount) return false;
    const node = passage.querySelector(".passage-text");
    if (!node.contains(selection.anchorNode)) return false;
    return !selection.isCollapsed || document.activeElement === node;
  }

  function dropPassageSelection() {
    clearTimeout(quoteTimer);
    quoteTimer = null;
    if (passages.some(selectionIn)) window.getSelection().removeAllRanges();
  }

  // Mark the selected claim's quote in its evidence passages. A passage in which the reviewer
  // is selecting keeps its text nodes until focus leaves it.
  function highlight() {
    if (!claimForm) return;
    const data = readEditor();
    const quote = normalise(data.evidence_quote);
    passages.forEach((passage) => {
      const chosen = data.evidence_ids.includes(passage.dataset.passage);
      passage.classList.toggle("cited", chosen);
      if (selectionIn(passage)) return;
      const node = passage.querySelector(".passage-text");
      const text = original.get(passage);
      node.textContent = text;
      if (!chosen || !quote) return;
      const match = new RegExp(quote.split(" ").map(escapeRegExp).join("\\s+")).exec(text);
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

  let quoteTimer = null;
  let pointerDown = false;
  let lastQuote = "";

  // The quote follows the selection however it is made -- mouse, touch handles, Shift+arrows
  // -- so it listens to selectionchange, and takes the selection once it rests.
  document.addEventListener("selectionchange", () => {
    clearTimeout(quoteTimer);
    quoteTimer = pointerDown ? null : setTimeout(() => { quoteTimer = null; takeSelection(); }, 250);
  });
  document.addEventListener("pointerdown", () => { pointerDown = true; });
  document.addEventListener("pointerup", (event) => {
    pointerDown = false;
    clearTimeout(quoteTimer);
    quoteTimer = null;
    if (takeSelection() && event.pointerType === "mouse") {
      window.getSelection().removeAllRanges(); // the mark shows the quote instead
      highlight();
    }
  });

  // A selection still settling is taken before anything else happens (a key, Enter). So is
  // one whose selectionchange has not arrived yet: a browser busy with input may run the next
  // key first (Shift+arrows, then p at once), and p would move the caret away with the quote
  // never taken. A selection already taken is left alone: the quote field may have been
  // edited since.
  function quoteNow() {
    if (pointerDown) return;
    if (quoteTimer !== null) {
      clearTimeout(quoteTimer);
      quoteTimer = null;
      takeSelection();
      return;
    }
    const selection = window.getSelection();
    if (selection && !selection.isCollapsed && normalise(selection.toString()) !== lastQuote) {
      takeSelection();
    }
  }

  function takeSelection() {
    const selection = window.getSelection();
    if (!claimForm || !selection || selection.isCollapsed || !selection.rangeCount) return false;
    const anchor = selection.anchorNode && selection.anchorNode.parentElement;
    const focus = selection.focusNode && selection.focusNode.parentElement;
    const passage = anchor && anchor.closest(".passage");
    if (!passage || !focus || focus.closest(".passage") !== passage) return false;
    if (!root.contains(passage)) return false;
    fold(passage, false); // a quote is read in full
    const text = normalise(selection.toString());
    const quote = field("evidence_quote");
    if (!text || !quote || off(quote)) return false;
    currentPassage = passage;
    if (text === lastQuote && quote.value === text) return true;
    lastQuote = text;
    quote.value = text;
    const box = passage.querySelector("input[name=evidence_ids]");
    if (box && !off(box)) box.checked = true;
    const list = document.getElementById("evidence-list");
    if (list) list.textContent = readEditor().evidence_ids.join(", ") || "none chosen";
    fire(quote);
    announce(`Quoted for claim ${selected + 1}: ${text}`);
    return true;
  }

  // --- Quoting a sentence, folding long passages ------------------------------------------

  // The sentences of a text as [start, end) offsets, trimmed of the spaces between them.
  function sentences(text) {
    const spans = [];
    const push = (start, piece) => {
      const lead = piece.length - piece.trimStart().length;
      const body = piece.trim();
      if (body) spans.push([start + lead, start + lead + body.length]);
    };
    if (typeof Intl !== "undefined" && Intl.Segmenter) {
      const segmenter = new Intl.Segmenter(document.documentElement.lang || "en", { granularity: "sentence" });
      for (const part of segmenter.segment(text)) push(part.index, part.segment);
    } else {
      const pattern = /[^.!?]+(?:[.!?]+["')\]]*|$)\s*/g;
      let match;
      while ((match = pattern.exec(text)) && match[0]) push(match.index, match[0]);
    }
    return spans;
  }

  // Offset of (node, offset) within the passage text `box`, counted in characters.
  function offsetIn(box, node, offset) {
    const range = document.createRange();
    range.selectNodeContents(box);
    range.setEnd(node, offset);
    return range.toString().length;
  }

  // The text node and offset at a character offset of `box`.
  function pointAt(box, offset) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    let node = walker.nextNode();
    let last = node;
    while (node) {
      if (offset <= node.data.length) return [node, offset];
      offset -= node.data.length;
      last = node;
      node = walker.nextNode();
    }
    return last ? [last, last.data.length] : [box, 0];
  }

  // "." quotes the sentence under the caret of the focused passage (from elsewhere: the first
  // sentence of the passage last used, or of the claim's first cited one); pressed again with
  // that sentence quoted, the next sentence. The words are exactly the passage's, so the
  // server finds the quote in it.
  function quoteSentence() {
    const quote = claimForm && field("evidence_quote");
    if (!quote || off(quote)) return;
    let box = document.activeElement && document.activeElement.closest && document.activeElement.closest(".passage-text");
    if (!box) {
      const passage = targetPassage() || citedPassage() || passages[0];
      if (!passage) return;
      box = passage.querySelector(".passage-text");
      box.focus();
      window.getSelection().collapse(firstText(box), 0);
    }
    const passage = box.closest(".passage");
    fold(passage, false);
    const text = box.textContent;
    const spans = sentences(text);
    if (!spans.length) return;
    const selection = window.getSelection();
    let at = 0;
    let start = 0;
    let end = 0;
    if (selection.rangeCount && box.contains(selection.anchorNode) && box.contains(selection.focusNode)) {
      const a = offsetIn(box, selection.anchorNode, selection.anchorOffset);
      const b = offsetIn(box, selection.focusNode, selection.focusOffset);
      [start, end] = [Math.min(a, b), Math.max(a, b)];
      at = start;
    }
    let index = spans.findIndex(([, stop]) => at < stop);
    if (index < 0) index = spans.length - 1;
    // The sentence already quoted: on to the next one.
    if (start === spans[index][0] && end === spans[index][1] && index + 1 < spans.length) index += 1;
    const [from, to] = spans[index];
    const [startNode, startOffset] = pointAt(box, from);
    const [endNode, endOffset] = pointAt(box, to);
    selection.setBaseAndExtent(startNode, startOffset, endNode, endOffset);
    clearTimeout(quoteTimer);
    quoteTimer = null;
    takeSelection();
  }

  function citedPassage() {
    if (!claimForm) return null;
    const cited = stateOf(selected).cited.find(([, found]) => found);
    return cited ? passageOf(cited[0]) : null;
  }

  // Long passages can be folded to a few lines (the button on each, or v on the current one),
  // so the one that decides the claim is in view beside the others. They start unfolded.
  const LONG_PASSAGE = 400; // characters: about five lines of the passage column
  function fold(passage, folded) {
    const button = passage && passage.querySelector(".passage-fold");
    if (!button) return;
    if (folded === undefined) folded = !passage.classList.contains("folded");
    passage.classList.toggle("folded", folded);
    button.setAttribute("aria-expanded", String(!folded));
    const name = document.createElement("span");
    name.className = "visually-hidden";
    name.textContent = " passage " + passage.dataset.passage;
    button.replaceChildren(folded ? "Show all" : "Fold", name);
  }
  passages.forEach((passage) => {
    const box = passage.querySelector(".passage-text");
    const head = passage.querySelector(".passage-head");
    if (!box || !head || original.get(passage).length <= LONG_PASSAGE) return;
    if (!box.id) box.id = "passage-text-" + passage.dataset.passage.replace(/[^A-Za-z0-9_-]/g, "_");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "link-button passage-fold";
    button.setAttribute("aria-controls", box.id);
    button.addEventListener("click", () => fold(passage));
    head.append(button);
    passage.classList.add("long");
    fold(passage, false);
  });

  function toggleFold() {
    const passage = targetPassage() || citedPassage();
    if (!passage || !passage.querySelector(".passage-fold")) return;
    fold(passage);
    const folded = passage.classList.contains("folded");
    announce(`Passage ${passage.dataset.passage} ${folded ? "folded" : "shown in full"}`);
  }

  // A focused passage moves a caret and extends a selection like a read-only text field:
  // arrows move, Shift+arrows select, Ctrl works by words, Home/End by lines.
  const MOVES = {
    ArrowRight: ["forward", "character"],
    ArrowLeft: ["backward", "character"],
    ArrowDown: ["forward", "line"],
    ArrowUp: ["backward", "line"],
    Home: ["backward", "lineboundary"],
    End: ["forward", "lineboundary"],
  };

  function caretKeys(event) {
    const text = event.target.closest && event.target.closest(".passage-text");
    if (!text || !(event.key in MOVES) || event.altKey || event.metaKey) return false;
    const selection = window.getSelection();
    if (!selection.rangeCount || !text.contains(selection.anchorNode)) {
      selection.collapse(firstText(text), 0);
    }
    const [direction, unit] = MOVES[event.key];
    const granularity = event.ctrlKey && unit === "character" ? "word" : unit;
    selection.modify(event.shiftKey ? "extend" : "move", direction, granularity);
    event.preventDefault();
    return true;
  }

  function firstText(node) {
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    return walker.nextNode() || node;
  }

  root.addEventListener("focusin", (event) => {
    const passage = event.target.closest(".passage");
    if (passage) currentPassage = passage;
    clearOfTaskBar(event.target);
  });

  // The sticky task bar never covers the control that has focus. The CSS scroll-padding
  // covers a scroll the browser makes to reach a control out of view, not one already on
  // screen under the bar, and the bar grows when its status wraps: measured here instead.
  const taskBar = document.getElementById("task-bar");
  function clearOfTaskBar(el) {
    if (!taskBar || taskBar.contains(el)) return;
    const covered = el.getBoundingClientRect().bottom - taskBar.getBoundingClientRect().top;
    if (covered <= 0) return;
    let scroller = el.parentElement;
    while (scroller && !(/(auto|scroll)/.test(getComputedStyle(scroller).overflowY) &&
                         scroller.scrollHeight > scroller.clientHeight)) {
      scroller = scroller.parentElement;
    }
    (scroller || document.scrollingElement).scrollBy(0, covered + 8);
  }
  root.addEventListener("focusout", (event) => {
    if (event.target.classList.contains("passage-text")) {
      window.setTimeout(highlight, 0);
    }
  });

  // From a passage, p and P go to the next and previous one; from anywhere else, to the
  // selected claim's first cited passage (else the first).
  function focusPassage(step) {
    const texts = passages.map((p) => p.querySelector(".passage-text"));
    if (!texts.length) return;
    const at = texts.indexOf(document.activeElement);
    let target;
    if (at >= 0) {
      target = texts[(at + step + texts.length) % texts.length];
    } else {
      const cited = claimForm ? stateOf(selected).cited.find(([, found]) => found) : null;
      const passage = cited ? passageOf(cited[0]) : null;
      target = passage ? passage.querySelector(".passage-text") : texts[step < 0 ? texts.length - 1 : 0];
    }
    target.focus();
    const passage = target.closest(".passage");
    currentPassage = passage;
    window.getSelection().collapse(firstText(document.activeElement), 0);
    announce(`Passage ${passage.dataset.passage}`);
  }

  // The passage the c and x keys act on: the focused one, else the last one used, else the
  // first that the claim cites.
  function targetPassage() {
    const focused = document.activeElement && document.activeElement.closest(".passage");
    return focused || currentPassage;
  }

  function toggleEvidence() {
    const passage = targetPassage() || passages[0];
    const box = passage && passage.querySelector("input[name=evidence_ids]");
    if (!box || off(box)) return;
    box.checked = !box.checked;
    currentPassage = passage;
    fire(box);
    announce(`${passage.dataset.passage} ${box.checked ? "is" : "is no longer"} evidence for claim ${selected + 1}`);
  }

  function citationVerdict(value) {
    const cited = stateOf(selected).cited.filter(([, found]) => found).map(([pid]) => pid);
    if (!cited.length) return;
    const focused = targetPassage();
    const data = readEditor();
    let pid = focused && cited.includes(focused.dataset.passage) ? focused.dataset.passage : null;
    if (!pid) pid = cited.find((id) => !data.citations[id]) || cited[0];
    const input = passageOf(pid).querySelector(`input[name="citation:${CSS.escape(pid)}"][value="${value}"]`);
    if (!input || off(input)) return;
    input.checked = true;
    fire(input);
    announce(`Citation ${pid}: ${value.replace(/_/g, " ")}`);
  }

  // --- Enter: submit when complete, else go to what is missing -------------------------------

  const NAMES = {
    support: "support", severity: "severity", evidence_ids: "evidence passage",
    evidence_quote: "quote", citations: "citation verdict", relevance: "relevance",
    abstention: "abstention", failure_labels: "failure labels",
  };
  const fieldName = (name) => NAMES[name] || name;

  async function enter() {
    quoteNow();
    await settled();
    const status = document.getElementById("task-status");
    const button = document.getElementById("submit-button");
    if (!status.dataset.firstItem) {
      if (button) button.form.submit();
      return;
    }
    goToMissing(status);
  }

  function goToMissing(status) {
    const item = status.dataset.firstItem;
    const name = status.dataset.firstField;
    let target = null;
    let message;
    if (item === "answer") {
      const form = answerForm();
      target = form.querySelector(`input[name="${name}"]:checked`) ||
        form.querySelector(`input[name="${name}"]`);
      message = `Whole answer: ${fieldName(name)} missing.`;
    } else {
      select(Number(item), false);
      const data = stateOf(Number(item));
      const cited = data.cited.filter(([, found]) => found).map(([pid]) => pid);
      if (name === "evidence_ids") {
        const passage = passageOf(cited[0]) || passages[0];
        target = passage && passage.querySelector(".passage-text");
      } else if (name === "citations") {
        const pid = cited.find((id) => !data.citations[id]) || cited[0];
        target = pid && passageOf(pid).querySelector(".citation-verdict input");
      } else if (name === "evidence_quote") {
        target = field("evidence_quote");
      } else {
        target = claimForm.querySelector(`input[name="${name}"]:checked`) ||
          claimForm.querySelector(`input[name="${name}"]`);
      }
      const why = data.problems[name] || data.missing[name] || "";
      message = `Claim ${Number(item) + 1}: ${fieldName(name)} missing. ${why}`;
    }
    if (target) {
      target.focus();
      target.scrollIntoView({ block: "nearest" });
    }
    announce(message.trim());
  }

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-open-shortcuts]") && dialog) dialog.showModal();
    if (event.target.closest("[data-open-flag]") && flagDialog) {
      event.preventDefault();
      flagDialog.showModal();
      const first = flagDialog.querySelector("input[type=radio]");
      if (first) first.focus();
    }
    const button = event.target.closest("#submit-button");
    if (button) {
      event.preventDefault();
      enter();
    }
  });

  // Enter submits from the task itself: the page, the editor, a passage, a choice -- never
  // from a link, a button, a menu, a text field or anything outside the task.
  function taskFocus(el) {
    if (!el || el === document.body || el === document.documentElement) return true;
    if (el.id === "content") return true;
    if (!root.contains(el)) return false;
    return !el.matches("a, button, summary, select, textarea, input:not([type=radio]):not([type=checkbox])");
  }

  // Controls that use the arrow keys themselves keep them.
  const usesArrows = (el) => el && el.matches &&
    el.matches("input, select, textarea, [contenteditable], .passage-text, [role=slider]");

  // --- Keys --------------------------------------------------------------------------------

  function cycle(inputs, first) {
    if (!inputs.length || off(inputs[0])) return null;
    const at = inputs.findIndex((i) => i.checked);
    const next = at < 0 ? inputs[first || 0] : inputs[(at + 1) % inputs.length];
    next.checked = true;
    fire(next);
    return next;
  }

  function severity(value) {
    const input = claimForm.querySelector(`input[name=severity][value="${value}"]`);
    if (!input || off(input)) return;
    input.checked = true;
    fire(input);
  }

  function support(input) {
    if (off(input)) return;
    input.checked = true;
    if (input.value === "supported") {
      const none = claimForm.querySelector('input[name=severity][value="none"]');
      if (none) none.checked = true;
    }
    fire(input);
  }

  const SEVERITY = { Digit1: "none", Digit2: "minor", Digit3: "major", Digit4: "critical" };

  function answerKey(key) {
    const form = answerForm();
    if (key === "r") {
      const inputs = Array.from(form.querySelectorAll("input[name=relevance]")).reverse();
      const chosen = cycle(inputs, 0); // 2, then 1, then 0
      if (chosen) announce(`Relevance ${chosen.value}`);
      return Boolean(inputs.length);
    }
    if (key === "a") {
      const chosen = cycle(Array.from(form.querySelectorAll("input[name=abstention]")), 0);
      if (chosen) announce(`Abstention ${chosen.value}`);
      return Boolean(chosen);
    }
    const box = form.querySelector(`input[name=failure_labels][data-key="${CSS.escape(key)}"]`);
    if (box && !off(box)) {
      box.checked = !box.checked;
      fire(box);
      announce(`${box.value.replace(/_/g, " ")} ${box.checked ? "on" : "off"}`);
      return true;
    }
    return false;
  }

  function claimKey(event) {
    const key = event.key;
    if (!claimForm) return false;
    if (event.shiftKey && SEVERITY[event.code]) { severity(SEVERITY[event.code]); return true; }
    const supportInput = claimForm.querySelector(`input[name=support][data-key="${CSS.escape(key)}"]`);
    if (supportInput && !event.shiftKey) { support(supportInput); return true; }
    switch (key) {
      case "j": select(selected + 1, true); return true;
      case "k": select(selected - 1, true); return true;
      case "s": cycle(Array.from(claimForm.querySelectorAll("input[name=severity]"))); return true;
      case "e": {
        const box = field("requires_evidence");
        if (box && !off(box)) { box.checked = !box.checked; fire(box); }
        return true;
      }
      case "p": focusPassage(1); return true;
      case "P": focusPassage(-1); return true;
      case "x": toggleEvidence(); return true;
      case "c": citationVerdict("supports"); return true;
      case "C": citationVerdict("does_not_support"); return true;
      case "q": { const quote = field("evidence_quote"); if (quote) quote.focus(); return true; }
      case ".": quoteSentence(); return true;
      case "v": toggleFold(); return true;
      case "n": field("note").focus(); return true;
      default: return false;
    }
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || (dialog && dialog.open) || (flagDialog && flagDialog.open)) return;
    const el = document.activeElement;
    const key = event.key;
    if (caretKeys(event)) return;
    if (!["Shift", "Control", "Alt", "Meta"].includes(key)) quoteNow();
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (textLike(el)) {
      if (key === "Escape") {
        flushAll();
        (el.form === answerForm() ? document.getElementById("whole-answer-title")
          : document.getElementById("claim-heading") || root).focus();
      } else if (key === "Enter" && el.tagName === "INPUT" &&
        (el.form === claimForm || el.form === answerForm())) {
        event.preventDefault(); // never posts the form: the draft saves on its own
        flushAll();
      }
      return;
    }
    if (key === "Enter") {
      if (taskFocus(el)) { event.preventDefault(); enter(); }
      return;
    }
    // Undo the submit just made (the notice's button): Backspace always, z with shortcuts on.
    const undo = document.getElementById("undo-form");
    if (undo && (key === "Backspace" || (key === "z" && shortcutsOn)) &&
      !(el && el.matches && el.matches("select"))) {
      event.preventDefault();
      announce("Undoing the submit…");
      undo.requestSubmit();
      return;
    }
    if (key === "ArrowDown" || key === "ArrowUp") {
      if (usesArrows(el)) return;
      select(selected + (key === "ArrowDown" ? 1 : -1), true);
      event.preventDefault();
      return;
    }
    if (!shortcutsOn || key.length !== 1 || (el && el.matches("select"))) return;
    if (key === "?") { if (dialog) dialog.showModal(); event.preventDefault(); return; }
    if (key === "N") { document.getElementById("answer-note").focus(); event.preventDefault(); return; }
    if (claimKey(event) || answerKey(key)) event.preventDefault();
  });

  // --- Start -------------------------------------------------------------------------------

  if (claimForm && claimCount) {
    fill(selected);
    decorate();
  }
})();
