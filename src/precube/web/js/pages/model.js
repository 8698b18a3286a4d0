// A model's overview: its tables as a diagram with the join keys and types; dimensions, measures, computed
// columns, partition column and format; status with the reason when BROKEN.

import { all, api } from "../api.js";
import { alertBox, badge, fmt, h, s, table } from "../dom.js";
import { card, facts, stats } from "../layout.js";
import { modelHead, modelSummary } from "./model_head.js";

export async function render(view) {
  const { main, params } = view;
  const { project, model } = params;
  const [summary, desc, tables] = await Promise.all([
    modelSummary(project, model),
    api.get(`/models/${encodeURIComponent(project)}/${encodeURIComponent(model)}/model_desc`),
    all("/tables", { project, ext: false }),
  ]);
  main.append(...modelHead(view, summary, "overview"));
  if (summary.status === "BROKEN") {
    main.append(alertBox(new Error(`This model is BROKEN (${summary.broken_reason || "unknown reason"}): ${summary.broken_detail || "a table it reads changed"}. Fix the model or reload the table.`)));
  }
  const part = desc.partition_desc;
  main.append(
    stats([
      ["Status", badge(summary.status)],
      ["Segments", fmt.num(summary.segment_count), summary.segment_ranges.start === null ? "none built" : `${fmt.day(summary.segment_ranges.start)} → ${fmt.day(summary.segment_ranges.end)}`],
      ["Layouts", fmt.num(summary.total_indexes)],
      ["Storage", fmt.bytes(summary.storage)],
      ["Dimensions · measures", `${desc.dimensions.length} · ${desc.measures.length}`],
    ]),
  );
  main.append(card("Tables and joins", diagram(desc, tables), { subtitle: "The fact table and its lookups, joined on the keys shown." }));
  main.append(
    h(
      "div",
      { class: "two-col" },
      card(
        "Partition",
        facts([
          ["Partition column", part ? h("code", {}, part.partition_date_column) : "none (full builds only)"],
          ["Date format", part ? h("code", {}, part.partition_date_format) : "–"],
          ["Filter condition", desc.filter_condition ? h("code", {}, desc.filter_condition) : "none"],
          ["Owner", desc.owner],
          ["Semantic version", fmt.num(desc.semantic_version)],
          ["Last modified", fmt.when(summary.last_modified)],
        ]),
      ),
      card(
        "Computed columns",
        table(
          [
            { label: "Name", value: (c) => h("code", {}, c.column_name) },
            { label: "Expression", value: (c) => h("code", { class: "wrap" }, c.expression) },
            { label: "Type", value: (c) => c.datatype || "–" },
          ],
          desc.computed_columns,
          { empty: "No computed column." },
        ),
      ),
    ),
  );
  main.append(
    h(
      "div",
      { class: "two-col" },
      card(
        `Dimensions (${desc.dimensions.length})`,
        table(
          [
            { label: "Name", value: (d) => h("span", { class: "strong" }, d.name) },
            { label: "Column", value: (d) => h("code", {}, d.column) },
            { label: "Type", value: (d) => d.datatype || "–" },
          ],
          desc.dimensions,
        ),
      ),
      card(
        `Measures (${desc.measures.length})`,
        table(
          [
            { label: "Name", value: (m) => h("span", { class: "strong" }, m.name) },
            { label: "Function", value: (m) => badge(m.expression) },
            { label: "Of", value: (m) => h("code", {}, m.parameter_value.map((p) => p.value).join(", ")) },
            { label: "Returns", value: (m) => m.return_type || "–" },
          ],
          desc.measures,
        ),
      ),
    ),
  );
}

const BOX_W = 250;
const ROW_H = 20;
const HEAD_H = 34;
const MAX_ROWS = 9;

/** The model's tables as boxes (columns the model uses, with types) and its joins as labelled edges. */
function diagram(desc, tables) {
  const types = new Map();
  for (const t of tables) for (const c of t.columns) types.set(`${t.database}.${t.name}.${c.name}`, c.datatype);
  const factAlias = desc.fact_table_alias || desc.fact_table.split(".").pop();
  const nodes = new Map([[factAlias, { alias: factAlias, table: desc.fact_table, depth: 0, columns: new Map(), fact: true }]]);
  for (const j of desc.join_tables) nodes.set(j.alias, { alias: j.alias, table: j.table, depth: 1, columns: new Map(), join: j });
  const add = (qualified, role) => {
    const [alias, column] = qualified.split(".");
    const node = nodes.get(alias);
    if (!node) return;
    const known = node.columns.get(column);
    node.columns.set(column, { name: column, role: known && known.role === "key" ? "key" : role, type: types.get(`${node.table}.${column}`) || "" });
  };
  for (const j of desc.join_tables) {
    j.join.foreign_key.forEach((k) => add(k, "key"));
    j.join.primary_key.forEach((k) => add(k, "key"));
  }
  for (const d of desc.dimensions) add(d.column, "dim");
  // depth of a lookup joined to another lookup (a snowflake): one more than the table it hangs from
  for (let pass = 0; pass < nodes.size; pass += 1) {
    for (const j of desc.join_tables) {
      const from = nodes.get(j.join.foreign_key[0].split(".")[0]);
      if (from) nodes.get(j.alias).depth = from.depth + 1;
    }
  }
  const columns = new Map();
  for (const n of nodes.values()) {
    if (!columns.has(n.depth)) columns.set(n.depth, []);
    columns.get(n.depth).push(n);
  }
  const heightOf = (n) => HEAD_H + Math.min(n.columns.size, MAX_ROWS + 1) * ROW_H + 8;
  const GAP_X = 190;
  const GAP_Y = 22;
  let height = 0;
  for (const list of columns.values()) height = Math.max(height, list.reduce((sum, n) => sum + heightOf(n) + GAP_Y, -GAP_Y));
  for (const [depth, list] of columns) {
    let y = (height - list.reduce((sum, n) => sum + heightOf(n) + GAP_Y, -GAP_Y)) / 2;
    for (const n of list) {
      n.x = 10 + depth * (BOX_W + GAP_X);
      n.y = y + 10;
      y += heightOf(n) + GAP_Y;
    }
  }
  const width = 20 + columns.size * BOX_W + (columns.size - 1) * GAP_X;
  const svg = s("svg", { class: "diagram", viewBox: `0 0 ${width} ${height + 20}`, width, height: height + 20, role: "img", "aria-label": `Tables of model ${desc.alias}` });
  const rowY = (n, column) => {
    const names = [...n.columns.keys()].slice(0, MAX_ROWS);
    const i = names.indexOf(column);
    return n.y + HEAD_H + (i < 0 ? MAX_ROWS : i) * ROW_H + ROW_H / 2;
  };
  const edges = s("g", { class: "edges" });
  for (const j of desc.join_tables) {
    const to = nodes.get(j.alias);
    const fromAlias = j.join.foreign_key[0].split(".")[0];
    const from = nodes.get(fromAlias);
    if (!from) continue;
    const y1 = rowY(from, j.join.foreign_key[0].split(".")[1]);
    const y2 = rowY(to, j.join.primary_key[0].split(".")[1]);
    const x1 = from.x + BOX_W;
    const x2 = to.x;
    const mid = (x1 + x2) / 2;
    edges.append(s("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, class: `edge edge-${j.join.type.toLowerCase()}` }));
    edges.append(s("circle", { cx: x1, cy: y1, r: 3.5, class: "edge-end" }), s("circle", { cx: x2, cy: y2, r: 3.5, class: "edge-end" }));
    const keys = j.join.foreign_key.map((fk, i) => `${fk.split(".")[1]} = ${j.join.primary_key[i].split(".")[1]}`).join(", ");
    const ly = (y1 + y2) / 2;
    edges.append(
      s("text", { x: mid, y: ly - 6, class: "edge-label", "text-anchor": "middle" }, `${j.join.type} JOIN`),
      s("text", { x: mid, y: ly + 9, class: "edge-keys", "text-anchor": "middle" }, keys),
    );
  }
  svg.append(edges);
  for (const n of nodes.values()) {
    const g = s("g", { class: ["table-node", n.fact ? "fact" : "lookup"].join(" "), transform: `translate(${n.x},${n.y})` });
    g.append(
      s("rect", { width: BOX_W, height: heightOf(n), rx: 8, class: "node-box" }),
      s("path", { d: `M0,8 a8,8 0 0 1 8,-8 h${BOX_W - 16} a8,8 0 0 1 8,8 v${HEAD_H - 8} h-${BOX_W} z`, class: "node-head" }),
      s("text", { x: 12, y: 21, class: "node-title" }, n.alias),
      s("text", { x: BOX_W - 12, y: 21, class: "node-kind", "text-anchor": "end" }, n.fact ? "FACT" : "LOOKUP"),
    );
    const list = [...n.columns.values()];
    list.slice(0, MAX_ROWS).forEach((c, i) => {
      const y = HEAD_H + i * ROW_H + 14;
      g.append(
        s("text", { x: 12, y, class: `node-col ${c.role}` }, `${c.role === "key" ? "⚷ " : ""}${c.name}`),
        s("text", { x: BOX_W - 12, y, class: "node-type", "text-anchor": "end" }, c.type),
      );
    });
    if (list.length > MAX_ROWS) g.append(s("text", { x: 12, y: HEAD_H + MAX_ROWS * ROW_H + 14, class: "node-more" }, `+ ${list.length - MAX_ROWS} more columns`));
    g.append(s("title", {}, `${n.table} AS ${n.alias}`));
    svg.append(g);
  }
  return h("div", { class: "diagram-wrap" }, svg);
}
