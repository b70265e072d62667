// Documents: the tenant's list, and a document's chunks and page texts (hostile PDFs' text: as text only).

import { api, enc } from "./api.js";
import { badge, bytes, button, clear, el, errorText, factList, heading, link, table, when } from "./dom.js";

function renderList(ctx) {
  const holder = el("div", { id: "document-list" });
  ctx.root.append(heading("Documents"), holder);
  let cursor = null;
  const rows = [];
  const more = button("Load more", () => load());
  async function load() {
    try {
      const page = await api(`/v1/documents?limit=50${cursor ? `&cursor=${enc(cursor)}` : ""}`, { signal: ctx.signal });
      cursor = page.next_cursor;
      for (const d of page.items) {
        rows.push([
          link(`#/documents/${enc(d.document_id)}`, d.filename, { class: "doc-link" }),
          d.indexed ? `v${d.indexed.index_version}, ${d.indexed.chunks} chunks` : "not yet",
          d.latest_job ? badge(d.latest_job.status) : "—",
          d.page_count ?? "—",
          bytes(d.size_bytes),
          when(d.created_at),
        ]);
      }
      clear(holder).append(rows.length
        ? table("The tenant's documents, newest first", ["File", "Indexed", "Latest job", "Pages", "Size", "Uploaded"], rows, { id: "documents-table" })
        : el("p", { text: "No documents yet." }));
      if (cursor) holder.append(more);
    } catch (error) {
      if (ctx.isCurrent()) ctx.status(`Could not list documents: ${errorText(error)}`);
    }
  }
  load();
}

function chunkItem(chunk) {
  const where = chunk.page_start === chunk.page_end ? `page ${chunk.page_start}` : `pages ${chunk.page_start}–${chunk.page_end}`;
  const meta = [`#${chunk.index}`, where, `${chunk.token_count} tokens`];
  if (chunk.sections && chunk.sections.length) meta.push(chunk.sections.join(" › "));
  return el("li", { class: "chunk" }, [el("p", { class: "meta", text: meta.join(" · ") }), el("p", { class: "text", text: chunk.text })]);
}

function renderDocument(ctx, documentId) {
  const { root, signal } = ctx;
  const factsBox = el("div");
  const chunks = el("ol", { class: "chunks", id: "chunks" });
  const pages = el("div", { id: "page-texts" });
  const chunkHolder = el("section", { "aria-labelledby": "chunks-title" }, [heading("Chunks", 2), chunks]);
  chunkHolder.firstChild.id = "chunks-title";
  const textHolder = el("section", {}, [heading("Text", 2), pages]);
  const title = heading("Document");
  root.append(title, factsBox, chunkHolder, textHolder);
  let cursor = null;
  const more = button("Load more chunks", () => loadChunks());

  async function loadChunks() {
    try {
      const page = await api(`/v1/documents/${enc(documentId)}/chunks?limit=50${cursor ? `&cursor=${enc(cursor)}` : ""}`, { signal });
      more.remove();
      for (const c of page.items) chunks.append(chunkItem(c));
      cursor = page.next_cursor;
      if (cursor) chunkHolder.append(more);
    } catch (error) {
      if (ctx.isCurrent()) chunkHolder.append(el("p", { class: "hint", text: errorText(error) }));
    }
  }
  async function loadText() {
    try {
      const body = await api(`/v1/documents/${enc(documentId)}/text`, { signal });
      for (const p of body.pages) {
        pages.append(el("details", { class: "page-text" }, [
          el("summary", { text: `Page ${p.number} (${p.source})` }), el("p", { class: "text", text: p.text }),
        ]));
      }
    } catch (error) {
      if (ctx.isCurrent()) pages.append(el("p", { class: "hint", text: errorText(error) }));
    }
  }

  (async () => {
    let d;
    try {
      d = await api(`/v1/documents/${enc(documentId)}`, { signal });
    } catch (error) {
      if (ctx.isCurrent()) clear(root).append(heading("Document not found"), el("p", { class: "error", role: "alert", text: errorText(error) }));
      return;
    }
    title.textContent = `Document ${d.filename}`;
    const rows = [
      ["File", el("span", { id: "document-filename", text: d.filename })], ["Document id", d.document_id],
      ["Pages", d.page_count ?? "—"], ["Size", bytes(d.size_bytes)], ["SHA-256", d.sha256], ["Uploaded", when(d.created_at)],
      ["Indexed", d.indexed ? `version ${d.indexed.index_version}, ${d.indexed.chunks} chunks, ${when(d.indexed.finished_at)}` : "not yet"],
      ["Latest job", d.latest_job ? el("span", {}, [badge(d.latest_job.status), " ", link(`#/jobs/${enc(d.latest_job.job_id)}`, "open its timeline")]) : "—"],
      ["Metadata", Object.keys(d.metadata || {}).length ? JSON.stringify(d.metadata) : "—"],
    ];
    factsBox.append(factList(rows, "document-facts"));
    if (d.indexed) { loadChunks(); loadText(); } else chunkHolder.append(el("p", { class: "hint", text: "No version is indexed yet." }));
  })();
}

export const documentRoutes = [
  { pattern: /^\/documents$/, role: "tenant", render: renderList },
  { pattern: /^\/documents\/([^/]+)$/, role: "tenant", render: renderDocument },
];
