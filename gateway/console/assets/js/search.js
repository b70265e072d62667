// Search over the tenant's chunks: hits shown as text only.

import { api, enc } from "./api.js";
import { clear, el, errorText, heading, link } from "./dom.js";

function renderSearch(ctx) {
  const query = el("input", { id: "search-query", type: "search", required: true, maxlength: 2000 });
  const mode = el("select", { id: "search-mode" }, ["hybrid", "dense", "keyword"].map((m) => el("option", { value: m, text: m })));
  const topK = el("input", { id: "search-top-k", type: "number", min: 1, max: 100, value: 5 });
  const results = el("ol", { id: "search-results", class: "results" });
  const note = el("p", { class: "hint", role: "status" });
  const form = el("form", { class: "card search-form", role: "search" }, [
    el("div", { class: "field grow" }, [el("label", { for: "search-query", text: "Search the documents" }), query]),
    el("div", { class: "field" }, [el("label", { for: "search-mode", text: "Mode" }), mode]),
    el("div", { class: "field" }, [el("label", { for: "search-top-k", text: "Results" }), topK]),
    el("button", { type: "submit", text: "Search" }),
  ]);
  ctx.root.append(heading("Search"), form, note, results);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(results);
    note.textContent = "Searching…";
    try {
      const body = await api("/v1/search", {
        method: "POST", signal: ctx.signal,
        json: { query: query.value, mode: mode.value, top_k: Number(topK.value) || 5 },
      });
      note.textContent = `${body.results.length} ${body.results.length === 1 ? "result" : "results"} (${body.mode}, index version ${body.index_version ?? "—"})`;
      for (const hit of body.results) {
        const pages = hit.page_start === hit.page_end ? `page ${hit.page_start}` : `pages ${hit.page_start}–${hit.page_end}`;
        results.append(el("li", { class: "hit" }, [
          el("p", { class: "meta" }, [
            link(`#/documents/${enc(hit.document_id)}`, hit.filename ?? hit.document_id, { class: "hit-file" }),
            ` · ${pages} · chunk ${hit.chunk_index} · score ${Number(hit.score).toFixed(3)}`,
          ]),
          el("p", { class: "text", text: hit.text }),
        ]));
      }
    } catch (error) {
      if (ctx.isCurrent()) note.textContent = `Search failed: ${errorText(error)}`;
    }
  });
  query.focus();
}

export const searchRoutes = [{ pattern: /^\/search$/, role: "tenant", render: renderSearch }];
