// A project's source tables: columns, types and sampled statistics (rows, cardinality, min/max, nulls);
// load (files under the server's source roots, or catalog tables), sample, reload with the schema diff shown
// before it applies, unload with what it would drop.

import { all, api } from "../api.js";
import { alertBox, clear, confirmAction, dialog, empty, field, fmt, h, table, toast } from "../dom.js";
import { button, card, pageHead, stats } from "../layout.js";
import { href } from "../nav.js";

const SOURCES = { 0: "Hive", 9: "Spark catalog", 11: "CSV files", 12: "Parquet files" };

export async function render(view) {
  const { main, params, ctx } = view;
  const { project } = params;
  const manage = ctx.can(project, "MANAGEMENT");
  let tables = [];
  let current = view.query.get("table");
  const listHost = h("div", { class: "table-list" });
  const detailHost = h("div", { class: "table-detail" });
  main.append(
    pageHead({
      crumbs: [["Projects", "#/projects"], [project, href("projects", project, "models")], ["Tables"]],
      title: "Tables",
      subtitle: "Source tables registered in the project, with the statistics sampling found.",
      actions: manage ? [button("Load tables", () => loadDialog(), { kind: "primary", icon: "+", testid: "load-tables" })] : [],
    }),
    h("div", { class: "split" }, card(null, listHost, { class: "list-card" }), detailHost),
  );

  async function load() {
    tables = await all("/tables", { project, ext: true });
    if (!current || !tables.some((t) => `${t.database}.${t.name}` === current)) current = tables.length ? `${tables[0].database}.${tables[0].name}` : null;
    drawList();
    drawDetail();
  }

  function drawList() {
    clear(listHost);
    if (!tables.length) return listHost.append(empty("No table yet", manage ? "Load Parquet or CSV files, or catalog tables." : "Ask a modeler to load tables."));
    const byDb = new Map();
    for (const t of tables) {
      if (!byDb.has(t.database)) byDb.set(t.database, []);
      byDb.get(t.database).push(t);
    }
    for (const [db, list] of byDb) {
      listHost.append(h("div", { class: "list-group" }, db));
      for (const t of list) {
        const id = `${t.database}.${t.name}`;
        const item = h(
          "button",
          { class: ["list-item", id === current && "active"], type: "button", "data-table": id },
          h("span", { class: "strong" }, t.name),
          h("span", { class: "muted" }, t.ext ? `${fmt.compact(t.ext.total_rows)} rows` : `${t.columns.length} cols`),
        );
        item.addEventListener("click", () => {
          current = id;
          history.replaceState(null, "", `${href("projects", project, "tables")}?table=${encodeURIComponent(id)}`);
          drawList();
          drawDetail();
        });
        listHost.append(item);
      }
    }
  }

  function drawDetail() {
    clear(detailHost);
    const t = tables.find((x) => `${x.database}.${x.name}` === current);
    if (!t) return;
    const id = `${t.database}.${t.name}`;
    const ext = t.ext;
    const statsOf = new Map((ext ? ext.columns_stats : []).map((c) => [c.column_name, c]));
    const actions = manage
      ? [button("Sample", () => sample(id), { testid: "sample" }), button("Reload", () => reload(id), { testid: "reload" }), button("Unload", () => unload(t), { kind: "danger-ghost", testid: "unload" })]
      : [];
    detailHost.append(
      card(
        id,
        [
          stats([
            ["Rows", ext ? fmt.num(ext.total_rows) : "–", ext ? `${fmt.num(ext.sampled_rows)} sampled` : "not sampled yet"],
            ["Columns", fmt.num(t.columns.length)],
            ["Source", SOURCES[t.source_type] || String(t.source_type)],
          ]),
          t.location ? h("div", { class: "location muted" }, "Location ", h("code", {}, t.location)) : null,
          table(
            [
              { label: "Column", value: (c) => h("span", { class: "strong" }, c.name) },
              { label: "Type", value: (c) => h("code", {}, c.datatype) },
              { label: "Cardinality", class: "num", value: (c) => (statsOf.get(c.name) ? fmt.num(statsOf.get(c.name).cardinality) : "–") },
              { label: "Min", value: (c) => cell(statsOf.get(c.name)?.min_value) },
              { label: "Max", value: (c) => cell(statsOf.get(c.name)?.max_value) },
              { label: "Nulls", class: "num", value: (c) => (statsOf.get(c.name) ? fmt.num(statsOf.get(c.name).null_count) : "–") },
            ],
            t.columns,
          ),
        ],
        { actions, subtitle: t.table_comment || undefined },
      ),
    );
    if (ext && ext.sample_rows && ext.sample_rows.length) {
      detailHost.append(card("Sample rows", table(t.columns.map((c, i) => ({ label: c.name, value: (r) => cell(r[i]) })), ext.sample_rows.slice(0, 10)), { subtitle: "A few rows sampling read.", class: "samples" }));
    }
  }

  function cell(v) {
    if (v === null || v === undefined) return h("span", { class: "null" }, "–");
    const text = String(v);
    return h("span", { title: text.length > 40 ? text : undefined }, text.length > 40 ? `${text.slice(0, 39)}…` : text);
  }

  function sample(id) {
    confirmAction({
      title: `Sample ${id}?`,
      message: "Spark reads the table to count its rows and each column's cardinality, min, max and nulls. This may take a while on a large table.",
      ok: "Sample",
      run: async () => {
        await api.post("/tables/sampling_jobs", { project, qualified_table_name: id });
        toast(`${id} sampled`, "ok");
        await load();
      },
    });
  }

  async function reload(id) {
    let diff;
    toast(`Reading the schema of ${id} from its source…`);
    try {
      diff = await api.get("/tables/pre_reload", { project, table: id });
    } catch (err) {
      toast(err.message, "error");
      return;
    }
    const [change] = diff.tables;
    const unchanged = !diff.add_column_count && !diff.remove_column_count && !diff.data_type_change_column_count;
    const body = h(
      "div",
      { "data-testid": "reload-diff" },
      unchanged ? h("p", {}, "The source's schema is unchanged: reloading only re-reads it.") : null,
      change && change.added.length ? h("div", { class: "diff diff-add" }, h("span", { class: "strong" }, "Added: "), change.added.join(", ")) : null,
      change && change.removed.length ? h("div", { class: "diff diff-remove" }, h("span", { class: "strong" }, "Removed: "), change.removed.join(", ")) : null,
      change && change.retyped.length ? h("div", { class: "diff diff-change" }, h("span", { class: "strong" }, "Type changed: "), change.retyped.map((r) => `${r.column} ${r.from} → ${r.to}`).join(", ")) : null,
      diff.broken_models.length
        ? h("div", { class: "alert alert-error" }, `Models that would break and lose their segments: ${diff.broken_models.map((b) => `${b.model} (${b.reason}, ${b.segments} segments, ${fmt.bytes(b.data_bytes)})`).join("; ")}`)
        : h("p", { class: "muted" }, "No model breaks."),
    );
    confirmAction({
      title: `Reload ${id}?`,
      message: body,
      ok: "Reload",
      danger: diff.broken_models.length > 0,
      run: async () => {
        await api.post("/tables/reload", { project, table: id });
        toast(`${id} reloaded`, "ok");
        await load();
      },
    });
  }

  async function unload(t) {
    let found;
    try {
      found = await api.get(`/tables/${encodeURIComponent(t.database)}/${encodeURIComponent(t.name)}/prepare_unload`, { project });
    } catch (err) {
      toast(err.message, "error");
      return;
    }
    const cascade = found.has_model;
    confirmAction({
      title: `Unload ${found.table}?`,
      message: cascade
        ? h("div", { class: "alert alert-error" }, `These models read it and are deleted with it: ${found.models.map((m) => `${m.model} (${m.segments} segments)`).join(", ")}.`)
        : "No model reads it. Its files are not touched.",
      ok: "Unload",
      danger: true,
      run: async () => {
        await api.del(`/tables/${encodeURIComponent(t.database)}/${encodeURIComponent(t.name)}`, { project, cascade: cascade ? "true" : undefined });
        toast(`${found.table} unloaded`, "ok");
        current = null;
        await load();
      },
    });
  }

  function loadDialog() {
    dialog({
      title: "Load tables",
      wide: true,
      build(close) {
        const kind = h("select", { name: "kind" }, h("option", { value: "files" }, "Files (Parquet or CSV)"), h("option", { value: "catalog" }, "Spark catalog tables"));
        const path = h("input", { name: "path", placeholder: "/data/sales/orders" });
        const format = h("select", { name: "format" }, h("option", { value: "" }, "From the file names"), h("option", { value: "parquet" }, "Parquet"), h("option", { value: "csv" }, "CSV"));
        const database = h("input", { name: "database", placeholder: "DEFAULT" });
        const name = h("input", { name: "name", placeholder: "from the folder's name" });
        const names = h("input", { name: "tables", placeholder: "SALES.ORDERS, SALES.CUSTOMERS" });
        const sampleToo = h("input", { type: "checkbox", checked: true });
        const fileFields = h("div", {}, field("Path", path, "A file or folder inside the server's [server] source_roots."), h("div", { class: "form-row" }, field("Format", format), field("Database", database), field("Table name", name)));
        const catalogFields = h("div", {}, field("Tables", names, "DB.TABLE names, comma-separated."));
        catalogFields.hidden = true;
        kind.addEventListener("change", () => {
          fileFields.hidden = kind.value !== "files";
          catalogFields.hidden = kind.value !== "catalog";
        });
        const error = h("div");
        const ok = h("button", { class: "btn btn-primary", type: "button" }, "Load");
        ok.addEventListener("click", async () => {
          clear(error);
          const body = { project, need_sampling: sampleToo.checked };
          if (kind.value === "files") {
            const file = { path: path.value.trim() };
            if (format.value) file.format = format.value;
            if (database.value.trim()) file.database = database.value.trim();
            if (name.value.trim()) file.name = name.value.trim();
            body.files = [file];
          } else {
            body.tables = names.value.split(",").map((x) => x.trim()).filter(Boolean);
          }
          ok.disabled = true;
          ok.textContent = sampleToo.checked ? "Loading and sampling…" : "Loading…";
          try {
            const done = await api.post("/tables", body);
            toast(`Loaded ${done.loaded.join(", ")}`, "ok");
            current = done.loaded[0] || current;
            close(true);
            await load();
          } catch (err) {
            error.append(alertBox(err));
            ok.disabled = false;
            ok.textContent = "Load";
          }
        });
        return h(
          "div",
          {},
          h("div", { class: "dialog-body" }, field("Source", kind), fileFields, catalogFields, h("label", { class: "check-label" }, sampleToo, "Sample them after loading (rows, cardinality, min/max, nulls)"), error),
          h("div", { class: "dialog-foot" }, h("button", { class: "btn", type: "button", onclick: () => close() }, "Cancel"), ok),
        );
      },
    });
  }

  await load();
}
