// Charts of a query result, drawn as SVG: bar, line or pie, from the columns the user picks (a category
// column for the axis, numeric columns for the values).

import { fmt, h, s } from "./dom.js";

const NUMERIC = new Set(["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "REAL", "DOUBLE", "DECIMAL", "NUMERIC"]);
const PALETTE = ["#4f46e5", "#0ea5e9", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#ec4899", "#14b8a6", "#84cc16", "#64748b"];
const MAX_POINTS = 200;
const MAX_SLICES = 9;
const ALL = -1; // the category: the leading columns not drawn as values that tell the rows apart

export function isNumeric(meta) {
  return NUMERIC.has(String(meta.columnTypeName).toUpperCase());
}

/** Round tick values covering [lo, hi]. */
export function niceTicks(lo, hi, count = 5) {
  if (lo === hi) hi = lo + 1;
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((st) => st >= raw);
  const out = [];
  for (let v = Math.floor(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(12));
  if (out[out.length - 1] < hi) out.push(out[out.length - 1] + step);
  return out;
}

function truncate(text, n) {
  const t = text === null ? "NULL" : String(text);
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

/** The chart panel: type and column pickers over an SVG drawn to the host's width. */
export function chartPanel(metas, rows) {
  const numeric = metas.map((m, i) => (isNumeric(m) ? i : -1)).filter((i) => i >= 0);
  const host = h("div", { class: "chart-host", "data-testid": "chart" });
  if (!numeric.length || !rows.length) {
    host.append(h("div", { class: "empty" }, h("div", { class: "empty-title" }, "Nothing to chart"), h("div", { class: "empty-detail" }, "A chart needs at least one numeric column and one row.")));
    return host;
  }
  // the values: the last numeric column (aggregates usually close a SELECT); the category: the leading other
  // columns that tell the rows apart (a composite label such as "1993 · 4"), or one column the user picks
  const state = { type: "bar", x: ALL, ys: [numeric[numeric.length - 1]] };
  const others = () => metas.map((_, i) => i).filter((i) => !state.ys.includes(i));
  if (!others().length) state.x = 0;
  const [first, ...more] = uniqueKeys(rows, others());
  const timeLike = first !== undefined && !more.length && /DATE|YEAR|MONTH|DAY|TIME|WEEK/i.test(`${metas[first].label} ${metas[first].columnTypeName}`);
  if (timeLike) state.type = "line";
  const typeButtons = ["bar", "line", "pie"].map((t) => {
    const b = h("button", { class: ["seg-btn", state.type === t && "on"], type: "button", "data-chart": t }, t[0].toUpperCase() + t.slice(1));
    b.addEventListener("click", () => {
      state.type = t;
      typeButtons.forEach((o) => o.classList.toggle("on", o === b));
      draw();
    });
    return b;
  });
  const xSelect = h(
    "select",
    { "aria-label": "Category column" },
    h("option", { value: String(ALL), selected: state.x === ALL }, "Key columns"),
    metas.map((m, i) => h("option", { value: String(i), selected: i === state.x }, m.label)),
  );
  xSelect.addEventListener("change", () => ((state.x = Number(xSelect.value)), draw()));
  const yChips = numeric.map((i) => {
    const box = h("input", { type: "checkbox", checked: state.ys.includes(i) });
    box.addEventListener("change", () => {
      state.ys = numeric.filter((k) => (k === i ? box.checked : state.ys.includes(k)));
      draw();
    });
    return h("label", { class: "chip" }, box, metas[i].label);
  });
  const plot = h("div", { class: "chart-plot" });
  host.append(
    h("div", { class: "chart-controls" }, h("div", { class: "seg-group", role: "group", "aria-label": "Chart type" }, typeButtons), h("label", { class: "inline-field" }, "Category ", xSelect), h("div", { class: "chips" }, h("span", { class: "muted" }, "Values"), yChips)),
    plot,
  );
  function draw() {
    const width = Math.max(420, plot.clientWidth || host.clientWidth || 800);
    const ys = state.ys.length ? state.ys : [numeric[numeric.length - 1]];
    const keys = state.x === ALL ? uniqueKeys(rows, metas.map((_, i) => i).filter((i) => !ys.includes(i))) : [state.x];
    const label = (r) => keys.map((i) => (r[i] === null ? "NULL" : r[i])).join(" · ");
    const data = rows.slice(0, MAX_POINTS).map((r) => ({ label: label(r), row: r }));
    const svg = state.type === "pie" ? pie(metas, data, ys[0], width) : xy(metas, data, ys, width, state.type);
    plot.replaceChildren(svg, rows.length > MAX_POINTS && state.type !== "pie" ? h("div", { class: "muted chart-note" }, `The first ${MAX_POINTS} of ${fmt.num(rows.length)} rows are drawn.`) : "");
  }
  requestAnimationFrame(draw);
  const onResize = () => host.isConnected && draw();
  window.addEventListener("resize", onResize);
  return host;
}

/** The shortest leading run of `columns` whose values tell the rows apart (a GROUP BY's keys lead its
 * SELECT), or all of them. */
function uniqueKeys(rows, columns) {
  for (let k = 1; k < columns.length; k += 1) {
    const seen = new Set(rows.map((r) => JSON.stringify(columns.slice(0, k).map((i) => r[i]))));
    if (seen.size === rows.length) return columns.slice(0, k);
  }
  return columns;
}

function xy(metas, rows, ys, width, type) {
  const height = 360;
  const m = { top: 34, right: 20, bottom: 64, left: 72 };
  const w = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const values = rows.flatMap((r) => ys.map((i) => Number(r.row[i]))).filter(Number.isFinite);
  const lo = Math.min(0, ...values);
  const hi = Math.max(0, ...values);
  const tickValues = niceTicks(lo, hi);
  const y0 = tickValues[0];
  const y1 = tickValues[tickValues.length - 1];
  const Y = (v) => m.top + ph - ((v - y0) / (y1 - y0 || 1)) * ph;
  const band = w / Math.max(1, rows.length);
  const svg = s("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${type} chart` });
  for (const t of tickValues) {
    svg.append(s("line", { x1: m.left, x2: m.left + w, y1: Y(t), y2: Y(t), class: t === 0 ? "zero-line" : "grid-line" }), s("text", { x: m.left - 8, y: Y(t) + 4, class: "axis-label", "text-anchor": "end" }, fmt.compact(t)));
  }
  const every = Math.max(1, Math.ceil(rows.length / Math.floor(w / 56)));
  rows.forEach((r, k) => {
    if (k % every) return;
    const cx = m.left + band * (k + 0.5);
    svg.append(s("text", { x: cx, y: m.top + ph + 18, class: "axis-label", "text-anchor": rows.length > 8 ? "end" : "middle", transform: rows.length > 8 ? `rotate(-35 ${cx} ${m.top + ph + 18})` : "" }, truncate(r.label, 16)));
  });
  ys.forEach((i, n) => {
    const color = PALETTE[n % PALETTE.length];
    if (type === "bar") {
      const inner = (band * 0.78) / ys.length;
      rows.forEach((r, k) => {
        const v = Number(r.row[i]);
        if (!Number.isFinite(v)) return;
        const bx = m.left + band * k + band * 0.11 + inner * n;
        svg.append(s("rect", { x: bx, y: Math.min(Y(v), Y(0)), width: Math.max(1, inner - 1), height: Math.max(1, Math.abs(Y(v) - Y(0))), rx: 2, fill: color, class: "bar" }, s("title", {}, `${truncate(r.label, 60)} · ${metas[i].label}: ${fmt.num(v)}`)));
      });
    } else {
      const pts = rows.map((r, k) => [m.left + band * (k + 0.5), Number(r.row[i]), r]).filter(([, v]) => Number.isFinite(v));
      svg.append(s("polyline", { points: pts.map(([px, v]) => `${px},${Y(v)}`).join(" "), fill: "none", stroke: color, "stroke-width": 2.2, class: "line" }));
      if (pts.length <= 60) for (const [px, v, r] of pts) svg.append(s("circle", { cx: px, cy: Y(v), r: 3.5, fill: "#fff", stroke: color, "stroke-width": 2 }, s("title", {}, `${truncate(r.label, 60)} · ${metas[i].label}: ${fmt.num(v)}`)));
    }
  });
  svg.append(s("line", { x1: m.left, x2: m.left + w, y1: m.top + ph, y2: m.top + ph, class: "axis-line" }));
  let lx = m.left;
  ys.forEach((i, n) => {
    svg.append(s("rect", { x: lx, y: 10, width: 12, height: 12, rx: 3, fill: PALETTE[n % PALETTE.length] }), s("text", { x: lx + 17, y: 20, class: "legend-label" }, metas[i].label));
    lx += 30 + metas[i].label.length * 7.2;
  });
  return svg;
}

function pie(metas, rows, y, width) {
  const height = 360;
  const items = rows.map((r) => [r.label, Number(r.row[y])]).filter(([, v]) => Number.isFinite(v) && v > 0).sort((a, b) => b[1] - a[1]);
  const top = items.slice(0, MAX_SLICES);
  const rest = items.slice(MAX_SLICES).reduce((n, [, v]) => n + v, 0);
  if (rest > 0) top.push([`Other (${items.length - MAX_SLICES})`, rest]);
  const total = top.reduce((n, [, v]) => n + v, 0);
  const svg = s("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "pie chart" });
  if (!total) {
    svg.append(s("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "axis-label" }, "No positive values to chart"));
    return svg;
  }
  const r = 140;
  const cx = Math.min(width / 2 - 120, 190);
  const cy = height / 2;
  let angle = -Math.PI / 2;
  top.forEach(([label, v], k) => {
    const a = (v / total) * Math.PI * 2;
    const color = k === MAX_SLICES ? "#cbd5e1" : PALETTE[k % PALETTE.length];
    const title = s("title", {}, `${truncate(label, 60)}: ${fmt.num(v)} (${((v / total) * 100).toFixed(1)}%)`);
    if (a >= Math.PI * 2 - 1e-9) {
      svg.append(s("circle", { cx, cy, r, fill: color, class: "slice" }, title));
    } else {
      const [x1, y1] = [cx + r * Math.cos(angle), cy + r * Math.sin(angle)];
      const [x2, y2] = [cx + r * Math.cos(angle + a), cy + r * Math.sin(angle + a)];
      svg.append(s("path", { d: `M${cx},${cy} L${x1},${y1} A${r},${r} 0 ${a > Math.PI ? 1 : 0} 1 ${x2},${y2} Z`, fill: color, class: "slice" }, title));
    }
    angle += a;
    const ly = 40 + k * 26;
    svg.append(
      s("rect", { x: cx + r + 40, y: ly - 11, width: 12, height: 12, rx: 3, fill: color }),
      s("text", { x: cx + r + 58, y: ly, class: "legend-label" }, truncate(label, 28)),
      s("text", { x: width - 20, y: ly, class: "legend-value", "text-anchor": "end" }, `${((v / total) * 100).toFixed(1)}%`),
    );
  });
  svg.append(s("circle", { cx, cy, r: r * 0.55, fill: "#fff" }), s("text", { x: cx, y: cy - 4, "text-anchor": "middle", class: "pie-total" }, fmt.compact(total)), s("text", { x: cx, y: cy + 16, "text-anchor": "middle", class: "axis-label" }, truncate(metas[y].label, 20)));
  return svg;
}
