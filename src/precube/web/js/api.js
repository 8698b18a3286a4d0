// The REST API client: every call carries the signed-in user's HTTP Basic credentials (kept in this tab's
// sessionStorage, never in a cookie) and unwraps Kylin's envelope; a failure becomes an ApiError whose
// message is the server's one-line `msg`.

const KEY = "precube.credentials";
const USER = "precube.user";
export const BASE = "/kylin/api";

export class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function encode(user, password) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

export function signedInUser() {
  return sessionStorage.getItem(KEY) ? sessionStorage.getItem(USER) : null;
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
}

/** Verify the credentials with the server (Kylin's login call) and keep them for this tab. */
export async function signIn(user, password) {
  const token = encode(user, password);
  const me = await request("POST", "/user/authentication", { token });
  sessionStorage.setItem(KEY, token);
  sessionStorage.setItem(USER, me.username);
  return me;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === "") continue;
    for (const item of Array.isArray(v) ? v : [v]) search.append(k, String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

async function request(method, path, { params, body, token } = {}) {
  const auth = token || sessionStorage.getItem(KEY);
  const headers = { Accept: "application/json" };
  if (auth) headers.Authorization = `Basic ${auth}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(BASE + path + query(params), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit", // no cookies, and no browser password prompt on a 401
      cache: "no-store",
    });
  } catch {
    throw new ApiError("cannot reach the precube server", 0, "NETWORK");
  }
  let envelope = null;
  try {
    envelope = await response.json();
  } catch {
    envelope = null;
  }
  if (!response.ok || !envelope || envelope.code !== "000") {
    const msg = (envelope && envelope.msg) || `${response.status} ${response.statusText}`;
    const err = new ApiError(String(msg).split("\n")[0], response.status, envelope && envelope.error_code);
    if (response.status === 401 && !token) {
      signOut();
      window.dispatchEvent(new CustomEvent("precube:signed-out", { detail: err.message }));
    }
    throw err;
  }
  return envelope.data;
}

export const api = {
  get: (path, params) => request("GET", path, { params }),
  post: (path, body, params) => request("POST", path, { body, params }),
  put: (path, body, params) => request("PUT", path, { body, params }),
  del: (path, params) => request("DELETE", path, { params }),
};

/** Every item of a paged Kylin listing (`value`, `total_size`), a page of up to `size` at a time. */
export async function all(path, params, size = 1000) {
  const found = [];
  for (let offset = 0; ; offset += 1) {
    const page = await api.get(path, { ...params, page_offset: offset, page_size: size });
    found.push(...page.value);
    if (found.length >= page.total_size || page.value.length === 0) return found;
  }
}
