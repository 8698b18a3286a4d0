// The SQL editor: a textarea over a highlighted copy of its text (the textarea's own text is transparent,
// its caret and selection stay native). Ctrl-Enter (⌘-Enter) runs, Tab indents.

import { h } from "./dom.js";

const KEYWORDS = new Set(
  `select from where group by order having limit offset join inner left right full outer cross on using as and or not
  in is null like ilike between case when then else end distinct union all intersect except with asc desc nulls first
  last exists any some cast interval date timestamp time true false over partition rows range preceding following
  current row filter within explain values lateral natural window qualify fetch next only top`.split(/\s+/),
);
const TOKEN = /(--[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|('(?:[^']|'')*'?)|("(?:[^"]|"")*"?|`[^`]*`?)|(\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)|([A-Za-z_][A-Za-z0-9_$]*)(?=(\s*\())?|(\s+)|([^\sA-Za-z0-9_'"`]+)/g;

/** The text as spans of token classes (kw, fn, str, num, com, id, op). */
export function highlight(text) {
  const out = [];
  TOKEN.lastIndex = 0;
  let m;
  let last = 0;
  while ((m = TOKEN.exec(text))) {
    if (m.index > last) out.push(document.createTextNode(text.slice(last, m.index)));
    const [all, com, str, quoted, num, word, call, space] = m;
    let cls = "op";
    if (com) cls = "com";
    else if (str) cls = "str";
    else if (quoted) cls = "id";
    else if (num) cls = "num";
    else if (word) cls = KEYWORDS.has(word.toLowerCase()) ? "kw" : call ? "fn" : "id";
    out.push(space ? document.createTextNode(all) : h("span", { class: `tok-${cls}` }, all));
    last = TOKEN.lastIndex;
    if (all.length === 0) TOKEN.lastIndex += 1;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  out.push(document.createTextNode("\n")); // a trailing newline still gets its line
  return out;
}

export function sqlEditor({ value = "", onRun, placeholder = "SELECT …" } = {}) {
  const code = h("code");
  const shadow = h("pre", { class: "editor-shadow", "aria-hidden": "true" }, code);
  const input = h("textarea", { class: "editor-input", spellcheck: "false", autocapitalize: "off", autocomplete: "off", placeholder, "aria-label": "SQL", "data-testid": "sql" });
  input.value = value;
  const el = h("div", { class: "editor" }, shadow, input);
  const sync = () => {
    code.replaceChildren(...highlight(input.value));
    shadow.scrollTop = input.scrollTop;
    shadow.scrollLeft = input.scrollLeft;
  };
  input.addEventListener("input", sync);
  input.addEventListener("scroll", () => {
    shadow.scrollTop = input.scrollTop;
    shadow.scrollLeft = input.scrollLeft;
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      if (onRun) onRun();
    } else if (e.key === "Tab" && !e.shiftKey) {
      e.preventDefault();
      input.setRangeText("  ", input.selectionStart, input.selectionEnd, "end");
      sync();
    }
  });
  sync();
  return {
    el,
    get value() {
      return input.value;
    },
    set value(text) {
      input.value = text;
      sync();
    },
    /** Insert text at the caret (a table or column name picked from the list). */
    insert(text) {
      input.focus();
      input.setRangeText(text, input.selectionStart, input.selectionEnd, "end");
      sync();
    },
    focus: () => input.focus(),
  };
}
