// A job's stages on a time axis: one row per stage, a bar from its last run's start to its finish,
// a hatched stretch before it for the time spent waiting and on earlier runs (retries, recoveries,
// a dead letter's wait before its replay), and a tick at each retry.

import { duration, el, table, when } from "./dom.js";

const STOPS = new Set(["job.dead_lettered", "job.failed"]);
const t = (iso) => (iso ? Date.parse(iso) : NaN);

function place(node, from, to, start, span) {
  const left = ((from - start) / span) * 100;
  const width = Math.max(((to - from) / span) * 100, 0.4);
  node.style.left = `${Math.min(Math.max(left, 0), 100)}%`;
  node.style.width = `${Math.min(width, 100 - Math.min(Math.max(left, 0), 99.6))}%`;
  return node;
}

function row(label, detail, pieces) {
  return el("li", { class: "tl-row" }, [
    el("span", { class: "tl-label" }, [el("strong", { text: label }), el("span", { class: "tl-detail", text: detail })]),
    el("span", { class: "tl-track" }, pieces),
  ]);
}

function stageRows(timeline, start, end, span) {
  const byName = new Map(timeline.stages.map((s) => [s.stage, s]));
  const names = [...timeline.pipeline, ...timeline.stages.map((s) => s.stage).filter((n) => !timeline.pipeline.includes(n))];
  const retries = timeline.events.filter((e) => e.type === "job.retrying");
  const final = timeline.finished_at ? t(timeline.finished_at) : null;
  let previousEnd = t(timeline.started_at);
  const rows = [];
  for (const name of names) {
    const stage = byName.get(name);
    if (!stage) {
      rows.push(row(name, "not run", []));
      continue;
    }
    const from = t(stage.started_at);
    const finished = t(stage.finished_at);
    const to = Number.isNaN(finished) ? (final ?? end) : finished;
    const state = stage.status === "done" ? "done" : final ? "failed" : "running";
    const stageRetries = retries.filter((e) => e.stage === name);
    // A stop (dead letter, failure) at this stage that a later replay or retry queued again.
    const stops = timeline.events.filter((e) => STOPS.has(e.type) && e.stage === name);
    const replays = stops.filter((e) => timeline.events.some((q) => q.type === "job.queued" && q.seq > e.seq)).length;
    const recovered = Math.max(stage.attempts - 1 - stageRetries.length - replays, 0);
    const pieces = [];
    if (!Number.isNaN(previousEnd) && from - previousEnd > 0) {
      pieces.push(place(el("span", {
        class: "tl-bar tl-wait",
        title: `${name}: ${duration(from - previousEnd)} waiting or on earlier runs`,
      }), previousEnd, from, start, span));
    }
    pieces.push(place(el("span", {
      class: `tl-bar tl-${state}`,
      title: `${name}: ${state}, ${duration(to - from)} (${when(stage.started_at)} to ${stage.finished_at ? when(stage.finished_at) : "now"})`,
    }), from, to, start, span));
    for (const r of [...stageRetries, ...stops]) {
      const at = t(r.timestamp);
      const stop = STOPS.has(r.type);
      if (!Number.isNaN(at)) {
        const title = `${stop ? r.status : "retry"} at ${when(r.timestamp)}: ${r.error_code ?? ""}`;
        pieces.push(place(el("span", { class: stop ? "tl-tick tl-stop" : "tl-tick", title }), at, at, start, span));
      }
    }
    let detail = `${state}, ${duration(to - from)}`;
    if (stage.attempts > 1) {
      const why = [[stageRetries.length, "retry", "retries"], [replays, "replay", "replays"], [recovered, "recovery", "recoveries"]]
        .filter(([n]) => n > 0).map(([n, one, many]) => `${n} ${n === 1 ? one : many}`);
      detail += `, ${stage.attempts} runs${why.length ? ` (${why.join(", ")})` : ""}`;
    }
    if (stage.parts) detail += `, ${stage.parts_done}/${stage.parts} parts`;
    if (stage.units_total && state === "running") detail += `, ${stage.units_done}/${stage.units_total}`;
    const li = row(name, detail, pieces);
    li.dataset.stage = name;
    li.dataset.state = state;
    rows.push(li);
    if (!Number.isNaN(finished)) previousEnd = finished;
  }
  return rows;
}

export function drawTimeline(box, timeline) {
  const start = t(timeline.created_at);
  const end = timeline.finished_at ? t(timeline.finished_at) : t(timeline.now);
  const span = Math.max(end - start, 1);
  const began = t(timeline.started_at);
  const queued = Number.isNaN(began) ? end : began;
  const rows = [
    row("queued", duration(queued - start), [place(el("span", { class: "tl-bar tl-wait", title: "queued" }), start, queued, start, span)]),
    ...stageRows(timeline, start, end, span),
  ];
  const summary = [`Total ${duration(end - start)}${timeline.finished_at ? "" : " so far"}`];
  const runs = timeline.stages.reduce((n, s) => n + s.attempts, 0);
  summary.push(`${timeline.stages.length} ${timeline.stages.length === 1 ? "stage" : "stages"} in ${runs} ${runs === 1 ? "run" : "runs"}`);
  if (timeline.recoveries) summary.push(`recovered ${timeline.recoveries} ${timeline.recoveries === 1 ? "time" : "times"}`);
  box.append(
    el("p", { class: "tl-summary", text: summary.join(" · ") }),
    el("ol", { class: "timeline", id: "timeline", "aria-label": "Stages on a time axis" }, rows),
    el("p", { class: "tl-axis" }, [
      el("span", { text: `0 (created ${when(timeline.created_at)})` }),
      el("span", { text: `+${duration(end - start)}${timeline.finished_at ? "" : " (now)"}` }),
    ]),
    el("p", { class: "tl-legend" }, [
      el("span", { class: "tl-key tl-done" }), "done ", el("span", { class: "tl-key tl-running" }), "running ",
      el("span", { class: "tl-key tl-failed" }), "stopped ", el("span", { class: "tl-key tl-wait" }), "waiting or earlier runs ",
      el("span", { class: "tl-key tl-tick-key" }), "retry ", el("span", { class: "tl-key tl-stop-key" }), "dead letter or failure",
    ]),
  );
  const events = timeline.events.map((e) => [
    String(e.seq), e.type, e.stage ?? "—", e.status ?? "—",
    Number.isNaN(t(e.timestamp)) ? "—" : `+${duration(t(e.timestamp) - start)}`, e.error_code ?? "",
  ]);
  box.append(el("details", { class: "events" }, [
    el("summary", { text: `Events (${events.length})` }),
    table("The job's events, oldest first", ["Seq", "Event", "Stage", "Status", "At", "Error"], events),
  ]));
}
