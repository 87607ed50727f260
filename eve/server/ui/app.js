// The dev UI's entry: a hash router over three pages, so every URL stays relative and the
// UI works wherever eve is mounted. Only the sessions page is loaded up front; the others
// are imported when first visited, which keeps the first render short.

import { noteLoginFailure, takeTokenFromUrl } from "./api.js";
import { finishLogin } from "./login.js";
import { sessionsPage } from "./sessions.js";

takeTokenFromUrl(); // before the router reads the fragment, and before any request
// back from the issuer's sign-in: the code is redeemed before the first API call
const signIn = finishLogin().catch((error) => error);

const main = document.getElementById("main");
const connection = document.getElementById("connection");
let leave = () => {};
let visit = 0;

function setConnection(state) {
  connection.textContent = { live: "live", reconnecting: "reconnecting…", stopped: "stream stopped" }[state] || "";
  connection.classList.toggle("down", state !== "live");
}

async function route() {
  leave();
  leave = () => {};
  connection.textContent = "";
  const current = ++visit;
  const hash = location.hash || "#/";
  const session = hash.match(/^#\/session\/(.+)$/);
  if (session) {
    const id = decodeURIComponent(session[1]);
    document.title = `eve · ${id}`;
    const { sessionPage } = await import("./session.js");
    if (current === visit) leave = sessionPage(main, id, setConnection);
  } else if (hash === "#/agent") {
    document.title = "eve · agent";
    const { agentPage } = await import("./agent.js");
    if (current === visit) leave = agentPage(main);
  } else {
    document.title = "eve · sessions";
    leave = sessionsPage(main);
  }
}

window.addEventListener("hashchange", () => {
  route();
  main.focus();
});
signIn.then((failed) => {
  if (failed) noteLoginFailure(failed.message);
  route();
});
