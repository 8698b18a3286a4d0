// A project's models: status, segments and their range, storage, layouts.

import { all } from "../api.js";
import { badge, empty, fmt, h, table } from "../dom.js";
import { pageHead } from "../layout.js";
import { go, href } from "../nav.js";

export async function render(view) {
  const { main, params } = view;
  const project = params.project;
  const models = await all("/models", { project, sort_by: "alias", reverse: false });
  main.append(pageHead({ crumbs: [["Projects", "#/projects"], [project]], title: "Models", subtitle: "Star schemas precomputed per time segment." }));
  if (!models.length) {
    main.append(empty("No model yet", "Create one with `precube model create` or POST /kylin/api/models."));
    return;
  }
  const range = (m) => (m.segment_ranges.start === null ? "–" : `${fmt.day(m.segment_ranges.start)} → ${fmt.day(m.segment_ranges.end)}`);
  main.append(
    h(
      "section",
      { class: "card" },
      table(
        [
          { label: "Model", value: (m) => h("a", { href: href("projects", project, "models", m.alias), class: "strong" }, m.alias) },
          { label: "Status", value: (m) => badge(m.status, m.broken_reason || undefined) },
          { label: "Fact table", value: (m) => h("code", {}, m.fact_table) },
          { label: "Segments", class: "num", value: (m) => h("a", { href: href("projects", project, "models", m.alias, "segments") }, fmt.num(m.segment_count)) },
          { label: "Time range", value: range },
          { label: "Layouts", class: "num", value: (m) => fmt.num(m.total_indexes) },
          { label: "Storage", class: "num", value: (m) => fmt.bytes(m.storage) },
          { label: "Last modified", value: (m) => fmt.when(m.last_modified) },
        ],
        models,
        { onRow: (m) => go(`/projects/${encodeURIComponent(project)}/models/${encodeURIComponent(m.alias)}`) },
      ),
    ),
  );
}
