// Hash URLs: every page has one (`#/projects/ssb/models/ssb/segments`), so links, reloads and the back button work.

export function go(path) {
  location.hash = `#${path}`;
}

/** The URL of a page from its path parts (each one escaped). */
export function href(...parts) {
  return `#/${parts.map((p) => encodeURIComponent(p)).join("/")}`;
}
