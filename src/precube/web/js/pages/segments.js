// A model's segments (seed 001): the timeline, Build (the start fixed to the last segment's end), Refresh,
// Merge of contiguous segments, Delete with the server's preview first, the model's running jobs live, and
// its segment settings (auto-merge, volatile range, retention).

import { all, api } from "../api.js";
import { alertBox, badge, clear, confirmAction, dayMs, dialog, field, fmt, h, progressBar, table, toast } from "../dom.js";
import { button, card, stats } from "../layout.js";
import { href } from "../nav.js";
import { drawTimeline, gaps, legend } from "../timeline.js";
import { modelHead, modelSummary } from "./model_head.js";
import { settingsCard } from "./segment_settings.js";

const ACTIVE = ["PENDING", "RUNNING"];

export async function render(view) {
  const { main, params, ctx } = view;
  const { project, model } = params;
  const path = `/models/${encodeURIComponent(model)}/segments`;
  const operate = ctx.can(project, "OPERATION");
  let summary = await modelSummary(project, model);
  let segments = [];
  const selected = new Set();

  const headHost = h("div");
  const statsHost = h("div");
  const timelineHost = h("div", { class: "timeline-host", "data-testid": "timeline" });
  const selectionBar = h("div", { class: "selection-bar" });
  const tableHost = h("div");
  const jobsHost = h("div", { class: "model-jobs", "data-testid": "model-jobs" });
  main.append(
    headHost,
    statsHost,
    card("Segment timeline", [timelineHost, operate ? selectionBar : null], {
      subtitle: `Each segment is a half-open time range [start, end) of precomputed data.${operate ? " Click segments to select them." : ""}`,
      actions: [legend()],
      class: "timeline-card",
    }),
    jobsHost,
    card("Segments", tableHost),
  );
  const settingsHost = h("div");
  main.append(settingsHost);
  settingsCard(settingsHost, view).catch((err) => settingsHost.replaceChildren(alertBox(err)));

  const sorted = () => [...segments].sort((a, b) => Number(a.segRange.date_range_start) - Number(b.segRange.date_range_start));

  function drawHead() {
    const actions = operate ? [button("Build", () => buildDialog(), { kind: "primary", icon: "▶", testid: "build" })] : [];
    headHost.replaceChildren(...modelHead(view, summary, "segments", actions));
  }

  function drawAll() {
    const list = sorted();
    const ready = list.filter((x) => x.status !== "NEW");
    const covered = list.length ? `${fmt.day(list[0].segRange.date_range_start)} → ${fmt.day(Math.max(...list.map((x) => Number(x.segRange.date_range_end))))}` : "–";
    const holes = gaps(list.map((x) => ({ start: Number(x.segRange.date_range_start), end: Number(x.segRange.date_range_end) })));
    statsHost.replaceChildren(
      stats([
        ["Segments", fmt.num(list.length), `${ready.length} queryable`],
        ["Source rows", fmt.num(ready.reduce((n, x) => n + (x.source_count || 0), 0))],
        ["Size", fmt.bytes(list.reduce((n, x) => n + (x.bytes_size || 0), 0))],
        ["Time covered", h("span", { class: "stat-small" }, covered), holes.length ? `${holes.length} gap${holes.length > 1 ? "s" : ""}` : "no gap"],
      ]),
    );
    if (!list.length) {
      timelineHost.replaceChildren(h("div", { class: "empty" }, h("div", { class: "empty-title" }, "No segment yet"), h("div", { class: "empty-detail" }, operate ? "Build the first one: it sets where the timeline starts." : "Nothing is built yet.")));
    } else {
      drawTimeline(timelineHost, list, { selected, onToggle: operate ? toggle : undefined });
    }
    drawSelection();
    tableHost.replaceChildren(
      table(
        [
          operate ? { label: "", class: "check", value: (x) => h("input", { type: "checkbox", checked: selected.has(x.id), "aria-label": `Select ${x.name}`, onchange: () => toggle(x) }) } : null,
          { label: "Segment", value: (x) => h("span", { class: "mono" }, x.name) },
          { label: "Start", value: (x) => fmt.day(x.segRange.date_range_start) },
          { label: "End", value: (x) => fmt.day(x.segRange.date_range_end) },
          { label: "Status", value: (x) => badge(x.status_to_display, x.status) },
          { label: "Source rows", class: "num", value: (x) => fmt.num(x.source_count) },
          { label: "Size", class: "num", value: (x) => fmt.bytes(x.bytes_size) },
          { label: "Layouts", class: "num", value: (x) => `${x.index_count} / ${x.index_count_total}` },
          { label: "Built", value: (x) => (x.last_build_time ? fmt.when(x.last_build_time) : "–") },
        ].filter(Boolean),
        list,
        { rowClass: (x) => (selected.has(x.id) ? "selected" : undefined), empty: "No segment yet." },
      ),
    );
  }

  function toggle(seg) {
    if (selected.has(seg.id)) selected.delete(seg.id);
    else selected.add(seg.id);
    drawAll();
  }

  function chosen() {
    return sorted().filter((x) => selected.has(x.id));
  }

  /** Whether the chosen segments are contiguous: each ends where the next starts. */
  function contiguous(list) {
    return list.length > 1 && list.every((x, i) => i === 0 || list[i - 1].segRange.date_range_end === x.segRange.date_range_start);
  }

  function drawSelection() {
    clear(selectionBar);
    if (!operate) return;
    const list = chosen();
    if (!list.length) {
      selectionBar.append(h("span", { class: "muted" }, "Select segments on the timeline or in the table to refresh, merge or delete them."));
      return;
    }
    const merge = button("Merge", () => mergeSegments(list), { testid: "merge", disabled: !contiguous(list), title: contiguous(list) ? "Merge into one segment" : "Select two or more contiguous segments" });
    selectionBar.append(
      h("span", { class: "strong" }, `${list.length} selected`),
      button("Refresh", () => refreshSegments(list), { testid: "refresh" }),
      merge,
      button("Delete", () => deleteSegments(list), { kind: "danger-ghost", testid: "delete" }),
      button("Clear", () => (selected.clear(), drawAll()), { kind: "ghost" }),
      list.length > 1 && !contiguous(list) ? h("span", { class: "muted" }, "Merge needs contiguous segments.") : null,
    );
  }

  async function load() {
    const listing = await api.get(path, { project, page_size: 10000, sort_by: "start_time", reverse: false });
    segments = listing.value;
    for (const id of [...selected]) if (!segments.some((x) => x.id === id)) selected.delete(id);
    drawAll();
  }

  function submitted(answer, what) {
    const [job] = answer.jobs;
    toast(`${what}: job ${job.job_id.slice(0, 8)} submitted`, "ok");
    selected.clear();
    return load().then(pollJobs);
  }

  function refreshSegments(list) {
    confirmAction({
      title: `Refresh ${list.length} segment${list.length > 1 ? "s" : ""}?`,
      message: "Each is rebuilt from the source tables and swapped in when done; it keeps answering meanwhile.",
      ok: "Refresh",
      run: async () => submitted(await api.put(path, { project, type: "REFRESH", ids: list.map((x) => x.id) }), "Refresh"),
    });
  }

  function mergeSegments(list) {
    const start = list[0].segRange.date_range_start;
    const end = list[list.length - 1].segRange.date_range_end;
    confirmAction({
      title: `Merge ${list.length} segments?`,
      message: `They become one segment ${fmt.day(start)} → ${fmt.day(end)}, re-aggregated from their layouts (the source is not read again).`,
      ok: "Merge",
      run: async () => submitted(await api.put(path, { project, type: "MERGE", ids: list.map((x) => x.id) }), "Merge"),
    });
  }

  async function deleteSegments(list) {
    const params = { project, purge: "false", ids: list.map((x) => x.id).join(",") };
    let preview;
    try {
      preview = await api.del(path, { ...params, dry_run: "true" });
    } catch (err) {
      toast(err.message, "error");
      return;
    }
    confirmAction({
      title: `Delete ${list.length} segment${list.length > 1 ? "s" : ""}?`,
      message: h("div", {}, h("p", {}, "The server's preview of what is dropped:"), h("pre", { class: "preview", "data-testid": "delete-preview" }, preview.preview)),
      ok: "Delete",
      danger: true,
      run: async () => {
        await api.del(path, params);
        toast(`Deleted ${list.length} segment${list.length > 1 ? "s" : ""}`, "ok");
        selected.clear();
        summary = await modelSummary(project, model);
        drawHead();
        await load();
      },
    });
  }

  function buildDialog() {
    const list = sorted();
    const partitioned = Boolean(summary.partition_desc);
    const lastEnd = list.length ? Math.max(...list.map((x) => Number(x.segRange.date_range_end))) : null;
    dialog({
      title: partitioned ? "Build a new segment" : "Build the model",
      build(close) {
        const error = h("div");
        const body = h("div", { class: "dialog-body" });
        let startInput = null;
        let endInput = null;
        const span = h("div", { class: "muted" });
        if (!partitioned) {
          body.append(h("p", {}, "This model has no partition column: the build covers all of its source rows."));
        } else {
          const last = list[list.length - 1];
          const length = last ? Number(last.segRange.date_range_end) - Number(last.segRange.date_range_start) : 365 * 86400000;
          const suggested = lastEnd !== null ? new Date(lastEnd + length).toISOString().slice(0, 10) : "";
          startInput = h("input", { type: "date", name: "start", value: lastEnd !== null ? fmt.day(lastEnd).slice(0, 10) : "", disabled: lastEnd !== null, required: true });
          endInput = h("input", { type: "date", name: "end", value: suggested, required: true, "data-testid": "build-end" });
          const update = () => {
            const a = startInput.value ? dayMs(startInput.value) : NaN;
            const b = dayMs(endInput.value);
            span.textContent = Number.isFinite(a) && Number.isFinite(b) && b > a ? `Builds [${fmt.day(a)}, ${fmt.day(b)}): ${Math.round((b - a) / 86400000)} days of data.` : "";
          };
          startInput.addEventListener("input", update);
          endInput.addEventListener("input", update);
          update();
          body.append(
            h(
              "div",
              { class: "form-row" },
              field("Start date", startInput, lastEnd !== null ? "Fixed: a new segment starts where the last one ends." : "The first segment: choose where the data starts."),
              field("End date", endInput, "Exclusive: the segment holds the data before this day."),
            ),
            span,
          );
        }
        body.append(error);
        const ok = h("button", { class: "btn btn-primary", type: "button", "data-testid": "build-submit" }, "Build");
        ok.addEventListener("click", async () => {
          clear(error);
          const request = { project };
          if (partitioned) {
            const end = dayMs(endInput.value);
            if (!Number.isFinite(end)) return error.append(alertBox(new Error("choose the end date")));
            request.end = String(end);
            if (lastEnd === null) {
              const start = dayMs(startInput.value);
              if (!Number.isFinite(start)) return error.append(alertBox(new Error("choose the start date")));
              request.start = String(start);
            }
          }
          ok.disabled = true;
          try {
            const answer = await api.post(path, request);
            close(true);
            await submitted(answer, "Build");
          } catch (err) {
            error.append(alertBox(err));
            ok.disabled = false;
          }
        });
        return h("div", {}, body, h("div", { class: "dialog-foot" }, h("button", { class: "btn", type: "button", onclick: () => close() }, "Cancel"), ok));
      },
    });
  }

  // the model's unfinished jobs, live: every second while one is pending or running
  let active = 0;
  let seen = new Set();
  async function pollJobs() {
    const jobs = (await api.get("/jobs", { project, time_filter: 4, key: model, page_size: 50, statuses: ["PENDING", "RUNNING", "STOPPED", "ERROR"] })).value.filter((j) => j.target_subject === summary.alias);
    const running = new Set(jobs.filter((j) => ACTIVE.includes(j.job_status)).map((j) => j.id));
    const ended = [...seen].filter((id) => !running.has(id));
    seen = running;
    active = running.size;
    jobsHost.replaceChildren(
      jobs.length
        ? card(
            "Unfinished jobs",
            h(
              "div",
              { class: "job-strip" },
              jobs.map((j) =>
                h(
                  "a",
                  { class: "job-chip", href: href("projects", project, "jobs", j.id), "data-job": j.id },
                  h("div", { class: "job-chip-head" }, h("span", { class: "strong" }, j.job_name.replaceAll("_", " ")), badge(j.job_status)),
                  h("div", { class: "muted" }, `${fmt.day(j.data_range_start)} → ${fmt.day(j.data_range_end)} · ${fmt.ago(j.create_time)}`),
                  progressBar(j.step_ratio, j.job_status === "ERROR" ? "bad" : undefined),
                ),
              ),
            ),
          )
        : "",
    );
    if (ended.length) {
      summary = await modelSummary(project, model);
      drawHead();
    }
    if (ended.length || active) await load(); // a segment being built, refreshed or merged shows as such
  }

  drawHead();
  await load();
  await pollJobs();
  view.every(() => (active ? 1000 : 5000), pollJobs, false);
  const onResize = () => segments.length && drawAll();
  window.addEventListener("resize", onResize);
  view.onLeave(() => window.removeEventListener("resize", onResize));
}
