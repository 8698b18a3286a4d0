// precube's console: sign-in, the frame (sidebar with the project and its pages) and hash routing
// (`#/projects/ssb/models/ssb/segments`): every page has a URL and the back button works.

import { all, api, signOut, signedInUser } from "./api.js";
import { alertBox, badge, clear, errorText, h, spinner, toast } from "./dom.js";
import { go, href } from "./nav.js";
import { renderLogin } from "./pages/login.js";

const LEVELS = { QUERY: 1, OPERATION: 2, MANAGEMENT: 3, ADMIN: 4 };

const ROUTES = [
  ["/projects", () => import("./pages/projects.js"), "projects"],
  ["/projects/:project/models", () => import("./pages/models.js"), "models"],
  ["/projects/:project/models/:model", () => import("./pages/model.js"), "models"],
  ["/projects/:project/models/:model/segments", () => import("./pages/segments.js"), "models"],
  ["/projects/:project/models/:model/indexes", () => import("./pages/indexes.js"), "models"],
  ["/projects/:project/tables", () => import("./pages/tables.js"), "tables"],
  ["/projects/:project/jobs", () => import("./pages/jobs.js"), "jobs"],
  ["/projects/:project/jobs/:job", () => import("./pages/job.js"), "jobs"],
  ["/projects/:project/query", () => import("./pages/query.js"), "query"],
  ["/projects/:project/cache", () => import("./pages/cache.js"), "cache"],
];

const NAV = [
  ["models", "Models", "◫"],
  ["tables", "Tables", "▦"],
  ["jobs", "Jobs", "⟳"],
  ["query", "Query", "⌕"],
  ["cache", "Cache", "◎"],
];

/** Who is signed in and what they may do, per project. */
class Context {
  constructor(me, projects) {
    this.user = me.username;
    this.isAdmin = me.authorities.some((a) => a.authority === "ROLE_ADMIN");
    this.projects = projects;
  }

  permission(project) {
    const found = this.projects.find((p) => p.name === project);
    return found ? found.permission : null;
  }

  /** Whether the user holds `level` on `project` (the server checks again: this only hides what it would refuse). */
  can(project, level) {
    if (this.isAdmin) return true;
    const held = this.permission(project);
    return Boolean(held) && LEVELS[held] >= LEVELS[level];
  }

  async reload() {
    this.projects = await all("/projects", {});
  }
}

const app = document.getElementById("app");
let ctx = null;
let leave = [];

function parse() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = raw.split("?");
  return { path: path.replace(/\/+$/, "") || "/", query: new URLSearchParams(search) };
}

function match(path) {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const [pattern, load, section] of ROUTES) {
    const want = pattern.split("/").filter(Boolean);
    if (want.length !== parts.length) continue;
    const params = {};
    if (want.every((w, i) => (w.startsWith(":") ? ((params[w.slice(1)] = parts[i]), true) : w === parts[i]))) {
      return { load, params, section };
    }
  }
  return null;
}

function sidebar(project, section) {
  const projects = ctx.projects.map((p) => h("option", { value: p.name, selected: p.name === project }, p.name));
  const picker = h("select", { class: "project-picker", "aria-label": "Project" }, projects);
  if (!project) picker.prepend(h("option", { value: "", selected: true, disabled: true }, "Choose a project"));
  picker.addEventListener("change", () => go(`/projects/${encodeURIComponent(picker.value)}/${section === "projects" ? "models" : section}`));
  const nav = project
    ? NAV.map(([key, label, icon]) =>
        h("a", { class: ["nav-item", key === section && "active"], href: href("projects", project, key), "data-nav": key }, h("span", { class: "nav-icon", "aria-hidden": "true" }, icon), label),
      )
    : [];
  const held = project ? (ctx.isAdmin ? "ADMIN" : ctx.permission(project)) : null;
  return h(
    "aside",
    { class: "sidebar" },
    h(
      "div",
      { class: "sidebar-inner" },
    h("a", { class: "brand", href: "#/projects" }, h("img", { src: "/web/favicon.svg", alt: "" }), h("span", {}, "precube")),
    h("div", { class: "side-label" }, "Project"),
    picker,
    held ? h("div", { class: "side-permission" }, "Your access ", badge(held)) : null,
    h("nav", { class: "nav" }, h("a", { class: ["nav-item", section === "projects" && "active"], href: "#/projects" }, h("span", { class: "nav-icon", "aria-hidden": "true" }, "▤"), "All projects"), nav),
    h(
      "div",
      { class: "side-foot" },
      h("div", { class: "user" }, h("span", { class: "avatar", "aria-hidden": "true" }, ctx.user.slice(0, 1).toUpperCase()), h("div", {}, h("div", { class: "user-name", "data-testid": "user" }, ctx.user), h("div", { class: "user-role" }, ctx.isAdmin ? "System admin" : "User"))),
      h("button", { class: "btn btn-ghost btn-sm", onclick: () => { signOut(); ctx = null; go("/login"); } }, "Sign out"),
      h("a", { class: "side-link", href: "/docs", target: "_blank", rel: "noopener" }, "REST API docs ↗"),
    ),
    ),
  );
}

async function route() {
  for (const fn of leave) fn();
  leave = [];
  const { path, query } = parse();
  if (path === "/login" || !signedInUser()) {
    ctx = null;
    const back = path === "/login" ? query.get("next") || "/projects" : path + (query.toString() ? `?${query}` : "");
    if (path !== "/login") return go(`/login?next=${encodeURIComponent(back)}`);
    return renderLogin(app, back);
  }
  if (path === "/") return go("/projects");
  const found = match(path);
  if (!ctx) {
    clear(app).append(spinner("Signing in…"));
    try {
      const me = await api.get("/user/authentication");
      ctx = new Context(me, await all("/projects", {}));
    } catch (err) {
      clear(app).append(h("div", { class: "boot-error" }, alertBox(err)));
      return;
    }
  }
  if (!found) {
    return go(`/projects`);
  }
  const project = found.params.project;
  const main = h("main", { class: "main" });
  clear(app).append(h("div", { class: "shell" }, sidebar(project, found.section), main));
  app.classList.remove("booting");
  if (project && !ctx.isAdmin && !ctx.permission(project)) {
    main.append(alertBox(new Error(`you hold no permission on project ${project}, or it does not exist`)));
    return;
  }
  let alive = true;
  const view = {
    main,
    params: found.params,
    query,
    ctx,
    alive: () => alive,
    onLeave: (fn) => leave.push(fn),
    /** Run `fn` every `ms` (a number, or a function giving it) while this page is shown, first now unless
     * `now` is false: live updates without reloading; a failure is shown and the next tick tries again. */
    every(ms, fn, now = true) {
      let timer = null;
      const tick = async () => {
        if (!alive) return;
        try {
          await fn();
        } catch (err) {
          if (alive) toast(errorText(err), "error");
        }
        if (alive) timer = setTimeout(tick, typeof ms === "function" ? ms() : ms);
      };
      if (now) tick();
      else timer = setTimeout(tick, typeof ms === "function" ? ms() : ms);
      leave.push(() => clearTimeout(timer));
    },
  };
  leave.push(() => (alive = false));
  main.append(spinner());
  try {
    const page = await found.load();
    if (!alive) return;
    clear(main);
    await page.render(view);
  } catch (err) {
    if (!alive) return;
    clear(main).append(alertBox(err));
  }
}

window.addEventListener("hashchange", route);
window.addEventListener("precube:signed-out", (e) => {
  ctx = null;
  toast(`Signed out: ${e.detail}`, "error");
  go("/login");
});
window.addEventListener("unhandledrejection", (e) => {
  toast(errorText(e.reason), "error");
  e.preventDefault();
});
route();
