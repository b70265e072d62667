// Jobs: a list that polls (one stream per listed job would exhaust the browser's connections), and
// a job's page that follows its live event stream and draws its timeline.

import { api, enc, streamJobEvents } from "./api.js";
import { badge, button, clear, el, errorText, factList, heading, link, sleep, table, when } from "./dom.js";
import { drawTimeline } from "./timeline.js";
import { uploadPanel } from "./upload.js";

export const FINAL = new Set(["completed", "failed", "dead_lettered", "cancelled"]);
const STATUSES = ["", "queued", "running", "retrying", "completed", "failed", "dead_lettered", "cancel_requested", "cancelled"];
const POLL_MS = 2000;

function progress(job) {
  return el("progress", { max: 100, value: job.progress ?? 0, "aria-label": `${job.progress ?? 0}% done` });
}

async function documentNames(ids, names, signal) {
  if (ids.every((id) => names.has(id))) return;
  const docs = await api("/v1/documents?limit=200", { signal });
  for (const d of docs.items) names.set(d.document_id, d.filename);
  // A deleted or older document keeps its id, rather than a fetch at every poll.
  for (const id of ids) if (!names.has(id)) names.set(id, id);
}

function renderList(ctx) {
  const { root } = ctx;
  const filter = el("select", { id: "job-status-filter" }, STATUSES.map((s) => el("option", { value: s, text: s || "any" })));
  const holder = el("div", { id: "job-list" });
  const updated = el("p", { class: "hint", id: "jobs-updated" });
  root.append(
    heading("Jobs"),
    uploadPanel(ctx),
    el("div", { class: "toolbar" }, [el("label", { for: "job-status-filter", text: "Status" }), filter, updated]),
    holder,
  );
  const names = new Map();
  let timer = null;
  async function poll() {
    if (!ctx.isCurrent()) return;
    try {
      const query = filter.value ? `&status=${enc(filter.value)}` : "";
      const page = await api(`/v1/jobs?limit=50${query}`, { signal: ctx.signal });
      await documentNames(page.items.map((j) => j.document_id), names, ctx.signal);
      const rows = page.items.map((job) => [
        link(`#/jobs/${enc(job.job_id)}`, job.job_id.slice(0, 8), { "aria-label": `Job ${job.job_id}` }),
        badge(job.status),
        names.get(job.document_id) ?? job.document_id,
        job.kind,
        job.stage ?? "—",
        progress(job),
        job.waiting ?? (job.error ? job.error.code : ""),
        when(job.created_at),
      ]);
      clear(holder).append(rows.length
        ? table("Latest jobs, newest first", ["Job", "Status", "Document", "Kind", "Stage", "Progress", "Waiting / error", "Created"], rows, { id: "jobs-table" })
        : el("p", { text: "No jobs yet: upload a PDF." }));
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}, every ${POLL_MS / 1000} s`;
    } catch (error) {
      if (!ctx.isCurrent()) return;
      ctx.status(`Could not list jobs: ${errorText(error)}`);
    }
    if (ctx.isCurrent()) timer = setTimeout(poll, document.hidden ? POLL_MS * 5 : POLL_MS);
  }
  filter.addEventListener("change", () => { clearTimeout(timer); poll(); });
  ctx.onCleanup(() => clearTimeout(timer));
  poll();
}

function facts(job) {
  const c = job.counters || {};
  const rows = [
    ["Status", badge(job.status)], ["Kind", job.kind], ["Stage", job.stage ?? "—"],
    ["Progress", el("span", {}, [progress(job), ` ${job.progress ?? 0}%`])],
    ["Waiting", job.waiting ?? "—"], ["Attempts", job.attempts],
    ["Pages", `${c.pages ?? 0} (OCR ${c.ocr_pages ?? 0})`], ["Chunks / points", `${c.chunks ?? 0} / ${c.points ?? 0}`],
    ["Created", when(job.created_at)], ["Started", when(job.started_at)], ["Finished", when(job.finished_at)],
    ["Document", link(`#/documents/${enc(job.document_id)}`, job.document_id)],
  ];
  if (job.error) rows.push(["Error", `${job.error.code}: ${job.error.message ?? ""}`]);
  return factList(rows, "job-facts");
}

function renderJob(ctx, jobId) {
  const { root, signal } = ctx;
  const factsBox = el("div");
  const live = el("p", { id: "live-state", class: "hint", role: "status" });
  const timelineBox = el("div", { id: "timeline-box" });
  const actions = el("div", { class: "toolbar" });
  root.append(heading(`Job ${jobId}`), live, actions, heading("Timeline", 2), timelineBox, heading("Details", 2), factsBox);
  let job = null;
  // One timeline request at a time; a call while one runs asks for another run after it, so that
  // the last call's promise resolves on a timeline drawn after it was made.
  let drawing = null;
  let again = false;

  function refreshTimeline() {
    if (drawing) {
      again = true;
      return drawing;
    }
    drawing = (async () => {
      do {
        again = false;
        try {
          const timeline = await api(`/v1/jobs/${enc(jobId)}/timeline`, { signal });
          drawTimeline(clear(timelineBox), timeline);
        } catch (error) {
          if (ctx.isCurrent()) clear(timelineBox).append(el("p", { class: "error", text: errorText(error) }));
        }
      } while (again && ctx.isCurrent());
    })().finally(() => { drawing = null; });
    return drawing;
  }

  function show(body) {
    job = body;
    clear(factsBox).append(facts(body));
    clear(actions);
    if (!FINAL.has(body.status)) actions.append(button("Cancel job", cancel));
    if (body.status === "failed" || body.status === "dead_lettered") actions.append(button("Retry job", retry));
  }
  async function cancel() {
    try { show(await api(`/v1/jobs/${enc(jobId)}/cancel`, { method: "POST", signal })); follow(); } catch (e) { ctx.status(errorText(e)); }
  }
  async function retry() {
    try { show(await api(`/v1/jobs/${enc(jobId)}/retry`, { method: "POST", signal })); follow(); } catch (e) { ctx.status(errorText(e)); }
  }

  let following = false;
  async function follow() {
    if (following) return;
    following = true;
    let after = 0;
    try {
      while (ctx.isCurrent() && job && !FINAL.has(job.status)) {
        live.textContent = "Live: following the job's event stream.";
        try {
          const result = await streamJobEvents(jobId, {
            after, signal,
            onEvent: (event) => { if (event.data && event.data.data) { show(event.data.data); refreshTimeline(); } },
          });
          after = result.after;
        } catch (error) {
          if (!ctx.isCurrent()) return;
          const busy = error.status === 429 || error.status === 503;
          live.textContent = busy
            ? "Live stream busy (the tenant's streams are all open): polling instead."
            : `Stream interrupted (${errorText(error)}): reconnecting.`;
          await sleep(Math.min(Math.max(error.retryAfter || 2, 1), 10) * 1000);
        }
        if (!ctx.isCurrent()) return;
        show(await api(`/v1/jobs/${enc(jobId)}`, { signal }));
        await refreshTimeline();
      }
      if (ctx.isCurrent() && job) live.textContent = `The job is ${job.status}.`;
    } catch (error) {
      if (ctx.isCurrent()) live.textContent = errorText(error);
    } finally {
      following = false;
    }
  }

  (async () => {
    try {
      show(await api(`/v1/jobs/${enc(jobId)}`, { signal }));
    } catch (error) {
      if (!ctx.isCurrent()) return;
      clear(root).append(heading("Job not found"), el("p", { class: "error", role: "alert", text: errorText(error) }));
      return;
    }
    await refreshTimeline();
    follow();
  })();
}

export const jobRoutes = [
  { pattern: /^\/jobs$/, role: "tenant", render: renderList },
  { pattern: /^\/jobs\/([^/]+)$/, role: "tenant", render: renderJob },
];
