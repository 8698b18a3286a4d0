// Query: the SQL editor (Ctrl-Enter runs), the answer as a table or a chart, how it was answered (model,
// layout, segments scanned and pruned, pushdown and why, cache, duration), EXPLAIN with the rejected
// candidates, the project's tables to pick from, and the query history with re-run.

import { api } from "../api.js";
import { alertBox, badge, clear, fmt, h, spinner, table } from "../dom.js";
import { card, facts, pageHead, tabs } from "../layout.js";
import { href } from "../nav.js";
import { chartPanel, isNumeric } from "../charts.js";
import { sqlEditor } from "../sql.js";

const LIMITS = [["100", "100 rows"], ["1000", "1,000 rows"], ["10000", "10,000 rows"], ["0", "All rows"]];
const KEY = (project) => `precube.sql.${project}`;

export async function render(view) {
  const { main, params } = view;
  const { project } = params;
  main.append(pageHead({ crumbs: [["Projects", "#/projects"], [project, href("projects", project, "models")], ["Query"]], title: "Query", subtitle: "SQL over the project's tables, answered from the smallest precomputed layout." }));
  const initial = view.query.get("sql") || sessionStorage.getItem(KEY(project)) || "";
  const editor = sqlEditor({ value: initial, onRun: () => run() });
  const limit = h("select", { "aria-label": "Row limit" }, LIMITS.map(([v, l]) => h("option", { value: v, selected: v === "1000" }, l)));
  const noCache = h("input", { type: "checkbox" });
  const layoutsOnly = h("input", { type: "checkbox" });
  const runButton = h("button", { class: "btn btn-primary", type: "button", "data-testid": "run", onclick: () => run() }, h("span", { class: "btn-icon" }, "▶"), "Run", h("kbd", {}, "Ctrl ⏎"));
  const explainButton = h("button", { class: "btn", type: "button", "data-testid": "explain", onclick: () => explain(true) }, "Explain");
  const resultHost = h("div", { class: "result", "data-testid": "result" });
  const schemaHost = h("div", { class: "schema" }, spinner());
  const historyHost = h("div");
  main.append(
    h(
      "div",
      { class: "query-layout" },
      h(
        "div",
        { class: "query-main" },
        card(null, [
          editor.el,
          h(
            "div",
            { class: "editor-bar" },
            runButton,
            explainButton,
            h("div", { class: "editor-options" }, limit, h("label", { class: "check-label", title: "Kylin's DEBUG_TOGGLE_DISABLE_QUERY_CACHE" }, noCache, "Skip result cache"), h("label", { class: "check-label", title: "Fail rather than push down to the source tables" }, layoutsOnly, "Layouts only")),
          ),
        ]),
        resultHost,
      ),
      h("aside", { class: "query-side" }, card("Tables", schemaHost, { subtitle: "Click a name to insert it." })),
    ),
    card("History", historyHost, { subtitle: "This project's recent queries, by everyone you can see." }),
  );
  editor.focus();

  let last = null;
  let tab = "table";
  let explained = null;

  async function run() {
    const sql = editor.value.trim();
    if (!sql) return;
    sessionStorage.setItem(KEY(project), editor.value);
    runButton.disabled = true;
    clear(resultHost).append(card(null, spinner("Running…")));
    explained = null;
    const started = performance.now();
    try {
      const body = { project, sql, limit: Number(limit.value), forced_to_index: layoutsOnly.checked };
      if (noCache.checked) body.backdoorToggles = { DEBUG_TOGGLE_DISABLE_QUERY_CACHE: "true" };
      last = await api.post("/query", body);
      last.roundTrip = performance.now() - started;
      if (tab === "explain") tab = "table";
      drawResult();
      explain(false); // fills the pruned segments and the Explain tab
    } catch (err) {
      last = null;
      clear(resultHost).append(h("div", { class: "query-error", "data-testid": "query-error" }, alertBox(err)));
    } finally {
      runButton.disabled = false;
      loadHistory();
    }
  }

  async function explain(show) {
    const sql = editor.value.trim();
    if (!sql) return;
    try {
      explained = await api.post("/query/explain", { project, sql, forced_to_index: layoutsOnly.checked });
    } catch (err) {
      explained = { error: err };
    }
    if (show) {
      tab = "explain";
      if (!last) return drawExplainOnly();
    }
    if (last) drawResult();
  }

  function drawExplainOnly() {
    clear(resultHost).append(card("Explain", explainView()));
  }

  function answerFacts() {
    const r = last.realizations || [];
    const contexts = explained && !explained.error ? explained.contexts : null;
    const pruned = contexts ? contexts.reduce((n, c) => n + (c.segments_pruned ? c.segments_pruned.length : 0), 0) : null;
    const how = last.pushDown ? h("span", {}, badge("PUSHDOWN"), " ", last.pushDownReason || "") : r.length ? r.map((x) => h("span", { class: "pill" }, `${x.modelAlias} · layout ${x.layoutId} · ${x.indexType || "snapshot"}`)) : "lookup snapshots";
    return h(
      "div",
      { class: "answer-facts", "data-testid": "answer" },
      h("div", { class: "answer-item" }, h("span", { class: "answer-label" }, "Answered by"), how),
      h("div", { class: "answer-item" }, h("span", { class: "answer-label" }, "Segments"), `${(last.segments || []).length} scanned`, pruned !== null ? ` · ${pruned} pruned` : ""),
      h("div", { class: "answer-item" }, h("span", { class: "answer-label" }, "Cache"), last.storageCacheUsed ? badge("HIT") : "miss"),
      h("div", { class: "answer-item" }, h("span", { class: "answer-label" }, "Engine"), last.engine || last.engineType),
      h("div", { class: "answer-item" }, h("span", { class: "answer-label" }, "Rows"), fmt.num(last.resultRowCount), last.totalScanRows ? h("span", { class: "muted" }, ` (${fmt.compact(last.totalScanRows)} scanned)`) : ""),
      h("div", { class: "answer-item" }, h("span", { class: "answer-label" }, "Duration"), fmt.duration(last.durationMs ?? last.duration), h("span", { class: "muted" }, ` (${fmt.duration(last.roundTrip)} in the browser)`)),
    );
  }

  function resultTable() {
    const metas = last.columnMetas;
    return table(
      metas.map((m, i) => ({ label: h("span", { title: m.columnTypeName }, m.label), class: isNumeric(m) ? "num" : undefined, value: (row) => (row[i] === null ? h("span", { class: "null" }, "NULL") : isNumeric(m) ? fmt.num(row[i]) : row[i]) })),
      last.results,
      { empty: "No rows." },
    );
  }

  function explainView() {
    if (!explained) return spinner("Explaining…");
    if (explained.error) return alertBox(explained.error);
    const e = explained;
    return h(
      "div",
      { class: "explain", "data-testid": "explain-view" },
      e.pushdown ? h("div", { class: "alert alert-warn" }, `Pushed down to the source tables: ${e.pushdown_reason}`) : null,
      e.contexts.map((c, i) =>
        h(
          "div",
          { class: "context" },
          h("div", { class: "context-head" }, h("span", { class: "strong" }, `Context ${i + 1}`), badge(c.answer.toUpperCase().replaceAll(" ", "_"))),
          h("pre", { class: "sql-block" }, c.block),
          c.model
            ? facts([
                ["Model", c.model],
                c.layout_id !== undefined && ["Layout", `${c.layout_id} (${c.index})`],
                c.layout_columns && ["Layout columns", h("code", { class: "wrap" }, c.layout_columns.join(", "))],
                c.segments_scanned && ["Segments scanned", `${c.segments_scanned.length}: ${c.segments_scanned.join(", ") || "–"}`],
                c.segments_pruned && ["Segments pruned", `${c.segments_pruned.length}: ${c.segments_pruned.join(", ") || "–"}`],
                c.rows_to_scan !== undefined && ["Rows to scan", fmt.num(c.rows_to_scan)],
                c.aggregates && c.aggregates.length && ["Aggregates", c.aggregates.join("; ")],
              ])
            : null,
          c.rejected && c.rejected.length
            ? h("div", { class: "rejected" }, h("div", { class: "rejected-title" }, `Rejected candidates (${c.rejected.length})`), h("ul", {}, c.rejected.map((r) => h("li", {}, h("span", { class: "strong" }, r.model), ": ", r.reason))))
            : null,
        ),
      ),
      h("details", {}, h("summary", {}, `SQL run by ${e.engine}`), h("pre", { class: "sql-block" }, e.sql)),
    );
  }

  function drawResult() {
    const body = tab === "table" ? resultTable() : tab === "chart" ? chartPanel(last.columnMetas, last.results) : explainView();
    const tabBar = h(
      "div",
      { class: "seg-group", role: "tablist" },
      [["table", "Table"], ["chart", "Chart"], ["explain", "Explain"]].map(([key, label]) => {
        const b = h("button", { class: ["seg-btn", tab === key && "on"], type: "button", role: "tab", "data-view": key }, label);
        b.addEventListener("click", () => ((tab = key), drawResult()));
        return b;
      }),
    );
    clear(resultHost).append(card(null, [h("div", { class: "result-head" }, answerFacts(), tabBar), body]));
  }

  async function loadSchema() {
    const found = await api.get("/query/tables_and_columns", { project });
    clear(schemaHost);
    if (!found.length) schemaHost.append(h("div", { class: "muted" }, "No table loaded."));
    for (const t of found) {
      const name = `${t.table_SCHEM}.${t.table_NAME}`;
      const list = h("ul", { class: "schema-cols" }, t.columns.map((c) => h("li", {}, h("button", { class: "link-btn", type: "button", onclick: () => editor.insert(c.column_NAME) }, c.column_NAME), h("span", { class: "muted" }, c.type_NAME.toLowerCase()))));
      schemaHost.append(h("details", { class: "schema-table" }, h("summary", {}, h("button", { class: "link-btn strong", type: "button", onclick: (e) => (e.preventDefault(), editor.insert(name)) }, name), h("span", { class: "muted" }, ` ${t.columns.length}`)), list));
    }
  }

  async function loadHistory() {
    const found = await api.get("/query/history_queries", { project, page_size: 15 });
    historyHost.replaceChildren(
      table(
        [
          { label: "When", value: (q) => h("span", { title: fmt.when(q.query_time) }, fmt.ago(q.query_time)) },
          { label: "SQL", class: "sql-cell", value: (q) => h("code", { class: "ellipsis", title: q.sql_text }, q.sql_text) },
          { label: "Status", value: (q) => badge(q.query_status, q.error_msg || undefined) },
          { label: "Answered", value: (q) => (q.pushdown ? "pushdown" : q.model ? `${q.model} · ${q.layouts || "snapshot"}` : "–") },
          { label: "Rows", class: "num", value: (q) => fmt.num(q.result_row_count) },
          { label: "Duration", class: "num", value: (q) => fmt.duration(q.duration) },
          { label: "User", value: (q) => q.submitter },
          { label: "", value: (q) => h("button", { class: "btn btn-sm", type: "button", onclick: () => ((editor.value = q.sql_text), window.scrollTo({ top: 0, behavior: "smooth" }), run()) }, "Re-run") },
        ],
        found.query_histories,
        { empty: "No query yet." },
      ),
    );
  }

  loadSchema().catch((err) => schemaHost.replaceChildren(alertBox(err)));
  loadHistory().catch((err) => historyHost.replaceChildren(alertBox(err)));
  if (view.query.get("run") === "1" && initial) run();
}
