// A model's segment settings (seed 001 §4.4-4.5): auto-merge by calendar levels or by duration thresholds,
// the volatile range, and retention; the model's own values override the project's (PUT /models/{m}/config).

import { api } from "../api.js";
import { alertBox, badge, clear, field, h, toast } from "../dom.js";
import { card } from "../layout.js";

const LEVELS = ["HOUR", "SIX_HOUR", "HALF_DAY", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"];
const UNITS = ["HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"];
const DAY_MS = 86400000;

function unitSelect(value, name) {
  return h("select", { name }, UNITS.map((u) => h("option", { value: u, selected: u === value }, u.toLowerCase() + "s")));
}

// A setting's heading, with where its value comes from: this model's own, or the project's.
function heading(title, setOnModel) {
  return h("h3", {}, title, setOnModel ? badge("MODEL", "set on this model") : h("span", { class: "inherited" }, "from project"));
}

function toggleSwitch(checked, name, label) {
  return h("label", { class: "switch" }, h("input", { type: "checkbox", name, checked }), h("span", { class: "switch-track" }), h("span", {}, label));
}

export async function settingsCard(host, view) {
  const { project, model } = view.params;
  const path = `/models/${encodeURIComponent(model)}/config`;
  const config = await api.get(path, { project });
  const editable = view.ctx.can(project, "MANAGEMENT");
  const cfg = config.in_force;
  const own = config.segment_config || {};
  const byDuration = cfg.auto_merge_thresholds_ms.length > 0;

  const merge = toggleSwitch(cfg.auto_merge_enabled, "auto_merge_enabled", "Merge segments automatically");
  const modeLevels = h("input", { type: "radio", name: "merge_mode", value: "levels", checked: !byDuration });
  const modeDurations = h("input", { type: "radio", name: "merge_mode", value: "durations", checked: byDuration });
  const levels = h(
    "div",
    { class: "chips" },
    LEVELS.map((l) => h("label", { class: "chip" }, h("input", { type: "checkbox", value: l, checked: cfg.auto_merge_time_ranges.includes(l) }), l.replace("_", " ").toLowerCase())),
  );
  const durations = h("input", { name: "thresholds", placeholder: "7, 28", value: cfg.auto_merge_thresholds_ms.map((ms) => +(ms / DAY_MS).toFixed(3)).join(", ") });
  const volatile = toggleSwitch(cfg.volatile_range.volatile_range_enabled, "volatile_enabled", "Keep recent segments out of auto-merge");
  const volatileN = h("input", { type: "number", min: "0", name: "volatile_number", value: cfg.volatile_range.volatile_range_number });
  const volatileUnit = unitSelect(cfg.volatile_range.volatile_range_type, "volatile_unit");
  const retention = toggleSwitch(cfg.retention_range.retention_range_enabled, "retention_enabled", "Drop old segments");
  const retentionN = h("input", { type: "number", min: "1", name: "retention_number", value: cfg.retention_range.retention_range_number });
  const retentionUnit = unitSelect(cfg.retention_range.retention_range_type, "retention_unit");
  const error = h("div");

  const form = h(
    "div",
    { class: "settings" },
    h(
      "div",
      { class: "settings-block" },
      heading("Auto-merge", own.auto_merge_enabled !== undefined || own.auto_merge_time_ranges || own.auto_merge_thresholds_ms),
      merge,
      h("div", { class: "radio-row" }, h("label", {}, modeLevels, " Calendar levels (Kylin 5)"), h("label", {}, modeDurations, " Duration thresholds (days)")),
      levels,
      field("Thresholds in days, smallest first", durations, "Seed 001: e.g. 7, 28 merges contiguous segments into weeks, then 4-week blocks."),
    ),
    h(
      "div",
      { class: "settings-block" },
      heading("Volatile range", own.volatile_range),
      volatile,
      h("div", { class: "form-row" }, field("Last", volatileN), field("Unit", volatileUnit)),
      h("p", { class: "muted" }, "Segments this close to the latest end are not merged yet: late data still refreshes them."),
    ),
    h(
      "div",
      { class: "settings-block" },
      heading("Retention", own.retention_range),
      retention,
      h("div", { class: "form-row" }, field("Keep", retentionN), field("Unit", retentionUnit)),
      h("p", { class: "muted" }, "A segment ending further back than this from the latest segment's end is deleted after each build."),
    ),
  );
  const syncMode = () => {
    const levelsMode = modeLevels.checked;
    levels.classList.toggle("dim", !levelsMode);
    durations.disabled = levelsMode || !editable;
    for (const box of levels.querySelectorAll("input")) box.disabled = !levelsMode || !editable;
  };
  modeLevels.addEventListener("change", syncMode);
  modeDurations.addEventListener("change", syncMode);
  if (!editable) for (const input of form.querySelectorAll("input, select")) input.disabled = true;
  syncMode();

  const body = () => {
    const checked = (sw) => sw.querySelector("input").checked;
    const request = {
      project,
      auto_merge_enabled: checked(merge),
      volatile_range: { volatile_range_enabled: checked(volatile), volatile_range_number: Number(volatileN.value), volatile_range_type: volatileUnit.value },
      retention_range: { retention_range_enabled: checked(retention), retention_range_number: Number(retentionN.value), retention_range_type: retentionUnit.value },
    };
    if (modeLevels.checked) {
      request.auto_merge_time_ranges = [...levels.querySelectorAll("input:checked")].map((i) => i.value);
      if (!request.auto_merge_time_ranges.length) throw new Error("choose at least one calendar level");
    } else {
      const days = durations.value.split(",").map((x) => x.trim()).filter(Boolean).map(Number);
      if (!days.length || days.some((d) => !(d > 0))) throw new Error("thresholds must be positive numbers of days, e.g. 7, 28");
      request.auto_merge_thresholds_ms = days.map((d) => Math.round(d * DAY_MS));
    }
    return request;
  };
  const save = async (inherit) => {
    clear(error);
    try {
      await api.put(path, inherit ? { project, inherit: true } : body());
      toast(inherit ? "The model now takes the project's segment settings" : "Segment settings saved", "ok");
      await settingsCard(host, view);
    } catch (err) {
      error.append(alertBox(err));
    }
  };
  const actions = editable
    ? [h("button", { class: "btn btn-ghost", type: "button", onclick: () => save(true) }, "Use project settings"), h("button", { class: "btn btn-primary", type: "button", "data-testid": "save-settings", onclick: () => save(false) }, "Save settings")]
    : [];
  host.replaceChildren(card("Segment settings", [form, error], { actions, subtitle: editable ? "Applied after each build: auto-merge first, then retention." : "You can read these settings; changing them needs MANAGEMENT." }));
}
