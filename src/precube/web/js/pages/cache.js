// The project's result cache: hits, misses, stale drops, waits, stores, entries, bytes; clear (system admins).

import { api } from "../api.js";
import { confirmAction, fmt, h, toast } from "../dom.js";
import { button, card, facts, pageHead, stats } from "../layout.js";
import { href } from "../nav.js";

export async function render(view) {
  const { main, params, ctx } = view;
  const { project } = params;
  const headHost = h("div");
  const body = h("div");
  main.append(headHost, body);
  const clearCache = () =>
    confirmAction({
      title: `Clear the cached answers of ${project}?`,
      message: "The next run of each query is answered from the layouts again (and cached anew).",
      ok: "Clear cache",
      danger: true,
      run: async () => {
        const done = await api.del("/query/cache", { project });
        toast(`${fmt.num(done.cleared)} cached answer${done.cleared === 1 ? "" : "s"} cleared`, "ok");
        await refresh();
      },
    });
  headHost.append(
    pageHead({
      crumbs: [["Projects", "#/projects"], [project, href("projects", project, "models")], ["Cache"]],
      title: "Result cache",
      subtitle: "Answers kept by normalised SQL; an answer is dropped when a segment it read changes.",
      actions: ctx.isAdmin ? [button("Clear cache", clearCache, { kind: "danger-ghost", testid: "clear-cache" })] : [],
    }),
  );
  async function refresh() {
    const st = await api.get("/query/cache/stats", { project });
    const lookups = st.hits + st.misses;
    body.replaceChildren(
      stats([
        ["Hit rate", lookups ? fmt.pct(st.hits / lookups) : "–", `${fmt.num(lookups)} lookups`],
        ["Hits", fmt.num(st.hits)],
        ["Misses", fmt.num(st.misses)],
        ["Stores", fmt.num(st.stores)],
        ["Entries", fmt.num(st.entries)],
        ["Size", fmt.bytes(st.bytes)],
      ]),
      card(
        "Details",
        facts([
          ["Backend", h("code", {}, st.backend)],
          ["Stale drops", `${fmt.num(st.stale)} (a segment or the model changed after the answer was cached)`],
          ["Waits", `${fmt.num(st.waits)} (queries that waited for an identical one running)`],
          ["Not kept", `${fmt.num(st.skipped)} (answers too large or too cheap to keep)`],
        ]),
        { subtitle: ctx.isAdmin ? "Counters of this project, shared by every server on the same backend." : "Clearing the cache needs a system admin." },
      ),
    );
  }
  await refresh();
  view.every(5000, refresh, false);
}
