// The public session API, by relative URLs: this module lives at <root>/ui/api.js, so the
// API is <root>/eve/v1/ wherever eve is mounted. The token (when the server has one, or
// an OIDC sign-in's, see login.js) is kept in sessionStorage and sent only as a bearer
// header, never in a URL it requests.

import { currentToken, keepToken, loginConfig, startLogin } from "./login.js";

const ROOT = new URL("../eve/v1/", import.meta.url);
// `eve dev --web` opens <root>/#token=<token>: a fragment is never sent to a server
const TOKEN_FRAGMENT = "#token=";
let asking = null;
let loginFailure = "";

/** Say why the last sign-in failed, the next time the token dialog opens. */
export function noteLoginFailure(message) {
  loginFailure = message;
}

/** Keep the token the URL's fragment brings in this tab, and take it out of the address
 * bar and the history, so it is neither shown nor bookmarked. */
export function takeTokenFromUrl() {
  if (!location.hash.startsWith(TOKEN_FRAGMENT)) return;
  const token = decodeURIComponent(location.hash.slice(TOKEN_FRAGMENT.length));
  if (token) keepToken(token);
  history.replaceState(null, "", location.pathname + location.search);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const token = currentToken();
  return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
}

/** Ask for the token once, however many requests were refused at the same time. */
function askToken(refused) {
  if (!asking) {
    asking = new Promise((resolve) => {
      const dialog = document.getElementById("token-dialog");
      const form = document.getElementById("token-form");
      const input = document.getElementById("token-input");
      const error = document.getElementById("token-error");
      const message = loginFailure || (refused ? "That token was refused; try again." : "");
      loginFailure = "";
      error.hidden = !message;
      error.textContent = message;
      offerLogin();
      form.addEventListener("submit", function submitted(event) {
        event.preventDefault();
        form.removeEventListener("submit", submitted);
        keepToken(input.value);
        input.value = "";
        dialog.close();
        asking = null;
        resolve();
      });
      dialog.showModal();
      input.focus();
    });
  }
  return asking;
}

/** Show the issuer's sign-in button in the token dialog when the server has one. */
async function offerLogin() {
  const oidc = await loginConfig();
  const button = document.getElementById("oidc-login");
  if (!oidc || !button.hidden) return;
  button.textContent = `Sign in with ${new URL(oidc.issuer).host}`;
  button.hidden = false;
  button.addEventListener("click", () =>
    startLogin(oidc).catch(() => {
      // crypto.subtle (the PKCE challenge) exists only on https:// pages and loopback
      const error = document.getElementById("token-error");
      error.textContent = "Signing in needs this page over https (or on 127.0.0.1).";
      error.hidden = false;
    }),
  );
}

async function fetchAuthorized(path, init = {}) {
  let refused = false;
  for (;;) {
    const response = await fetch(new URL(path, ROOT), { ...init, headers: headers(init.headers) });
    if (response.status !== 401) return response;
    await askToken(refused || Boolean(currentToken()));
    refused = true;
  }
}

async function call(method, path, body) {
  const init = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { "content-type": "application/json" };
  }
  const response = await fetchAuthorized(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data.code || "http_error", data.error || response.statusText);
  return data;
}

// a schedule's name may hold "/" (reports/daily): each part is encoded, the slashes stay
const schedule = (name, action) => `schedules/${name.split("/").map(encodeURIComponent).join("/")}/${action}`;
const session = (id, action = "") => `session/${encodeURIComponent(id)}${action ? `/${action}` : ""}`;

export const api = {
  info: () => call("GET", "info"),
  sessions: (limit = 50, cursor = null) =>
    call("GET", `sessions?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`),
  create: (message) => call("POST", "session", message ? { message } : {}),
  summary: (id) => call("GET", session(id)),
  send: (id, message) => call("POST", session(id), { message }),
  answer: (id, requestId, optionId, values) =>
    call("POST", session(id), { inputResponses: [values ? { requestId, optionId, values } : { requestId, optionId }] }),
  cancel: (id) => call("POST", session(id, "cancel")),
  reset: (id) => call("POST", session(id, "reset")),
  compact: (id) => call("POST", session(id, "compact")),
  schedules: () => call("GET", "schedules"),
  runSchedule: (name) => call("POST", schedule(name, "run")),
  pauseSchedule: (name) => call("POST", schedule(name, "pause")),
  resumeSchedule: (name) => call("POST", schedule(name, "resume")),
};

/**
 * Follow a session's events from index `start`, calling `onEvent` once per index in order.
 * A lost connection (the server restarted) is retried from the next index it needs, so the
 * page gets no gap and no repeat. `onState` hears "live", "reconnecting" and "stopped".
 */
export function follow(id, start, onEvent, onState = () => {}) {
  const controller = new AbortController();
  let next = start;
  let delay = 250;

  async function readOnce() {
    const path = `${session(id, "stream")}?startIndex=${next}&follow=true`;
    const response = await fetchAuthorized(path, { signal: controller.signal });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new ApiError(response.status, data.code || "http_error", data.error || response.statusText);
    }
    onState("live");
    delay = 250;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      const lines = buffered.split("\n");
      buffered = lines.pop();
      for (const line of lines) {
        if (!line.trim()) continue; // a keep-alive
        const event = JSON.parse(line);
        if (event.meta.index < next) continue; // already shown
        next = event.meta.index + 1;
        onEvent(event);
      }
    }
  }

  (async () => {
    while (!controller.signal.aborted) {
      try {
        await readOnce();
      } catch (error) {
        if (controller.signal.aborted) break;
        if (error instanceof ApiError && error.status < 500) {
          onState("stopped", error);
          return;
        }
      }
      if (controller.signal.aborted) break;
      onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 2000);
    }
  })();
  return () => controller.abort();
}
