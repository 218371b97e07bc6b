// Bundle upload: a progress bar while htmx sends the file, then "Importing…" until the server
// answers. The form posts normally without JavaScript; this only reports progress.
(() => {
  "use strict";

  function parts(event) {
    const origin = (event.detail && event.detail.elt) || event.target;
    const form = origin instanceof Element ? origin.closest("form[data-upload]") : null;
    if (!form) return null;
    return {
      form,
      box: form.querySelector("[data-upload-progress]"),
      bar: form.querySelector("[data-upload-bar]"),
      status: form.querySelector("[data-upload-status]"),
    };
  }

  function importing(p) {
    p.form.dataset.uploadPhase = "importing";
    p.bar.removeAttribute("value"); // indeterminate: the server is checking every line
    p.bar.textContent = "";
    p.status.textContent = "Importing… every line is checked before anything is written.";
  }

  // The server refuses a file past CLAIMDESK_MAX_UPLOAD_MB (data-max-bytes); say so before
  // sending it rather than after minutes of uploading.
  function tooLarge(form) {
    const limit = Number(form.dataset.maxBytes);
    if (!limit) return null;
    for (const input of form.querySelectorAll("input[type=file]")) {
      for (const file of input.files || []) {
        if (file.size > limit) {
          const mb = (bytes) => (bytes / 1048576).toFixed(1);
          return `${file.name} is ${mb(file.size)} MB; uploads are limited to ` +
            `${Math.round(limit / 1048576)} MB. Split it, or import it with the management ` +
            "command on the server.";
        }
      }
    }
    return null;
  }

  document.addEventListener("htmx:beforeRequest", (event) => {
    const p = parts(event);
    if (!p) return;
    const refusal = tooLarge(p.form);
    if (refusal) {
      event.preventDefault();
      p.box.hidden = false;
      p.bar.value = 0;
      p.status.textContent = refusal;
      return;
    }
    p.form.dataset.uploadPhase = "uploading";
    p.box.hidden = false;
    p.bar.value = 0;
    p.status.textContent = "Uploading… 0%";
  });

  // htmx reports upload and download progress with the same event; once the file is sent,
  // later events are the response arriving and are ignored.
  document.addEventListener("htmx:xhr:progress", (event) => {
    const p = parts(event);
    if (!p || p.form.dataset.uploadPhase !== "uploading") return;
    if (!event.detail.lengthComputable || !event.detail.total) return;
    const percent = Math.round((100 * event.detail.loaded) / event.detail.total);
    if (percent >= 100) {
      importing(p);
      return;
    }
    p.bar.value = percent;
    p.bar.textContent = `${percent}%`;
    p.status.textContent = `Uploading… ${percent}%`;
  });

  document.addEventListener("htmx:xhr:loadend", (event) => {
    const p = parts(event);
    if (p && p.form.dataset.uploadPhase === "uploading") importing(p);
  });

  // A failed request (network, server error) must not leave the form looking busy.
  document.addEventListener("htmx:afterRequest", (event) => {
    const p = parts(event);
    if (!p) return;
    p.form.dataset.uploadPhase = "";
    if (!event.detail.successful) {
      p.bar.value = 0;
      const xhr = event.detail.xhr;
      if (xhr && xhr.status === 413) {
        p.status.textContent = "The file is larger than this server accepts.";
      } else if (xhr && xhr.status >= 500) {
        p.status.textContent = "The import failed on the server: nothing was written. Try " +
          "again; if it fails again, tell your administrator (it is logged).";
      } else {
        p.status.textContent = "The upload failed: check the connection and try again.";
      }
    }
  });

  // A refused file comes back as a new form headed by the list of problems: focus it.
  document.addEventListener("htmx:afterSwap", () => {
    const summary = document.getElementById("bundle-errors");
    if (summary) summary.focus();
    showRequiredWhen();
  });

  // A field marked data-required-when="format=ragas" (the variant of a Ragas dataset) or
  // data-shown-when (its optional label schema) is shown only while that choice is made.
  // Without JavaScript it is always shown, and the server still decides what it needs.
  function showRequiredWhen() {
    const boxes = "form[data-upload] [data-required-when], form[data-upload] [data-shown-when]";
    document.querySelectorAll(boxes).forEach((box) => {
      const [name, value] = (box.dataset.requiredWhen || box.dataset.shownWhen).split("=");
      const chosen = box.closest("form").querySelector(`input[name="${name}"]:checked`);
      box.hidden = !chosen || chosen.value !== value;
    });
  }
  document.addEventListener("change", (event) => {
    if (event.target.closest && event.target.closest("form[data-upload]")) showRequiredWhen();
  });
  showRequiredWhen();
})();
