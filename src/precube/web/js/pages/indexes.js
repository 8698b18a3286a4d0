// A model's index plan: aggregation groups edited with a live layout-count preview before saving, table
// indexes, and every layout with its rows and bytes in each segment.

import { all, api } from "../api.js";
import { alertBox, badge, clear, confirmAction, dialog, field, fmt, h, table, toast } from "../dom.js";
import { button, card } from "../layout.js";
import { modelHead, modelSummary } from "./model_head.js";

export async function render(view) {
  const { main, params, ctx } = view;
  const { project, model } = params;
  const manage = ctx.can(project, "MANAGEMENT");
  const [summary, desc, rule] = await Promise.all([
    modelSummary(project, model),
    api.get(`/models/${encodeURIComponent(project)}/${encodeURIComponent(model)}/model_desc`),
    api.get("/index_plans/rule", { project, model }),
  ]);
  const dims = desc.dimensions.map((d) => d.name);
  const measures = desc.measures.map((m) => m.name);
  main.append(...modelHead(view, summary, "indexes"));
  const groupsHost = h("div", { class: "groups" });
  const countHost = h("div", { class: "count-preview", "data-testid": "layout-count" });
  const error = h("div");
  const layoutsHost = h("div");
  let groups = rule.aggregation_groups.map((g) => structuredClone(g));
  let dimCap = rule.global_dim_cap;

  const saveButton = button("Save groups", () => save(), { kind: "primary", testid: "save-groups" });
  main.append(
    card("Aggregation groups", [countHost, groupsHost, error], {
      subtitle: `Which combinations of dimensions get a precomputed layout. Now: ${rule.rule_layouts} rule layouts, ${rule.total_layouts} in all.`,
      actions: manage ? [button("Add group", () => (groups.push({ includes: [], measures: [], select_rule: { mandatory_dims: [], hierarchy_dims: [], joint_dims: [], dim_cap: null } }), drawGroups(), preview()), { icon: "+" }), saveButton] : [],
    }),
  );
  main.append(card("Layouts", layoutsHost, { subtitle: "Every layout of the plan, with its rows and bytes in each segment (click a row)." }));

  function chipSet(options, chosen, onChange, { disabled = !manage } = {}) {
    return h(
      "div",
      { class: "chips" },
      options.map((name) => {
        const box = h("input", { type: "checkbox", checked: chosen.includes(name), disabled });
        box.addEventListener("change", () => onChange(options.filter((o) => (o === name ? box.checked : chosen.includes(o)))));
        return h("label", { class: ["chip", chosen.includes(name) && "on"] }, box, name);
      }),
    );
  }

  function lines(list, sep) {
    return list.map((x) => x.join(sep)).join("\n");
  }

  function parseLines(text, sep) {
    return text
      .split("\n")
      .map((line) => line.split(sep).map((x) => x.trim()).filter(Boolean))
      .filter((x) => x.length);
  }

  function drawGroups() {
    clear(groupsHost);
    groups.forEach((g, i) => {
      const change = () => (drawGroups(), preview());
      const hierarchy = h("textarea", { rows: 2, disabled: !manage, placeholder: "D_YEAR > D_YEARMONTH > D_DATE" });
      hierarchy.value = lines(g.select_rule.hierarchy_dims, " > ");
      hierarchy.addEventListener("change", () => ((g.select_rule.hierarchy_dims = parseLines(hierarchy.value, ">")), preview()));
      const joint = h("textarea", { rows: 2, disabled: !manage, placeholder: "C_CITY, C_NATION" });
      joint.value = lines(g.select_rule.joint_dims, ", ");
      joint.addEventListener("change", () => ((g.select_rule.joint_dims = parseLines(joint.value, ",")), preview()));
      const cap = h("input", { type: "number", min: "1", disabled: !manage, value: g.select_rule.dim_cap ?? "", placeholder: "none" });
      cap.addEventListener("change", () => ((g.select_rule.dim_cap = cap.value ? Number(cap.value) : null), preview()));
      groupsHost.append(
        h(
          "div",
          { class: "group", "data-group": String(i + 1) },
          h(
            "div",
            { class: "group-head" },
            h("span", { class: "strong" }, `Group ${i + 1}`),
            h("span", { class: "group-count muted", "data-count": String(i) }),
            manage ? h("button", { class: "icon-btn", type: "button", title: "Remove this group", onclick: () => (groups.splice(i, 1), change()) }, "✕") : null,
          ),
          field("Dimensions", chipSet(dims, g.includes, (v) => ((g.includes = v), (g.select_rule.mandatory_dims = g.select_rule.mandatory_dims.filter((d) => v.includes(d))), change()))),
          field("Measures", chipSet(measures, g.measures, (v) => ((g.measures = v), change())), "None chosen: every measure."),
          field("Mandatory", chipSet(g.includes, g.select_rule.mandatory_dims, (v) => ((g.select_rule.mandatory_dims = v), change())), "In every layout of the group."),
          h("div", { class: "form-row" }, field("Hierarchies (one per line, a > b > c)", hierarchy), field("Joints (one per line, a, b)", joint), field("Dimension cap", cap)),
        ),
      );
    });
    if (!groups.length) groupsHost.append(h("div", { class: "empty" }, h("div", { class: "empty-title" }, "No aggregation group"), h("div", { class: "empty-detail" }, "Only the base layouts are built.")));
  }

  function requestBody() {
    return { project, model, aggregation_groups: groups, global_dim_cap: dimCap };
  }

  let timer = null;
  let asked = 0;
  function preview() {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!manage) {
        countHost.replaceChildren(h("span", { class: "muted" }, `${rule.rule_layouts} layouts from these groups.`));
        return;
      }
      const mine = (asked += 1);
      clear(error);
      try {
        const found = await api.put("/index_plans/agg_index_count", requestBody());
        if (mine !== asked) return;
        found.agg_index_counts.forEach((c, i) => {
          const slot = groupsHost.querySelector(`[data-count="${i}"]`);
          if (slot) slot.replaceChildren(`${fmt.num(c.result)} layouts `, c.status === "FAIL" ? badge("FAIL", `over the limit of ${found.group_limit}`) : "");
        });
        const total = found.total_count;
        countHost.replaceChildren(
          h("span", { class: "count-number" }, fmt.num(total.result)),
          h("span", {}, ` layouts with the base layout${found.total_exact ? "" : " (at least)"}`),
          total.status === "FAIL" ? h("span", { class: "alert alert-error inline" }, `over the limit of ${fmt.num(found.total_limit)}: saving would be refused`) : h("span", { class: "muted" }, ` · limit ${fmt.num(found.group_limit)} a group`),
        );
      } catch (err) {
        if (mine === asked) error.replaceChildren(alertBox(err));
      }
    }, 250);
  }

  async function save() {
    clear(error);
    let diff;
    try {
      diff = await api.put("/index_plans/rule_based_index_diff", requestBody());
    } catch (err) {
      error.append(alertBox(err));
      return;
    }
    confirmAction({
      title: "Save the aggregation groups?",
      message: h(
        "div",
        {},
        h("p", {}, `Adds ${diff.increase_layouts} layouts, removes ${diff.decrease_layouts}${diff.rollback_layouts ? `, restores ${diff.rollback_layouts}` : ""}.`),
        diff.dropped_built_layouts.length ? h("div", { class: "alert alert-warn" }, `Built layouts dropped: ${diff.dropped_built_layouts.join(", ")}.`) : null,
        h("label", { class: "check-label" }, h("input", { type: "checkbox", id: "load-data" }), "Build the new layouts into the READY segments now"),
      ),
      ok: "Save",
      run: async () => {
        const loadData = document.getElementById("load-data")?.checked || false;
        const done = await api.put("/index_plans/rule", { ...requestBody(), load_data: loadData });
        toast(`Saved: ${done.rule_layouts} rule layouts${done.job_id ? "; an index build job was submitted" : ""}`, "ok");
        await drawLayouts();
      },
    });
  }

  async function drawLayouts() {
    const layouts = await all(`/models/${encodeURIComponent(model)}/indexes`, { project });
    const expanded = new Set();
    const tableIndexes = layouts.filter((l) => l.type === "TABLE");
    const rows = () =>
      table(
        [
          { label: "Layout", value: (l) => h("span", { class: "mono" }, String(l.id)) },
          { label: "Type", value: (l) => (l.type === "TABLE" ? "table" : "aggregate") },
          { label: "Source", class: "nowrap", value: (l) => h("span", { class: "muted" }, l.source.replaceAll("_", " ").toLowerCase()) },
          { label: "Status", value: (l) => badge(l.status) },
          { label: "Dimensions", value: (l) => h("span", { class: "ellipsis", title: l.dimensions.join(", ") }, l.dimensions.join(", ") || "–") },
          { label: "Measures", class: "num", value: (l) => String(l.measures.length) },
          { label: "Rows", class: "num", value: (l) => fmt.num(l.rows) },
          { label: "Size", class: "num", value: (l) => fmt.bytes(l.data_size) },
          { label: "Segments", class: "num", value: (l) => String(l.segments.length) },
        ],
        layouts,
        {
          onRow: (l) => {
            if (expanded.has(l.id)) expanded.delete(l.id);
            else expanded.add(l.id);
            draw();
          },
          rowClass: (l) => (expanded.has(l.id) ? "selected" : undefined),
        },
      );
    const draw = () => {
      const grid = rows();
      for (const l of layouts.filter((x) => expanded.has(x.id))) {
        const tr = [...grid.querySelectorAll("tbody tr")][layouts.indexOf(l)];
        const detail = h(
          "tr",
          { class: "detail-row" },
          h(
            "td",
            { colspan: "9" },
            h("div", { class: "muted" }, `Column order: ${l.col_order.join(", ")}`),
            table(
              [
                { label: "Segment", value: (x) => h("span", { class: "mono" }, x.segment_name || x.segment_id) },
                { label: "Rows", class: "num", value: (x) => fmt.num(x.rows) },
                { label: "Bytes", class: "num", value: (x) => fmt.bytes(x.bytes) },
                { label: "Ready", value: (x) => (x.ready ? badge("READY") : badge("NEW")) },
              ],
              l.segments,
              { empty: "Not built in any segment." },
            ),
          ),
        );
        tr.after(detail);
      }
      const addTableIndex = manage ? button("Add table index", () => tableIndexDialog(), { icon: "+" }) : null;
      layoutsHost.replaceChildren(
        grid,
        h(
          "div",
          { class: "sub-section" },
          h("h3", {}, `Table indexes (${tableIndexes.length})`, " ", addTableIndex),
          table(
            [
              { label: "Layout", value: (l) => h("span", { class: "mono" }, String(l.id)) },
              { label: "Columns, in order", value: (l) => h("code", { class: "wrap" }, l.col_order.join(", ")) },
              { label: "Sorted by", value: (l) => l.sort_by_columns.join(", ") || "–" },
              { label: "Shard by", value: (l) => l.shard_by_columns.join(", ") || "–" },
              { label: "Status", value: (l) => badge(l.status) },
              manage && { label: "", value: (l) => (l.status === "LOCKED" ? "" : h("button", { class: "btn btn-sm btn-danger-ghost", type: "button", onclick: () => removeTableIndex(l) }, "Remove")) },
            ].filter(Boolean),
            tableIndexes,
            { empty: "No table index: detail queries are pushed down." },
          ),
        ),
      );
    };
    draw();
  }

  function removeTableIndex(l) {
    confirmAction({
      title: `Remove table index ${l.id}?`,
      message: "Built copies stay until their segments are rebuilt.",
      ok: "Remove",
      danger: true,
      run: async () => {
        await api.del(`/index_plans/table_index/${l.id}`, { project, model });
        toast(`Table index ${l.id} removed`, "ok");
        await drawLayouts();
      },
    });
  }

  function tableIndexDialog() {
    dialog({
      title: "Add a table index",
      wide: true,
      build(close) {
        const order = [];
        const picked = h("div", { class: "picked" });
        const columns = desc.dimensions.map((d) => d.name);
        const chips = h("div", { class: "chips" });
        const redraw = () => {
          picked.replaceChildren(order.length ? order.map((c, i) => h("span", { class: "pill" }, `${i + 1}. ${c}`)) : h("span", { class: "muted" }, "Click columns in the order the rows should be laid out."));
          chips.replaceChildren(
            ...columns.map((c) => {
              const b = h("button", { class: ["chip", "chip-btn", order.includes(c) && "on"], type: "button" }, c);
              b.addEventListener("click", () => {
                if (order.includes(c)) order.splice(order.indexOf(c), 1);
                else order.push(c);
                redraw();
              });
              return b;
            }),
          );
        };
        redraw();
        const error = h("div");
        const ok = h("button", { class: "btn btn-primary", type: "button" }, "Add");
        ok.addEventListener("click", async () => {
          clear(error);
          try {
            const done = await api.post("/index_plans/table_index", { project, model, col_order: order, sort_by_columns: order.slice(0, 1) });
            toast(`Table index ${done.id} added`, "ok");
            close(true);
            await drawLayouts();
          } catch (err) {
            error.append(alertBox(err));
          }
        });
        return h("div", {}, h("div", { class: "dialog-body" }, field("Columns", chips), picked, error), h("div", { class: "dialog-foot" }, h("button", { class: "btn", type: "button", onclick: () => close() }, "Cancel"), ok));
      },
    });
  }

  drawGroups();
  preview();
  await drawLayouts();
}
