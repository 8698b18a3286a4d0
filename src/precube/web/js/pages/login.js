// Sign-in: the server's users (HTTP Basic, verified by POST /user/authentication, kept for this tab only).

import { signIn } from "../api.js";
import { alertBox, clear, h } from "../dom.js";
import { go } from "../nav.js";

export function renderLogin(root, next) {
  const user = h("input", { name: "username", autocomplete: "username", required: true, placeholder: "ADMIN", "aria-label": "User name" });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true, "aria-label": "Password" });
  const error = h("div", { class: "login-error" });
  const submit = h("button", { class: "btn btn-primary btn-block", type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "login-card", novalidate: true },
    h("div", { class: "login-brand" }, h("img", { src: "/web/favicon.svg", alt: "" }), h("span", {}, "precube")),
    h("h1", {}, "Sign in"),
    h("p", { class: "muted" }, "Use your precube server account."),
    h("label", { class: "field" }, h("span", { class: "field-label" }, "User name"), user),
    h("label", { class: "field" }, h("span", { class: "field-label" }, "Password"), password),
    error,
    submit,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clear(error);
    if (!user.value || !password.value) {
      error.append(alertBox(new Error("give your user name and password")));
      return;
    }
    submit.disabled = true;
    submit.textContent = "Signing in…";
    try {
      await signIn(user.value.trim(), password.value);
      go(next && next.startsWith("/") ? next : "/projects");
    } catch (err) {
      error.append(alertBox(err));
      submit.disabled = false;
      submit.textContent = "Sign in";
      password.select();
    }
  });
  clear(root).append(
    h(
      "div",
      { class: "login" },
      h(
        "div",
        { class: "login-side" },
        h("h2", {}, "Sub-second SQL over precomputed cubes"),
        h("p", {}, "Models, segments, jobs and queries of your precube server, in one console."),
        h("ul", {}, h("li", {}, "Build and merge segments on a timeline"), h("li", {}, "Follow jobs live"), h("li", {}, "Query, explain and chart")),
      ),
      form,
    ),
  );
  root.classList.remove("booting");
  user.focus();
}
