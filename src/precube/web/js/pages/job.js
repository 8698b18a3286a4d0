// One job: its steps with live progress (polled every second while it is pending or running), durations and
// output; pause / resume / discard / restart as its state and the user's permission allow.

import { api } from "../api.js";
import { badge, confirmAction, fmt, h, progressBar, toast } from "../dom.js";
import { button, card, facts, pageHead, stats } from "../layout.js";
import { href } from "../nav.js";

const LIVE = ["PENDING", "RUNNING"];
const ACTIONS = [
  ["PAUSE", "Pause", ["PENDING", "RUNNING"], ""],
  ["RESUME", "Resume", ["STOPPED", "ERROR"], "primary"],
  ["RESTART", "Restart", ["PENDING", "RUNNING", "STOPPED", "ERROR"], ""],
  ["DISCARD", "Discard", ["PENDING", "RUNNING", "STOPPED", "ERROR"], "danger-ghost"],
];

export async function render(view) {
  const { main, params, ctx } = view;
  const { project, job: id } = params;
  const operate = ctx.can(project, "OPERATION");
  const headHost = h("div");
  const statsHost = h("div");
  const stepsHost = h("div", { class: "steps", "data-testid": "steps" });
  const outputHost = h("pre", { class: "output", "data-testid": "output" }, "Select a step to see its output.");
  const infoHost = h("div");
  main.append(headHost, statsHost, h("div", { class: "two-col wide-left" }, card("Steps", stepsHost), card("Details", infoHost)), card("Step output", outputHost, { subtitle: "The step's progress line, its error and the job log written while it ran." }));
  let chosen = null;
  let status = "PENDING";

  async function output() {
    if (!chosen) return;
    const found = await api.get(`/jobs/${id}/steps/${chosen}/output`, { project });
    outputHost.textContent = found.cmd_output || "(no output)";
  }

  function act(action, label) {
    confirmAction({
      title: `${label} this job?`,
      message: action === "DISCARD" ? "A discarded job cannot be resumed; what it built so far is dropped." : action === "RESTART" ? "It starts again from its first step." : `The job will be ${label.toLowerCase()}d.`,
      ok: label,
      danger: action === "DISCARD",
      run: async () => {
        await api.put("/jobs/status", { project, action, job_ids: [id] });
        toast(`${label}: done`, "ok");
        await refresh();
      },
    });
  }

  async function refresh() {
    const job = await api.get(`/jobs/${id}/detail`, { project });
    status = job.job_status;
    const actions = operate ? ACTIONS.filter(([, , from]) => from.includes(status)).map(([a, label, , kind]) => button(label, () => act(a, label), { kind, testid: `job-${a.toLowerCase()}` })) : [];
    headHost.replaceChildren(
      pageHead({
        crumbs: [["Projects", "#/projects"], [project, href("projects", project, "models")], ["Jobs", href("projects", project, "jobs")], [id.slice(0, 8)]],
        title: `${job.job_name.replaceAll("_", " ")} · ${job.target_subject || ""}`,
        badges: [h("span", { "data-testid": "job-status" }, badge(status))],
        actions,
      }),
    );
    statsHost.replaceChildren(
      stats([
        ["Progress", h("div", { class: "stat-progress" }, fmt.pct(job.step_ratio), progressBar(job.step_ratio, status === "ERROR" ? "bad" : status === "FINISHED" ? "ok" : undefined))],
        ["Duration", fmt.duration(job.duration), LIVE.includes(status) ? "running" : ""],
        ["Range", h("span", { class: "stat-small" }, job.data_range_end ? `${fmt.day(job.data_range_start)} → ${fmt.day(job.data_range_end)}` : "–")],
        ["Submitted", h("span", { class: "stat-small" }, fmt.when(job.create_time)), job.submitter ? `by ${job.submitter}` : ""],
      ]),
    );
    if (job.error) statsHost.append(h("div", { class: "alert alert-error" }, job.error.split("\n")[0]));
    stepsHost.replaceChildren(
      ...job.steps.map((step, i) => {
        const row = h(
          "button",
          { class: ["step", `step-${step.step_status.toLowerCase()}`, chosen === step.id && "chosen"], type: "button", "data-step": step.name },
          h("span", { class: "step-index" }, String(i + 1)),
          h(
            "div",
            { class: "step-main" },
            h("div", { class: "step-head" }, h("span", { class: "strong" }, step.name), badge(step.step_status)),
            h("div", { class: "progress-row" }, progressBar(step.progress, step.step_status === "ERROR" ? "bad" : step.step_status === "FINISHED" ? "ok" : undefined), h("span", { class: "muted" }, step.total ? `${step.done} / ${step.total}` : fmt.pct(step.progress))),
            step.info.output ? h("div", { class: "step-output muted" }, step.info.output) : null,
            step.error ? h("div", { class: "step-error" }, step.error.split("\n")[0]) : null,
          ),
          h("span", { class: "step-time muted" }, step.duration ? fmt.duration(step.duration) : ""),
        );
        row.addEventListener("click", () => {
          chosen = step.id;
          for (const el of stepsHost.children) el.classList.toggle("chosen", el === row);
          output();
        });
        return row;
      }),
    );
    if (!chosen) {
      const current = job.steps.find((st) => st.step_status === "RUNNING" || st.step_status === "ERROR") || job.steps[job.steps.length - 1];
      if (current) chosen = current.id;
    }
    infoHost.replaceChildren(
      facts([
        ["Job id", h("code", {}, job.id)],
        ["Model", job.target_subject ? h("a", { href: href("projects", project, "models", job.target_subject, "segments") }, job.target_subject) : "–"],
        ["Segments", job.target_segments.length ? h("code", { class: "wrap" }, job.target_segments.join(", ")) : "–"],
        ["Priority", String(job.priority)],
        ["Started", fmt.when(job.exec_start_time)],
        ["Ended", fmt.when(job.exec_end_time)],
        ["State", h("code", {}, job.state)],
      ]),
    );
    await output();
  }
  await refresh();
  view.every(() => (LIVE.includes(status) ? 1000 : 10000), refresh, false);
}
