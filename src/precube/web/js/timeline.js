// The segment timeline: each segment drawn on a UTC time axis by its [start, end), coloured by status, in
// lanes (a segment being refreshed or merged sits above the ones it replaces); gaps between segments are
// hatched, overlaps of queryable segments marked red. Hover shows a segment's figures; click selects it.

import { fmt, h, s } from "./dom.js";

export const STATES = [
  ["READY", "ready", "Ready: answers queries"],
  ["NEW", "new", "New: being built"],
  ["REFRESHING", "refreshing", "Refreshing: rebuilt from source"],
  ["MERGING", "merging", "Merging: contiguous segments into one"],
  ["LOCKED", "locked", "Locked: ready, being replaced"],
  ["WARNING", "warning", "Warning: layouts may disagree"],
];

/** The timeline's colour class of a segment (Kylin's display status folded onto the legend). */
export function tone(seg) {
  switch (seg.status_to_display) {
    case "ONLINE":
      return "ready";
    case "LOADING":
      return "new";
    case "REFRESHING":
      return "refreshing";
    case "MERGING":
      return "merging";
    case "LOCKED":
      return "locked";
    case "OVERLAP":
      return "overlap";
    case "WARNING":
      return "warning";
    default:
      return seg.status === "NEW" ? "new" : "ready";
  }
}

const DAY = 86400000;
const STEPS = [
  ["hour", 3600000], ["6 hours", 6 * 3600000], ["day", DAY], ["week", 7 * DAY], ["month", 30.4 * DAY],
  ["quarter", 91 * DAY], ["year", 365 * DAY], ["2 years", 730 * DAY], ["5 years", 1826 * DAY], ["10 years", 3652 * DAY],
];

/** Tick times between lo and hi (UTC calendar boundaries), at most about `count` of them. */
export function ticks(lo, hi, count) {
  const span = Math.max(1, hi - lo);
  const [unit] = STEPS.find(([, ms]) => span / ms <= count) || STEPS[STEPS.length - 1];
  const d = new Date(lo);
  const out = [];
  const start = (y, m = 0, day = 1, hour = 0) => Date.UTC(y, m, day, hour);
  let t;
  if (unit.endsWith("year") || unit.endsWith("years")) {
    const every = unit === "year" ? 1 : Number(unit.split(" ")[0]);
    let y = Math.ceil(d.getUTCFullYear() / every) * every;
    for (t = start(y); t <= hi; y += every, t = start(y)) if (t >= lo) out.push([t, String(y)]);
  } else if (unit === "quarter" || unit === "month") {
    const every = unit === "quarter" ? 3 : 1;
    let y = d.getUTCFullYear();
    let m = Math.ceil(d.getUTCMonth() / every) * every;
    for (t = start(y, m); t <= hi; ) {
      if (t >= lo) out.push([t, m === 0 ? String(y) : new Date(t).toISOString().slice(0, 7)]);
      m += every;
      if (m >= 12) (m -= 12), (y += 1);
      t = start(y, m);
    }
  } else {
    const ms = STEPS.find(([u]) => u === unit)[1];
    const first = Math.ceil(lo / ms) * ms;
    const label = ms >= DAY ? (x) => new Date(x).toISOString().slice(0, 10) : (x) => new Date(x).toISOString().slice(5, 16).replace("T", " ");
    for (t = first; t <= hi; t += ms) out.push([t, label(t)]);
  }
  return out;
}

/** Lanes: queryable segments from the bottom, then the ones being built above them; each in the first lane of
its group where it overlaps nothing (overlapping queryable segments, a broken invariant, stack too). */
function lanes(segments) {
  const lane = new Map();
  const place = (group, first) => {
    const ends = [];
    for (const seg of group.sort((a, b) => a.start - b.start)) {
      let i = ends.findIndex((end) => end <= seg.start);
      if (i < 0) i = ends.push(0) - 1;
      ends[i] = seg.end;
      lane.set(seg.id, first + i);
    }
    return ends.length;
  };
  const base = place(segments.filter((x) => x.status !== "NEW"), 0);
  const above = place(segments.filter((x) => x.status === "NEW"), base);
  return { lane, count: Math.max(1, base + above) };
}

/** Where no segment covers [first start, last end). */
export function gaps(segments) {
  const sorted = [...segments].sort((a, b) => a.start - b.start);
  const out = [];
  let reach = sorted.length ? sorted[0].end : 0;
  for (const seg of sorted.slice(1)) {
    if (seg.start > reach) out.push([reach, seg.start]);
    reach = Math.max(reach, seg.end);
  }
  return out;
}

/** Overlaps between queryable segments (READY / WARNING): the segment invariants are broken there. */
export function overlaps(segments) {
  const ready = segments.filter((x) => x.status !== "NEW").sort((a, b) => a.start - b.start);
  const out = [];
  for (let i = 0; i < ready.length; i += 1) {
    for (let j = i + 1; j < ready.length && ready[j].start < ready[i].end; j += 1) {
      out.push([ready[j].start, Math.min(ready[i].end, ready[j].end)]);
    }
  }
  return out;
}

/**
 * Draw the timeline into `host` (re-drawn on resize by the caller): `segments` as the API lists them,
 * `selected` a Set of ids, `onToggle(seg)` on click, `pending` an optional [start, end) drawn dashed.
 */
export function drawTimeline(host, segments, { selected = new Set(), onToggle, pending } = {}) {
  const items = segments.map((seg) => ({ ...seg, start: Number(seg.segRange.date_range_start), end: Number(seg.segRange.date_range_end) }));
  const width = Math.max(480, host.clientWidth || 900);
  const { lane, count } = lanes(items);
  const LANE_H = 44;
  const TOP = 12;
  const AXIS = 34;
  const height = TOP + count * (LANE_H + 8) + AXIS;
  const padX = 16;
  let lo = Math.min(...items.map((x) => x.start), pending ? pending[0] : Infinity);
  let hi = Math.max(...items.map((x) => x.end), pending ? pending[1] : -Infinity);
  const span = hi - lo || DAY;
  lo -= span * 0.02;
  hi += span * 0.02;
  const x = (t) => padX + ((t - lo) / (hi - lo)) * (width - 2 * padX);
  const svg = s("svg", { class: "timeline", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `${items.length} segments on a time axis` });
  const defs = s(
    "defs",
    {},
    s("pattern", { id: "gap-hatch", width: 8, height: 8, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, s("rect", { width: 8, height: 8, class: "gap-bg" }), s("line", { x1: 0, y1: 0, x2: 0, y2: 8, class: "gap-line" })),
  );
  svg.append(defs);
  const axisY = height - AXIS + 4;
  for (const [t, label] of ticks(lo, hi, Math.floor(width / 110))) {
    svg.append(s("line", { x1: x(t), x2: x(t), y1: TOP - 4, y2: axisY, class: "tick-line" }), s("text", { x: x(t), y: axisY + 16, class: "tick-label", "text-anchor": "middle" }, label));
  }
  svg.append(s("line", { x1: padX, x2: width - padX, y1: axisY, y2: axisY, class: "axis-line" }));
  const laneTop = (i) => TOP + (count - 1 - i) * (LANE_H + 8);
  for (const [a, b] of gaps(items)) {
    svg.append(
      s("rect", { x: x(a), y: laneTop(0), width: Math.max(2, x(b) - x(a)), height: LANE_H, class: "gap", "data-gap": `${a}-${b}` }, s("title", {}, `Gap: no segment covers ${fmt.day(a)} → ${fmt.day(b)}`)),
    );
    if (x(b) - x(a) > 36) svg.append(s("text", { x: (x(a) + x(b)) / 2, y: laneTop(0) + LANE_H / 2 + 4, class: "gap-label", "text-anchor": "middle" }, "gap"));
  }
  for (const [a, b] of overlaps(items)) {
    svg.append(s("rect", { x: x(a), y: axisY - 5, width: Math.max(3, x(b) - x(a)), height: 5, class: "overlap-mark" }, s("title", {}, `Overlap ${fmt.day(a)} → ${fmt.day(b)}`)));
  }
  if (pending) {
    const [a, b] = pending;
    svg.append(s("rect", { x: x(a), y: laneTop(0), width: Math.max(3, x(b) - x(a)), height: LANE_H, rx: 6, class: "pending" }));
  }
  const tip = h("div", { class: "tip", role: "tooltip" });
  tip.hidden = true;
  for (const seg of items) {
    const top = laneTop(lane.get(seg.id));
    const w = Math.max(3, x(seg.end) - x(seg.start) - 2);
    const g = s("g", { class: ["seg", `seg-${tone(seg)}`, selected.has(seg.id) && "selected"].filter(Boolean).join(" "), "data-segment": seg.name, "data-status": tone(seg), tabindex: 0 });
    g.append(s("rect", { x: x(seg.start) + 1, y: top, width: w, height: LANE_H, rx: 6, class: "seg-box" }));
    if (w > 84) {  // as much of the label as fits (about 6.5 px a character)
      const range = w > 170 ? `${fmt.day(seg.start)} → ${fmt.day(seg.end)}` : fmt.day(seg.start);
      const sub = seg.source_count === null ? tone(seg).toUpperCase() : `${fmt.compact(seg.source_count)} rows · ${fmt.bytes(seg.bytes_size)}`;
      g.append(s("text", { x: x(seg.start) + 9, y: top + 18, class: "seg-label" }, range));
      if (w > sub.length * 6.2 + 14) g.append(s("text", { x: x(seg.start) + 9, y: top + 34, class: "seg-sub" }, sub));
    }
    const show = (e) => {
      const box = host.getBoundingClientRect();
      tip.replaceChildren(
        h("div", { class: "tip-title" }, seg.name),
        h("div", { class: "tip-status" }, h("span", { class: `dot dot-${tone(seg)}` }), seg.status_to_display, seg.status === seg.status_to_display ? null : ` (${seg.status})`),
        h(
          "dl",
          {},
          h("dt", {}, "Range"), h("dd", {}, `${fmt.day(seg.start)} → ${fmt.day(seg.end)}`),
          h("dt", {}, "Rows"), h("dd", {}, fmt.num(seg.source_count)),
          h("dt", {}, "Bytes"), h("dd", {}, fmt.bytes(seg.bytes_size)),
          h("dt", {}, "Layouts"), h("dd", {}, `${seg.index_count} of ${seg.index_count_total}`),
          h("dt", {}, "Built"), h("dd", {}, seg.last_build_time ? fmt.when(seg.last_build_time) : "not yet"),
        ),
      );
      tip.hidden = false;
      const px = (e.clientX ?? box.left + x(seg.start)) - box.left;
      tip.style.left = `${Math.min(Math.max(8, px + 14), box.width - 250)}px`;
      tip.style.top = `${Math.max(0, top + LANE_H + 6)}px`;
    };
    g.addEventListener("mousemove", show);
    g.addEventListener("focus", show);
    g.addEventListener("mouseleave", () => (tip.hidden = true));
    g.addEventListener("blur", () => (tip.hidden = true));
    if (onToggle) {
      g.addEventListener("click", () => onToggle(seg));
      g.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") (e.preventDefault(), onToggle(seg));
      });
    }
    svg.append(g);
  }
  host.replaceChildren(svg, tip);
}

export function legend() {
  return h(
    "div",
    { class: "legend" },
    STATES.map(([label, cls, title]) => h("span", { class: "legend-item", title }, h("span", { class: `swatch seg-${cls}` }), label)),
    h("span", { class: "legend-item", title: "No segment covers this time" }, h("span", { class: "swatch swatch-gap" }), "Gap"),
    h("span", { class: "legend-item", title: "Queryable segments overlap" }, h("span", { class: "swatch swatch-overlap" }), "Overlap"),
  );
}
