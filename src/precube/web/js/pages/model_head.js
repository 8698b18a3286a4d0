// The head shared by a model's pages (overview, segments, indexes): its status and tabs.

import { all, api } from "../api.js";
import { badge, confirmAction, toast } from "../dom.js";
import { button, pageHead, tabs } from "../layout.js";
import { href } from "../nav.js";

/** The model's summary (GET /models, exact name): status, broken reason, segments, storage. */
export async function modelSummary(project, model) {
  const [found] = await all("/models", { project, model_name: model, exact: true });
  if (!found) throw new Error(`no model ${model} in project ${project}`);
  return found;
}

export function modelHead(view, summary, active, actions = []) {
  const { project } = view.params;
  const model = summary.alias;
  const extra = [];
  if (view.ctx.can(project, "MANAGEMENT") && summary.status !== "BROKEN") {
    const online = summary.status === "ONLINE";
    extra.push(
      button(online ? "Take offline" : "Bring online", () =>
        confirmAction({
          title: online ? `Take ${model} offline?` : `Bring ${model} online?`,
          message: online ? "Queries stop using its layouts (they are answered by other models or pushed down)." : "Queries will be answered from its READY segments.",
          ok: online ? "Take offline" : "Bring online",
          run: async () => {
            await api.put(`/models/${encodeURIComponent(model)}/status`, { project, status: online ? "OFFLINE" : "ONLINE" });
            toast(`${model} is ${online ? "offline" : "online"}`, "ok");
            window.dispatchEvent(new HashChangeEvent("hashchange"));
          },
        }),
      { kind: "ghost" }),
    );
  }
  return [
    pageHead({
      crumbs: [["Projects", "#/projects"], [project, href("projects", project, "models")], ["Models", href("projects", project, "models")], [model]],
      title: model,
      badges: [badge(summary.status, summary.broken_reason || undefined)],
      actions: [...extra, ...actions],
    }),
    tabs(
      [
        ["Overview", href("projects", project, "models", model), "overview"],
        ["Segments", href("projects", project, "models", model, "segments"), "segments"],
        ["Indexes", href("projects", project, "models", model, "indexes"), "indexes"],
      ],
      active,
    ),
  ];
}
