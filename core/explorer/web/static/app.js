// The decision explorer: one HTML shell, one view per kind of page. The server tells the
// view and its names in <body data-view data-arg0 ...>, so no client-side router is
// needed, and links are plain relative hrefs (see <base> in index.html).
import { setMain, errorBox } from "./ui.js";
import { homeView } from "./home.js";
import { podView } from "./pod.js";
import { requestView } from "./request.js";
import { policyView } from "./policy.js";
import { nodeView } from "./node.js";

const views = { home: homeView, pod: podView, request: requestView, policy: policyView, node: nodeView };

async function main() {
  const b = document.body.dataset;
  const args = [b.arg0, b.arg1].filter((a) => a !== undefined);
  const jump = document.getElementById("jump");
  jump.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = document.getElementById("jump-pod").value.trim();
    const [ns, name] = v.includes("/") ? v.split("/", 2) : ["default", v];
    if (name) location.href = new URL(`pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, document.baseURI);
  });
  const view = views[b.view];
  if (!view) {
    setMain(errorBox(new Error(`unknown view ${b.view}`)));
    return;
  }
  try {
    await view(...args);
  } catch (e) {
    console.error(e);
    setMain(errorBox(e));
  }
}

main();
