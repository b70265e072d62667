// Upload by drag and drop, or with the file input inside the same zone (keyboard users and tests).

import { api, enc } from "./api.js";
import { clear, el, errorText, link } from "./dom.js";

export function uploadPanel(ctx) {
  const input = el("input", { id: "upload-file", type: "file", multiple: true, accept: "application/pdf,.pdf" });
  const results = el("ul", { id: "upload-results", class: "results", "aria-live": "polite" });
  const zone = el("div", { class: "dropzone", id: "dropzone" }, [
    el("label", { for: "upload-file", text: "Upload PDFs: drop them here, or choose files" }),
    input,
  ]);

  async function send(files) {
    const pdfs = [...files];
    if (!pdfs.length) return;
    const form = new FormData();
    for (const file of pdfs) form.append("file", file, file.name);
    clear(results).append(el("li", { text: `Uploading ${pdfs.length} ${pdfs.length === 1 ? "file" : "files"}…` }));
    try {
      const body = await api("/v1/documents", { method: "POST", form, signal: ctx.signal });
      clear(results);
      for (const r of body.results) {
        const item = el("li", { class: "upload-result" }, [el("span", { class: "filename", text: r.filename ?? "" }), " "]);
        if (r.error) item.append(el("span", { class: "error", text: `refused: ${r.error.code}: ${r.error.message ?? ""}` }));
        else {
          item.append(r.duplicate ? "already uploaded: " : "queued: ");
          item.append(link(`#/jobs/${enc(r.job_id)}`, `job ${r.job_id}`, { class: "upload-job" }));
        }
        results.append(item);
      }
    } catch (error) {
      if (ctx.isCurrent()) clear(results).append(el("li", { class: "error", role: "alert", text: `Upload failed: ${errorText(error)}` }));
    }
    input.value = "";
  }

  input.addEventListener("change", () => send(input.files));
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    send(event.dataTransfer ? event.dataTransfer.files : []);
  });
  return el("section", { class: "card", "aria-label": "Upload" }, [zone, results]);
}
