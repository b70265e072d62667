// The console's shell: sign-in, the navigation for the key's role, and the routes in the URL's
// fragment (#/jobs, #/jobs/<id>, ...), which never hold a credential.

import { api, forgetKey, getKey, setKey } from "./api.js";
import { adminRoutes } from "./admin.js";
import { clear, el, errorText, heading } from "./dom.js";
import { documentRoutes } from "./documents.js";
import { jobRoutes } from "./jobs.js";
import { searchRoutes } from "./search.js";

const TENANT_NAV = [["#/jobs", "Jobs"], ["#/documents", "Documents"], ["#/search", "Search"]];
const ADMIN_NAV = [["#/admin/tenants", "Tenants"], ["#/admin/dead-letters", "Dead letters"], ["#/admin/reindex", "Reindex"]];
const ROUTES = [...jobRoutes, ...documentRoutes, ...searchRoutes, ...adminRoutes];

const $ = (id) => document.getElementById(id);
let me = null;
let cleanups = [];

function setStatus(text) {
  $("status").textContent = text || "";
}

function showSignIn(message = "") {
  me = null;
  $("nav").hidden = true;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  clear($("view"));
  $("sign-in-view").hidden = false;
  $("sign-in-error").textContent = message;
  $("api-key").value = "";
  $("api-key").focus();
}

function showNav() {
  const items = me.role === "admin" ? ADMIN_NAV : TENANT_NAV;
  const list = clear($("nav-list"));
  for (const [href, text] of items) list.append(el("li", {}, [el("a", { href, text, dataset: { nav: href } })]));
  $("who").textContent = me.role === "admin" ? "Admin key" : `Tenant: ${me.tenant_name || me.tenant_id}`;
  $("nav").hidden = false;
  $("sign-out").hidden = false;
  $("sign-in-view").hidden = true;
}

async function identify() {
  try {
    me = await api("/v1/whoami");
    return true;
  } catch (error) {
    forgetKey();
    const reason = error.status === 401 ? "That key is not accepted." : errorText(error);
    showSignIn(reason);
    return false;
  }
}

function route() {
  for (const fn of cleanups.splice(0)) {
    try { fn(); } catch { /* a view's own cleanup */ }
  }
  if (!me) return;
  const hash = location.hash || "";
  const path = hash.startsWith("#/") ? hash.slice(1) : "";
  const fallback = me.role === "admin" ? "#/admin/tenants" : "#/jobs";
  if (!path) { location.replace(fallback); return; }
  for (const a of document.querySelectorAll("#nav-list a")) {
    const current = path === a.dataset.nav.slice(1) || path.startsWith(`${a.dataset.nav.slice(1)}/`);
    if (current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const view = clear($("view"));
  setStatus("");
  const controller = new AbortController();
  cleanups.push(() => controller.abort());
  const ctx = {
    root: view,
    me,
    signal: controller.signal,
    onCleanup: (fn) => cleanups.push(fn),
    status: setStatus,
    isCurrent: () => !controller.signal.aborted,
  };
  for (const r of ROUTES) {
    const match = r.pattern.exec(path);
    if (!match) continue;
    if (r.role !== me.role) {
      // Refused here, before any call: the server refuses it too.
      const needed = r.role === "admin" ? "an admin key" : "a tenant's key";
      view.append(heading("Not available"), el("p", { class: "error", role: "alert", text: `This page needs ${needed}.` }));
      return;
    }
    r.render(ctx, ...match.slice(1).map(decodeURIComponent));
    return;
  }
  view.append(heading("Not found"), el("p", { text: "No such page." }));
}

async function start() {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = $("api-key").value.trim();
    if (!key) return;
    setKey(key);
    $("api-key").value = "";
    if (await identify()) {
      showNav();
      if (!location.hash.startsWith("#/")) location.hash = me.role === "admin" ? "#/admin/tenants" : "#/jobs";
      route();
      $("main").focus();
    }
  });
  $("sign-out").addEventListener("click", () => {
    forgetKey();
    for (const fn of cleanups.splice(0)) fn();
    history.replaceState(null, "", location.pathname);
    showSignIn("Signed out.");
  });
  window.addEventListener("hashchange", route);
  window.addEventListener("console:signed-out", () => {
    if (!me) return;
    forgetKey();
    for (const fn of cleanups.splice(0)) fn();
    showSignIn("The key is no longer accepted: sign in again.");
  });
  if (getKey() && (await identify())) {
    showNav();
    route();
  } else if (!me) {
    showSignIn();
  }
}

start();
