// DOM helpers. Text from the API (filenames, chunk text, error messages) only ever goes in as
// textContent or attribute values: nothing the service returns is parsed as HTML.

export function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "class") node.className = value;
    else if (name === "on") for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of [].concat(children)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

export const link = (href, text, props = {}) => el("a", { href, text, ...props });

export function button(text, onClick, props = {}) {
  return el("button", { type: "button", text, on: { click: onClick }, ...props });
}

// A table whose cells carry their column's name, so that narrow screens show each row as a card.
export function table(caption, columns, rows, { id } = {}) {
  const head = el("tr", {}, columns.map((c) => el("th", { scope: "col", text: c })));
  const body = el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((cell, i) =>
    el("td", { "data-label": columns[i] }, [cell])))));
  return el("div", { class: "table-wrap" }, [
    el("table", { class: "cards", id }, [el("caption", { text: caption }), el("thead", {}, [head]), body]),
  ]);
}

export function badge(status) {
  return el("span", { class: `badge badge-${String(status).replace(/[^a-z_]/g, "")}`, text: status });
}

export function heading(text, level = 1) {
  return el(`h${level}`, { text });
}

export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function errorText(error) {
  if (error && error.status) return `${error.message} (${error.status} ${error.code})`;
  return String(error && error.message ? error.message : error);
}

// Name-value pairs as a description list, each pair in its own box so that they flow in columns.
export function factList(rows, id) {
  return el("dl", { class: "facts", id }, rows.map(([name, value]) =>
    el("div", { class: "fact" }, [el("dt", { text: name }), el("dd", {}, [value])])));
}
