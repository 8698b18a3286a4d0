// All projects the user holds a permission on, with their models at a glance; admins create projects here.

import { all, api } from "../api.js";
import { badge, dialog, empty, field, fmt, h, alertBox, clear, toast } from "../dom.js";
import { button, pageHead } from "../layout.js";
import { go, href } from "../nav.js";

export async function render(view) {
  const { main, ctx } = view;
  await ctx.reload();
  const actions = ctx.isAdmin ? [button("New project", () => createProject(ctx), { kind: "primary", icon: "+" })] : [];
  main.append(pageHead({ title: "Projects", subtitle: "Each project holds its own tables, models, segments and jobs.", actions }));
  if (!ctx.projects.length) {
    main.append(empty("No project yet", ctx.isAdmin ? "Create one, or ask `precube project create`." : "Ask an admin to grant you access to a project."));
    return;
  }
  const grid = h("div", { class: "project-grid" });
  main.append(grid);
  for (const p of ctx.projects) {
    const models = h("div", { class: "project-models muted" }, "…");
    grid.append(
      h(
        "a",
        { class: "project-card", href: href("projects", p.name, "models"), "data-project": p.name },
        h("div", { class: "project-card-head" }, h("h2", {}, p.name), badge(ctx.isAdmin ? "ADMIN" : p.permission)),
        h("p", { class: "muted project-desc" }, p.description || `Default database ${p.default_database}`),
        models,
      ),
    );
    all("/models", { project: p.name })
      .then((found) => {
        const figures = [
          `${found.length} model${found.length === 1 ? "" : "s"}`,
          `${fmt.num(found.reduce((n, m) => n + m.segment_count, 0))} segments`,
          fmt.bytes(found.reduce((n, m) => n + m.storage, 0)),
        ];
        clear(models).append(...(found.length ? figures.map((f) => h("span", {}, f)) : ["No model yet"]));
      })
      .catch((err) => clear(models).append(String(err.message)));
  }
}

function createProject(ctx) {
  dialog({
    title: "New project",
    build(close) {
      const name = h("input", { placeholder: "sales", required: true });
      const database = h("input", { value: "DEFAULT" });
      const description = h("input", { placeholder: "optional" });
      const error = h("div");
      const form = h(
        "form",
        { class: "dialog-body" },
        field("Name", name, "Letters, digits and underscores."),
        field("Default database", database, "Where bare table names are looked up."),
        field("Description", description),
        error,
      );
      const ok = h("button", { class: "btn btn-primary", type: "button" }, "Create");
      ok.addEventListener("click", async () => {
        clear(error);
        try {
          await api.post("/projects", { name: name.value.trim(), default_database: database.value.trim() || "DEFAULT", description: description.value });
          await ctx.reload();
          toast(`Project ${name.value} created`, "ok");
          close(true);
          go(`/projects/${encodeURIComponent(name.value.trim())}/tables`);
        } catch (err) {
          error.append(alertBox(err));
        }
      });
      return h("div", {}, form, h("div", { class: "dialog-foot" }, h("button", { class: "btn", type: "button", onclick: () => close() }, "Cancel"), ok));
    },
  });
}
