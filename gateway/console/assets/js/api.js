// Calls to the service's API. The key lives in sessionStorage and travels only in the
// Authorization header: never in a URL. Streams are read with fetch(), never EventSource.

const KEY = "ingest-console.api-key";

export const getKey = () => sessionStorage.getItem(KEY);
export const setKey = (key) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);
export const enc = encodeURIComponent;

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

function authHeaders(extra = {}) {
  const headers = new Headers(extra);
  headers.set("Authorization", `Bearer ${getKey() || ""}`);
  return headers;
}

async function failure(response) {
  // A key revoked or a tenant suspended meanwhile: the shell goes back to the sign-in form.
  if (response.status === 401) window.dispatchEvent(new CustomEvent("console:signed-out"));
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  const retry = Number(response.headers.get("Retry-After")) || 0;
  return new ApiError(
    response.status,
    (body && body.code) || "http_error",
    (body && (body.detail || body.title)) || response.statusText || "Request failed",
    retry,
  );
}

// One call: JSON in (json), multipart in (form), JSON out; an error answer throws ApiError.
export async function api(path, { method = "GET", json, form, signal } = {}) {
  const headers = authHeaders({ Accept: "application/json" });
  let body;
  if (json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(json);
  } else if (form) {
    body = form;
  }
  const response = await fetch(path, { method, headers, body, signal, cache: "no-store", credentials: "omit" });
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  return response.json();
}

function parseBlock(block) {
  const event = { id: null, type: "message", data: [] };
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const at = line.indexOf(":");
    const field = at < 0 ? line : line.slice(0, at);
    let value = at < 0 ? "" : line.slice(at + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") event.data.push(value);
    else if (field === "event") event.type = value;
    else if (field === "id") event.id = Number(value);
  }
  return event.data.length ? { ...event, data: event.data.join("\n") } : null;
}

// Read a job's event stream until it ends; onEvent gets {id, type, data (parsed JSON)}. Returns the
// last seq seen; a 204 (nothing more will come) returns {final: true}.
export async function streamJobEvents(jobId, { after = 0, signal, onEvent }) {
  const headers = authHeaders({ Accept: "text/event-stream" });
  if (after) headers.set("Last-Event-ID", String(after));
  const response = await fetch(`/v1/jobs/${enc(jobId)}/events`, {
    headers, signal, cache: "no-store", credentials: "omit",
  });
  if (response.status === 204) return { after, final: true };
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let last = after;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = (buffer + value).replace(/\r\n|\r(?!$)/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseBlock(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (!event) continue;
      if (event.id) last = event.id;
      let data = null;
      try { data = JSON.parse(event.data); } catch { data = null; }
      onEvent({ id: event.id, type: event.type, data });
    }
  }
  return { after: last, final: false };
}
