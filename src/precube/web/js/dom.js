// Small DOM helpers: element builders (no innerHTML anywhere: every text a user or the server gave is set
// as text), number and time formats, dialogs, toasts and status badges.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (key === "text") el.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "value" && "value" in el) el.value = value;
    else if (key === "checked" || key === "selected" || key === "disabled") el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h("button", {class: "btn", onclick}, "Build"). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs && (attrs instanceof Node || typeof attrs !== "object" || Array.isArray(attrs))) children.unshift(attrs);
  else apply(el, attrs);
  return append(el, children);
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  return append(el, children);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// -- formats -------------------------------------------------------------------------------------------

const NUM = new Intl.NumberFormat("en-US");
export const fmt = {
  num(v) {
    if (v === null || v === undefined || v === "") return "–";
    const n = Number(v);
    return Number.isFinite(n) ? NUM.format(n) : String(v);
  },
  compact(v) {
    const n = Number(v);
    if (!Number.isFinite(n)) return String(v);
    const a = Math.abs(n);
    if (a >= 1e12) return `${+(n / 1e12).toFixed(1)}T`;
    if (a >= 1e9) return `${+(n / 1e9).toFixed(1)}B`;
    if (a >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
    if (a >= 1e3) return `${+(n / 1e3).toFixed(1)}k`;
    return `${+n.toFixed(2)}`;
  },
  bytes(v) {
    if (v === null || v === undefined || v < 0) return "–";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let n = Number(v);
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i += 1;
    }
    return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
  },
  /** A partition time (epoch ms, UTC) as a day, with the time of day when it is not midnight. */
  day(ms) {
    if (ms === null || ms === undefined || ms === "") return "–";
    const iso = new Date(Number(ms)).toISOString();
    return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
  },
  /** A moment something happened, in the browser's time zone. */
  when(ms) {
    if (!ms) return "–";
    const d = new Date(Number(ms));
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  },
  ago(ms) {
    if (!ms) return "–";
    const s = Math.max(0, (Date.now() - Number(ms)) / 1000);
    if (s < 60) return `${Math.round(s)} s ago`;
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return `${Math.round(s / 86400)} d ago`;
  },
  duration(ms) {
    if (ms === null || ms === undefined) return "–";
    const n = Number(ms);
    if (n < 1000) return `${Math.round(n)} ms`;
    if (n < 60000) return `${(n / 1000).toFixed(1)} s`;
    const m = Math.floor(n / 60000);
    if (m < 60) return `${m} min ${Math.round((n % 60000) / 1000)} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  },
  pct(v) {
    return `${Math.round(Number(v) * 100)}%`;
  },
};

/** Epoch ms of a `yyyy-mm-dd` day (UTC), as the REST API takes times; NaN when it is not one. */
export function dayMs(text) {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : NaN;
}

// -- status badges ---------------------------------------------------------------------------------------

const TONES = {
  ONLINE: "ok", READY: "ok", FINISHED: "ok", SUCCEED: "ok", SUCCEEDED: "ok", SUCCESS: "ok",
  RUNNING: "run", LOADING: "run", NEW: "run", PENDING: "wait", REFRESHING: "refresh", MERGING: "merge",
  LOCKED: "muted", STOPPED: "muted", OFFLINE: "muted", DISCARDED: "muted", NO_BUILD: "muted",
  WARNING: "warn", OVERLAP: "bad", ERROR: "bad", BROKEN: "bad", FAILED: "bad", FAIL: "bad",
  ADMIN: "accent", MANAGEMENT: "accent", OPERATION: "accent", QUERY: "accent",
};

export function badge(status, title) {
  const text = String(status ?? "–");
  return h("span", { class: ["badge", `tone-${TONES[text] || "muted"}`], title }, text.replaceAll("_", " "));
}

export function progressBar(fraction, tone) {
  const bar = h("div", { class: ["progress", tone && `tone-${tone}`] }, h("div", { class: "progress-fill" }));
  bar.firstChild.style.width = `${Math.max(0, Math.min(1, Number(fraction) || 0)) * 100}%`;
  return bar;
}

// -- feedback --------------------------------------------------------------------------------------------

export function errorText(err) {
  return err && err.message ? err.message : String(err);
}

/** The API's one-line message in a banner (never a stack trace). */
export function alertBox(err, kind = "error") {
  return h("div", { class: ["alert", `alert-${kind}`], role: "alert" }, errorText(err));
}

let toastHost = null;
export function toast(message, kind = "info") {
  if (!toastHost || !toastHost.isConnected) {
    toastHost = h("div", { class: "toasts" });
    document.body.append(toastHost);
  }
  const item = h("div", { class: ["toast", `toast-${kind}`], role: kind === "error" ? "alert" : "status" }, message);
  toastHost.append(item);
  setTimeout(() => item.classList.add("leaving"), 4200);
  setTimeout(() => item.remove(), 4700);
}

export function spinner(label = "Loading…") {
  return h("div", { class: "loading" }, h("span", { class: "spin" }), label);
}

export function empty(title, detail) {
  return h("div", { class: "empty" }, h("div", { class: "empty-title" }, title), detail && h("div", { class: "empty-detail" }, detail));
}

/** A modal dialog; `build(close)` returns its body. Resolves with what `close(value)` is given. */
export function dialog({ title, build, wide = false }) {
  return new Promise((resolve) => {
    const backdrop = h("div", { class: "backdrop" });
    const close = (value) => {
      backdrop.remove();
      document.removeEventListener("keydown", onKey);
      resolve(value);
    };
    const onKey = (e) => {
      if (e.key === "Escape") close(undefined);
    };
    const box = h(
      "div",
      { class: ["dialog", wide && "dialog-wide"], role: "dialog", "aria-modal": "true", "aria-label": title },
      h("div", { class: "dialog-head" }, h("h2", {}, title), h("button", { class: "icon-btn", title: "Close", onclick: () => close(undefined) }, "✕")),
      build(close),
    );
    backdrop.append(box);
    backdrop.addEventListener("mousedown", (e) => {
      if (e.target === backdrop) close(undefined);
    });
    document.addEventListener("keydown", onKey);
    document.body.append(backdrop);
    const first = box.querySelector("input, select, textarea, button.btn-primary, button.btn-danger");
    if (first) first.focus();
  });
}

/** Ask before doing something; `run` is called on OK and its failure is shown in the dialog. */
export function confirmAction({ title, message, ok = "OK", danger = false, run }) {
  return dialog({
    title,
    build(close) {
      const error = h("div");
      const button = h("button", { class: danger ? "btn btn-danger" : "btn btn-primary" }, ok);
      button.addEventListener("click", async () => {
        button.disabled = true;
        clear(error);
        try {
          close(run ? await run() : true);
        } catch (err) {
          error.append(alertBox(err));
          button.disabled = false;
        }
      });
      return h(
        "div",
        {},
        h("div", { class: "dialog-body" }, message instanceof Node ? message : h("p", {}, message), error),
        h("div", { class: "dialog-foot" }, h("button", { class: "btn", onclick: () => close(undefined) }, "Cancel"), button),
      );
    },
  });
}

/** A labelled form field. */
export function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", { class: "field-label" }, label), control, hint && h("span", { class: "field-hint" }, hint));
}

/** A table from column specs `{label, value(row) → node|text, class}`. */
export function table(columns, rows, { rowClass, onRow, empty: emptyText = "Nothing here yet." } = {}) {
  const head = h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.class }, c.label))));
  const body = h("tbody");
  for (const row of rows) {
    const tr = h("tr", { class: rowClass ? rowClass(row) : undefined }, columns.map((c) => h("td", { class: c.class }, c.value(row))));
    if (onRow) {
      tr.classList.add("clickable");
      tr.addEventListener("click", (e) => {
        if (!e.target.closest("button, a, input, label")) onRow(row);
      });
    }
    body.append(tr);
  }
  if (!rows.length) body.append(h("tr", {}, h("td", { class: "muted center", colspan: String(columns.length) }, emptyText)));
  return h("div", { class: "table-wrap" }, h("table", { class: "grid" }, head, body));
}

export function link(href, text, attrs = {}) {
  return h("a", { href, ...attrs }, text);
}
