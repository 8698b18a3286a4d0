// A project's jobs: filters (status, type, time, text), paging, live refresh while jobs run.

import { api } from "../api.js";
import { badge, fmt, h, progressBar, table } from "../dom.js";
import { card, pageHead } from "../layout.js";
import { go, href } from "../nav.js";

const STATUSES = ["PENDING", "RUNNING", "FINISHED", "ERROR", "STOPPED", "DISCARDED"];
const TYPES = ["INC_BUILD", "FULL_BUILD", "INDEX_BUILD", "INDEX_REFRESH", "INDEX_MERGE", "TABLE_SAMPLING"];
const WINDOWS = [["0", "Last day"], ["1", "Last week"], ["2", "Last month"], ["3", "Last year"], ["4", "All time"]];
const PAGE = 20;

export async function render(view) {
  const { main, params, query } = view;
  const { project } = params;
  const state = {
    statuses: new Set((query.get("status") || "").split(",").filter(Boolean)),
    type: query.get("type") || "",
    window: query.get("time") || "4",
    key: query.get("key") || "",
    page: Number(query.get("page") || 0),
  };
  const remember = () => {
    const q = new URLSearchParams();
    if (state.statuses.size) q.set("status", [...state.statuses].join(","));
    if (state.type) q.set("type", state.type);
    if (state.window !== "4") q.set("time", state.window);
    if (state.key) q.set("key", state.key);
    if (state.page) q.set("page", String(state.page));
    history.replaceState(null, "", `${href("projects", project, "jobs")}${q.toString() ? `?${q}` : ""}`);
  };
  main.append(pageHead({ crumbs: [["Projects", "#/projects"], [project, href("projects", project, "models")], ["Jobs"]], title: "Jobs", subtitle: "Builds, refreshes, merges and samplings, with their steps." }));
  const chips = h(
    "div",
    { class: "chips" },
    STATUSES.map((st) => {
      const chip = h("button", { class: ["chip", "chip-btn", state.statuses.has(st) && "on"], type: "button", "data-status": st }, st.toLowerCase());
      chip.addEventListener("click", () => {
        if (state.statuses.has(st)) state.statuses.delete(st);
        else state.statuses.add(st);
        chip.classList.toggle("on");
        state.page = 0;
        refresh();
      });
      return chip;
    }),
  );
  const type = h("select", { "aria-label": "Job type" }, h("option", { value: "" }, "All types"), TYPES.map((t) => h("option", { value: t, selected: t === state.type }, t.replaceAll("_", " ").toLowerCase())));
  const window = h("select", { "aria-label": "Time" }, WINDOWS.map(([v, l]) => h("option", { value: v, selected: v === state.window }, l)));
  const key = h("input", { type: "search", placeholder: "Model or job id", value: state.key, "aria-label": "Search" });
  type.addEventListener("change", () => ((state.type = type.value), (state.page = 0), refresh()));
  window.addEventListener("change", () => ((state.window = window.value), (state.page = 0), refresh()));
  let typing = null;
  key.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => ((state.key = key.value.trim()), (state.page = 0), refresh()), 250);
  });
  const listHost = h("div");
  const pager = h("div", { class: "pager" });
  main.append(card(null, [h("div", { class: "toolbar" }, chips, h("div", { class: "toolbar-right" }, type, window, key)), listHost, pager]));

  let running = false;
  async function refresh() {
    remember();
    const found = await api.get("/jobs", {
      project,
      time_filter: state.window,
      statuses: [...state.statuses],
      job_names: state.type || undefined,
      key: state.key || undefined,
      page_offset: state.page,
      page_size: PAGE,
    });
    running = found.value.some((j) => j.job_status === "RUNNING" || j.job_status === "PENDING");
    listHost.replaceChildren(
      table(
        [
          { label: "Job", value: (j) => h("a", { href: href("projects", project, "jobs", j.id), class: "mono" }, j.id.slice(0, 8)) },
          { label: "Type", value: (j) => j.job_name.replaceAll("_", " ") },
          { label: "Target", value: (j) => h("span", { class: "strong" }, j.target_subject || "–") },
          { label: "Range", value: (j) => (j.data_range_end ? `${fmt.day(j.data_range_start)} → ${fmt.day(j.data_range_end)}` : "–") },
          { label: "Status", value: (j) => badge(j.job_status) },
          { label: "Progress", class: "progress-cell", value: (j) => h("div", { class: "progress-row" }, progressBar(j.step_ratio, j.job_status === "ERROR" ? "bad" : j.job_status === "FINISHED" ? "ok" : undefined), h("span", { class: "muted" }, fmt.pct(j.step_ratio))) },
          { label: "Submitted", value: (j) => h("span", { title: fmt.when(j.create_time) }, fmt.ago(j.create_time)) },
          { label: "By", value: (j) => j.submitter || "–" },
          { label: "Duration", class: "num", value: (j) => fmt.duration(j.duration) },
        ],
        found.value,
        { onRow: (j) => go(`/projects/${encodeURIComponent(project)}/jobs/${j.id}`), empty: "No job matches these filters." },
      ),
    );
    const pages = Math.max(1, Math.ceil(found.total_size / PAGE));
    pager.replaceChildren(
      h("span", { class: "muted" }, `${fmt.num(found.total_size)} job${found.total_size === 1 ? "" : "s"}`),
      h("button", { class: "btn btn-sm", disabled: state.page === 0, onclick: () => ((state.page -= 1), refresh()) }, "‹ Previous"),
      h("span", {}, `Page ${state.page + 1} of ${pages}`),
      h("button", { class: "btn btn-sm", disabled: state.page + 1 >= pages, onclick: () => ((state.page += 1), refresh()) }, "Next ›"),
    );
  }
  await refresh();
  view.every(() => (running ? 1000 : 5000), refresh, false);
}
