// claimdesk adjudication: keys to decide field after field. The page works without this file
// (every choice is a radio, the form posts); this only adds the keyboard and small comforts.
//
//   a / b   gold is reviewer A's / B's value, then focus moves to the next field
//   o       "other": checked, and focus goes to its value list
//   g       keep the gold the field has (agreed or decided)
//   j / k   next / previous field
//   r       the rationale box of the field's claim (or of the whole answer)
//   ?       the list of keys
//
// Keys never fire while focus is in a text field, a list or a text area, nor with a modifier;
// arrow keys are left alone, so a radio group's own arrow navigation keeps working.
(() => {
  "use strict";

  const form = document.getElementById("adjudication-form");
  if (!form) return;
  const dialog = document.getElementById("adjudication-keys");
  const opener = document.querySelector("[data-open-keys]");
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

  const currentRow = () => {
    const active = document.activeElement;
    const row = active && active.closest && active.closest("tr.field-row");
    if (row) return row;
    return rows().find((r) => r.classList.contains("undecided")) || rows()[0] || null;
  };

  const focusRow = (row) => {
    if (!row) return;
    const radio =
      row.querySelector("input[type=radio]:checked") || row.querySelector("input[type=radio]");
    if (radio) {
      radio.focus();
      row.scrollIntoView({ block: "nearest" });
    }
  };

  const step = (row, by) => {
    const all = rows();
    const at = all.indexOf(row);
    return at < 0 ? all[0] : all[Math.min(all.length - 1, Math.max(0, at + by))];
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

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (dialog && dialog.open) return; // Esc closes it natively
    if (typing(event.target)) return;
    const key = event.key;
    if (key === "?") {
      if (dialog) dialog.showModal();
      event.preventDefault();
      return;
    }
    const row = currentRow();
    if (!row) return;
    if (key === "a" || key === "b") {
      if (choose(row, key)) focusRow(step(row, 1));
    } else if (key === "o") {
      if (!choose(row, "other")) return;
      const select = row.querySelector("select");
      if (select) select.focus();
    } else if (key === "g") {
      if (choose(row, "keep")) focusRow(step(row, 1));
    } else if (key === "j") {
      focusRow(step(row, 1));
    } else if (key === "k") {
      focusRow(step(row, -1));
    } else if (key === "r") {
      const box = rationaleFor(row);
      if (box) box.focus();
    } else {
      return;
    }
    event.preventDefault();
  });

  // Picking a value in the "other" list chooses "other" for that field.
  form.addEventListener("change", (event) => {
    const select = event.target.closest("select");
    if (!select || !select.name.startsWith("o-")) return;
    const row = select.closest("tr.field-row");
    if (row && select.value) choose(row, "other");
  });
})();
