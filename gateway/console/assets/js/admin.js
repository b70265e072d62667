// Admin pages (admin keys only; the router never calls these for a tenant's key): tenants with
// their limits and status, the dead-letter list with replay, and reindex status.

import { api, enc } from "./api.js";
import { badge, button, clear, el, errorText, factList, heading, link, table, when } from "./dom.js";

const LIMITS = [
  ["max_active_jobs", "Active jobs at once"], ["max_upload_mb", "Upload size (MB)"],
  ["max_pages", "Pages per document"], ["max_storage_mb", "Storage (MB)"],
];

const limitText = (value) => (value === null || value === undefined ? "default" : String(value));

async function tenants(signal) {
  return (await api("/v1/admin/tenants", { signal })).items;
}

function renderTenants(ctx) {
  const holder = el("div", { id: "tenant-list" });
  ctx.root.append(heading("Tenants"), holder);
  async function load() {
    try {
      const rows = (await tenants(ctx.signal)).map((t) => [
        link(`#/admin/tenants/${enc(t.tenant_id)}`, t.name, { class: "tenant-link" }),
        badge(t.status),
        ...LIMITS.map(([name]) => limitText(t.limits[name])),
        when(t.created_at),
        button(t.status === "active" ? "Suspend" : "Resume", () => setStatus(t), { "aria-label": `${t.status === "active" ? "Suspend" : "Resume"} ${t.name}` }),
      ]);
      clear(holder).append(table("Every tenant", ["Tenant", "Status", ...LIMITS.map(([, label]) => label), "Created", "Action"], rows, { id: "tenants-table" }));
    } catch (error) {
      if (ctx.isCurrent()) ctx.status(errorText(error));
    }
  }
  async function setStatus(t) {
    const verb = t.status === "active" ? "suspend" : "resume";
    try {
      await api(`/v1/admin/tenants/${enc(t.tenant_id)}/${verb}`, { method: "POST", signal: ctx.signal });
      ctx.status(`${t.name}: ${verb === "suspend" ? "suspended" : "resumed"}.`);
    } catch (error) { ctx.status(errorText(error)); }
    load();
  }
  load();
}

function reindexFacts(r) {
  if (!r) return el("p", { text: "Never reindexed." });
  const rows = [
    ["Status", badge(r.status)], ["Versions", `${r.source_version} → ${r.target_version}`],
    ["Model", `${r.embedding_model ?? "—"} (${r.embedding_dimension ?? "—"})`], ["From stage", r.from ?? "—"],
    ["Progress", el("span", {}, [el("progress", { max: r.total || 1, value: r.done || 0, "aria-label": "documents reindexed" }), ` ${r.done}/${r.total}, ${r.failed} failed`])],
    ["Started", when(r.created_at)], ["Flipped", when(r.flipped_at)], ["Finished", when(r.finished_at)],
  ];
  return factList(rows, "reindex-facts");
}

async function latestReindex(tenantId, signal) {
  try { return await api(`/v1/admin/tenants/${enc(tenantId)}/reindex`, { signal }); } catch (error) {
    if (error.status === 404) return null;
    throw error;
  }
}

function renderTenant(ctx, tenantId) {
  const { root, signal } = ctx;
  const box = el("div");
  root.append(heading("Tenant"), box);
  async function load() {
    let t;
    try { t = await api(`/v1/admin/tenants/${enc(tenantId)}`, { signal }); } catch (error) {
      if (ctx.isCurrent()) clear(box).append(el("p", { class: "error", role: "alert", text: errorText(error) }));
      return;
    }
    const inputs = LIMITS.map(([name, label]) => {
      const input = el("input", { id: `limit-${name}`, name, type: "number", min: 1, value: t.limits[name] ?? "", placeholder: "default" });
      return [name, input, el("div", { class: "field" }, [el("label", { for: `limit-${name}`, text: label }), input])];
    });
    const form = el("form", { class: "card limits", id: "limits-form" }, [
      el("p", { class: "hint", text: "Leave a limit empty for the service default." }),
      ...inputs.map(([, , field]) => field), el("button", { type: "submit", text: "Save limits" }),
    ]);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const json = Object.fromEntries(inputs.map(([name, input]) => [name, input.value === "" ? null : Number(input.value)]));
      try {
        await api(`/v1/admin/tenants/${enc(tenantId)}/limits`, { method: "PATCH", json, signal });
        ctx.status("Limits saved.");
      } catch (error) { ctx.status(`Not saved: ${errorText(error)}`); }
      load();
    });
    const verb = t.status === "active" ? "suspend" : "resume";
    const toggle = button(verb === "suspend" ? "Suspend tenant" : "Resume tenant", async () => {
      try { await api(`/v1/admin/tenants/${enc(tenantId)}/${verb}`, { method: "POST", signal }); } catch (error) { ctx.status(errorText(error)); }
      load();
    });
    let reindex = null;
    try { reindex = await latestReindex(tenantId, signal); } catch (error) { ctx.status(errorText(error)); }
    clear(box).append(
      factList([["Name", t.name], ["Status", badge(t.status)], ["Tenant id", t.tenant_id], ["OCR languages", t.ocr_languages ?? "service default"]], "tenant-facts"),
      el("div", { class: "toolbar" }, [toggle]), heading("Limits", 2), form, heading("Latest reindex", 2), reindexFacts(reindex),
    );
  }
  load();
}

function renderDeadLetters(ctx) {
  const all = el("input", { id: "include-replayed", type: "checkbox" });
  const holder = el("div", { id: "dead-letter-list" });
  ctx.root.append(
    heading("Dead letters"),
    el("div", { class: "toolbar" }, [all, el("label", { for: "include-replayed", text: "Show replayed ones too" })]),
    holder,
  );
  const names = new Map();
  async function load() {
    try {
      const [letters, list] = await Promise.all([
        api(`/v1/admin/dead-letters${all.checked ? "?include_replayed=true" : ""}`, { signal: ctx.signal }),
        names.size ? null : tenants(ctx.signal),
      ]);
      for (const t of list || []) names.set(t.tenant_id, t.name);
      const rows = letters.items.map((d) => {
        const action = d.replayed ? "replayed" : button("Replay", (event) => replay(d, event.target), { "aria-label": `Replay job ${d.job_id}`, class: "replay", dataset: { job: d.job_id } });
        return [d.job_id, names.get(d.tenant_id) ?? d.tenant_id, d.stage, `${d.error.code ?? ""}: ${d.error.message ?? ""}`, d.retries, when(d.created_at), action];
      });
      clear(holder).append(rows.length
        ? table("Jobs whose retries ran out, oldest first", ["Job", "Tenant", "Stage", "Error", "Retries", "Dead-lettered", "Action"], rows, { id: "dead-letters-table" })
        : el("p", { id: "no-dead-letters", text: "No dead letters." }));
    } catch (error) {
      if (ctx.isCurrent()) ctx.status(errorText(error));
    }
  }
  async function replay(letter, target) {
    target.disabled = true;
    try {
      const job = await api(`/v1/admin/jobs/${enc(letter.job_id)}/replay`, { method: "POST", signal: ctx.signal });
      ctx.status(`Job ${job.job_id} replayed: ${job.status} again from its ${letter.stage} stage.`);
    } catch (error) {
      ctx.status(`Replay failed: ${errorText(error)}`);
    }
    load();
  }
  all.addEventListener("change", load);
  load();
}

function renderReindex(ctx) {
  const holder = el("div", { id: "reindex-list" });
  ctx.root.append(heading("Reindex"), holder);
  (async () => {
    try {
      const list = await tenants(ctx.signal);
      const found = await Promise.all(list.slice(0, 100).map((t) => latestReindex(t.tenant_id, ctx.signal)));
      const rows = list.slice(0, 100).map((t, i) => {
        const r = found[i];
        return [link(`#/admin/tenants/${enc(t.tenant_id)}`, t.name), r ? badge(r.status) : "never",
          r ? `${r.source_version} → ${r.target_version}` : "—", r ? `${r.done}/${r.total} (${r.failed} failed)` : "—",
          r ? r.embedding_model ?? "—" : "—", r ? when(r.created_at) : "—", r ? when(r.finished_at) : "—"];
      });
      clear(holder).append(table("Each tenant's latest reindex", ["Tenant", "Status", "Versions", "Done", "Model", "Started", "Finished"], rows, { id: "reindex-table" }));
    } catch (error) {
      if (ctx.isCurrent()) ctx.status(errorText(error));
    }
  })();
}

export const adminRoutes = [
  { pattern: /^\/admin\/tenants$/, role: "admin", render: renderTenants },
  { pattern: /^\/admin\/tenants\/([^/]+)$/, role: "admin", render: renderTenant },
  { pattern: /^\/admin\/dead-letters$/, role: "admin", render: renderDeadLetters },
  { pattern: /^\/admin\/reindex$/, role: "admin", render: renderReindex },
];
