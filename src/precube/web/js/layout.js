// The frame every page is drawn in: page head (breadcrumbs, title, actions), tabs and cards.

import { h } from "./dom.js";

/** The head of a page: breadcrumbs [[text, href]…], a title, badges beside it and action buttons. */
export function pageHead({ crumbs = [], title, badges = [], actions = [], subtitle }) {
  const trail = h(
    "nav",
    { class: "crumbs", "aria-label": "Breadcrumb" },
    crumbs.map(([text, href], i) => [i ? h("span", { class: "crumb-sep" }, "/") : null, href ? h("a", { href }, text) : h("span", {}, text)]),
  );
  return h(
    "header",
    { class: "page-head" },
    h(
      "div",
      { class: "page-head-main" },
      crumbs.length ? trail : null,
      h("div", { class: "page-title-row" }, h("h1", { class: "page-title" }, title), badges),
      subtitle ? h("div", { class: "page-subtitle" }, subtitle) : null,
    ),
    h("div", { class: "page-actions" }, actions),
  );
}

/** Tabs as links (each one a URL): [[label, href, key]…]. */
export function tabs(items, active) {
  return h(
    "nav",
    { class: "tabs", role: "tablist" },
    items.map(([label, href, key]) => h("a", { href, role: "tab", class: ["tab", key === active && "active"], "aria-selected": String(key === active) }, label)),
  );
}

export function card(title, body, { actions = [], class: extra, subtitle } = {}) {
  return h(
    "section",
    { class: ["card", extra] },
    title
      ? h(
          "div",
          { class: "card-head" },
          h("div", {}, h("h2", { class: "card-title" }, title), subtitle ? h("div", { class: "card-subtitle" }, subtitle) : null),
          h("div", { class: "card-actions" }, actions),
        )
      : null,
    h("div", { class: "card-body" }, body),
  );
}

/** Key figures in a row: [[label, value, hint]…]. */
export function stats(items) {
  return h(
    "div",
    { class: "stats" },
    items.map(([label, value, hint]) => h("div", { class: "stat" }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value), hint ? h("div", { class: "stat-hint" }, hint) : null)),
  );
}

/** Label/value pairs. */
export function facts(items) {
  return h(
    "dl",
    { class: "facts" },
    items.filter(Boolean).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? "–")]),
  );
}

export function button(label, onclick, { kind = "", icon, title, disabled, testid } = {}) {
  return h(
    "button",
    { class: ["btn", kind && `btn-${kind}`], onclick, title, disabled, "data-testid": testid, type: "button" },
    icon ? h("span", { class: "btn-icon", "aria-hidden": "true" }, icon) : null,
    label,
  );
}
