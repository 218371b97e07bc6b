// claimdesk adjudication: keys to decide field after field. The page works without this file
// (every choice is a radio, the form posts); this only adds the keyboard and small comforts.
//
// The page opens with focus on the first field to decide (or on the message of a refused
// save), so a dispute of two fields is a, b, Enter.
//
//   a / b   gold is reviewer A's / B's value, then focus moves to the next field
//   o       "other": checked, and focus goes to its value list
//   g       keep the gold the field has (agreed or decided)
//   j / k   next / previous field
//   r       the task's rationale box
//   R       the rationale box of the field's claim (or of the whole answer)
//   ?       the list of keys
//   Enter   save and go to the next disagreement (always; Ctrl+Enter from a text box too)
//   Escape  leave a text box or a list, back to the field it belongs to (always)
//
// Letter keys honour the "single-key shortcuts" preference (data-shortcuts="off": WCAG 2.1.4,
// speech input types letters); Enter and Escape always work. Letter keys never fire while focus
// is in a text field, a list or a text area, nor with a modifier; arrow keys are left alone,
// so a radio group's own arrow navigation keeps working.
(() => {
  "use strict";

  const form = document.getElementById("adjudication-form");
  if (!form) return;
  const root = document.getElementById("adjudication");
  const shortcutsOn = !root || root.dataset.shortcuts !== "off";
  const dialog = document.getElementById("adjudication-keys");
  const opener = document.querySelector("[data-open-keys]");
  const taskRationale = document.getElementById("task-rationale");
  if (opener && dialog) {
    opener.hidden = false;
    opener.addEventListener("click", () => dialog.showModal());
  }

  const typing = (el) =>
    el &&
    (el.tagName === "TEXTAREA" ||
      el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["radio", "checkbox"].includes(el.type)) ||
      el.isContentEditable);

  // Rows a lead can reach: those of a collapsed "Agreed" block only once it is open.
  const rows = () =>
    [...form.querySelectorAll("tr.field-row")].filter((row) => {
      const details = row.closest("details");
      return !details || details.open;
    });

  // The field last worked on: where Escape returns from a text box.
  let lastRow = null;

  const currentRow = () => {
    const active = document.activeElement;
    const row = active && active.closest && active.closest("tr.field-row");
    if (row) return row;
    if (lastRow && rows().includes(lastRow)) return lastRow;
    return rows().find((r) => r.classList.contains("undecided")) || rows()[0] || null;
  };

  const focusRow = (row) => {
    if (!row) return;
    const radio =
      row.querySelector("input[type=radio]:checked") || row.querySelector("input[type=radio]");
    if (radio) {
      radio.focus();
      row.scrollIntoView({ block: "nearest" });
      lastRow = row;
    }
  };

  const step = (row, by) => {
    const all = rows();
    const at = all.indexOf(row);
    return at < 0 ? all[0] : all[Math.min(all.length - 1, Math.max(0, at + by))];
  };

  // After a decision: the next field still to decide below this one, else simply the next.
  const nextRow = (row) => {
    const all = rows();
    const after = all.slice(all.indexOf(row) + 1);
    const open = after.find((r) => r.classList.contains("undecided") && !r.querySelector("input:checked"));
    return open || step(row, 1);
  };

  const choose = (row, value) => {
    const radio = row.querySelector(`input[type=radio][value="${value}"]`);
    if (!radio) return false;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  };

  // The rationale box of the row's item (its claim, or the whole answer), opened if folded.
  const rationaleFor = (row) => {
    const item = row.closest(".adjudication-item");
    const box = item && item.querySelector(".rationale-field textarea");
    const folded = box && box.closest("details");
    if (folded) folded.open = true;
    return box;
  };

  const save = () => {
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  };

  // Enter saves from the form itself and from the page around it, never from a link, a
  // button, a menu's summary or a box where Enter has its own meaning.
  const enterSaves = (el) =>
    !el ||
    el === document.body ||
    el.id === "content" ||
    el.id === "adjudication-error" ||
    (form.contains(el) && el.matches("input[type=radio], input[type=checkbox]"));

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.metaKey) return;
    if (dialog && dialog.open) return; // Esc closes it natively
    const el = event.target;
    const key = event.key;
    if (typing(el)) {
      if (key === "Escape" && form.contains(el)) {
        // Out of the box (the next letters are keys again), back to the field it serves.
        const row = el.closest("tr.field-row") || currentRow();
        if (row) focusRow(row);
        else el.blur();
        event.preventDefault();
      } else if (key === "Enter" && event.ctrlKey && form.contains(el)) {
        save();
        event.preventDefault();
      }
      return;
    }
    if (event.ctrlKey) return;
    if (key === "Enter") {
      if (!enterSaves(el)) return;
      save();
      event.preventDefault();
      return;
    }
    if (!shortcutsOn || key.length !== 1) return;
    if (key === "?") {
      if (dialog) dialog.showModal();
      event.preventDefault();
      return;
    }
    if (key === "r") {
      if (!taskRationale) return;
      taskRationale.focus();
      event.preventDefault();
      return;
    }
    const row = currentRow();
    if (!row) return;
    if ("abcdef".includes(key) && key.length === 1) {
      // a, b: reviewer A's or B's value; c … f where more reviewers labelled the task
      if (!choose(row, key)) return;
      focusRow(nextRow(row));
    } else if (key === "o") {
      if (!choose(row, "other")) return;
      lastRow = row;
      const select = row.querySelector("select");
      if (select) select.focus();
    } else if (key === "g") {
      if (choose(row, "keep")) focusRow(nextRow(row));
    } else if (key === "j") {
      focusRow(step(row, 1));
    } else if (key === "k") {
      focusRow(step(row, -1));
    } else if (key === "R") {
      lastRow = row;
      const box = rationaleFor(row);
      if (box) box.focus();
    } else {
      return;
    }
    event.preventDefault();
  });

  form.addEventListener("focusin", (event) => {
    const row = event.target.closest("tr.field-row");
    if (row) lastRow = row;
  });

  // Picking a value in the "other" list chooses "other" for that field.
  form.addEventListener("change", (event) => {
    const select = event.target.closest("select");
    if (!select || !select.name.startsWith("o-")) return;
    const row = select.closest("tr.field-row");
    if (row && select.value) choose(row, "other");
  });

  // Start where the work is: the refused save's message, else the first field to decide.
  const error = document.getElementById("adjudication-error");
  if (error) {
    error.focus();
  } else {
    const first = rows().find((r) => r.classList.contains("undecided"));
    if (first) {
      const radio = first.querySelector("input[type=radio]");
      if (radio) {
        radio.focus({ preventScroll: true });
        lastRow = first;
      }
    }
  }
})();
