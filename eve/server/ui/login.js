// Sign in through the server's OIDC issuer: authorization code + PKCE (S256). The page
// sends the browser to the issuer with a fresh verifier's challenge and a random state;
// back here with ?code=&state=, it checks the state, redeems the code at the issuer's
// token endpoint with the verifier, and keeps the access token (and when it expires) in
// this tab's sessionStorage only. An expired token is dropped, so the next call asks again.

const CONFIG = new URL("../eve/v1/auth/config", import.meta.url);
const PENDING_KEY = "eve-oidc-pending";
export const TOKEN_KEY = "eve-api-token";
const EXPIRES_KEY = "eve-api-token-expires";
// a token this close to its end is not sent: the request would race its expiry
const EARLY_MS = 30_000;
let config = null;

/** The issuer's login as the server describes it, or null when it offers none. */
export async function loginConfig() {
  if (config === null) {
    const response = await fetch(CONFIG).catch(() => null);
    const data = response && response.ok ? await response.json() : {};
    config = data.oidc || false;
  }
  return config || null;
}

/** The token to send, or null; an expired one is forgotten here. */
export function currentToken() {
  const expires = Number(sessionStorage.getItem(EXPIRES_KEY) || 0);
  if (expires && Date.now() > expires - EARLY_MS) {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(EXPIRES_KEY);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export function keepToken(token, expiresInSeconds = 0) {
  sessionStorage.setItem(TOKEN_KEY, token);
  if (expiresInSeconds > 0) sessionStorage.setItem(EXPIRES_KEY, String(Date.now() + expiresInSeconds * 1000));
  else sessionStorage.removeItem(EXPIRES_KEY);
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

function redirectUri() {
  return location.origin + location.pathname;
}

/** Leave for the issuer's sign-in page; the page comes back to `finishLogin`. */
export async function startLogin(oidc) {
  const verifier = random();
  const state = random();
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, hash: location.hash }));
  const url = new URL(oidc.authorizationEndpoint);
  const params = {
    response_type: "code",
    client_id: oidc.clientId,
    redirect_uri: redirectUri(),
    scope: oidc.scope,
    audience: oidc.audience,
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  location.assign(url.href);
}

/** Back from the issuer: redeem the code. Throws on a state that is not ours or a refusal. */
export async function finishLogin() {
  const query = new URLSearchParams(location.search);
  if (!query.has("code") && !query.has("error")) return;
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  // the code leaves the address bar and the history whatever happens next
  history.replaceState(null, "", location.pathname + (pending ? pending.hash : ""));
  if (query.has("error")) throw new Error(`the sign-in was refused: ${query.get("error")}`);
  if (!pending || query.get("state") !== pending.state) throw new Error("the sign-in answer is not for this page; sign in again");
  const oidc = await loginConfig();
  if (!oidc) throw new Error("this server offers no sign-in");
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: query.get("code"),
    redirect_uri: redirectUri(),
    client_id: oidc.clientId,
    code_verifier: pending.verifier,
  });
  const response = await fetch(oidc.tokenEndpoint, { method: "POST", body: form });
  const data = await response.json().catch(() => ({}));
  if (!response.ok || !data.access_token) throw new Error(`the issuer refused the sign-in (${data.error || response.status})`);
  keepToken(data.access_token, Number(data.expires_in) || 0);
}
