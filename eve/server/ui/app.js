// The dev UI's entry: a hash router over three pages, so every URL stays relative and the
// UI works wherever eve is mounted.

import { agentPage } from "./agent.js";
import { sessionPage } from "./session.js";
import { sessionsPage } from "./sessions.js";

const main = document.getElementById("main");
const connection = document.getElementById("connection");
let leave = () => {};

function setConnection(state) {
  connection.textContent = { live: "live", reconnecting: "reconnecting…", stopped: "stream stopped" }[state] || "";
  connection.classList.toggle("down", state !== "live");
}

function route() {
  leave();
  connection.textContent = "";
  const hash = location.hash || "#/";
  const session = hash.match(/^#\/session\/(.+)$/);
  if (session) {
    const id = decodeURIComponent(session[1]);
    document.title = `eve · ${id}`;
    leave = sessionPage(main, id, setConnection);
  } else if (hash === "#/agent") {
    document.title = "eve · agent";
    leave = agentPage(main);
  } else {
    document.title = "eve · sessions";
    leave = sessionsPage(main);
  }
}

window.addEventListener("hashchange", () => {
  route();
  main.focus();
});
route();
