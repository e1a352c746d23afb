// The node page: which wasm hooks ran on the node's kubelet and how they ended.
import { get, watch } from "./api.js";
import { el, setMain, section, empty, badge, fmtDuration, fmtTime, moduleLabel, link, podHref, policyHref, setLive, errorBox, recordSummary } from "./ui.js";

export async function nodeView(name) {
  document.title = `Node ${name} · wasmkube explorer`;
  const path = `nodes/${encodeURIComponent(name)}`;
  let nd;
  try {
    nd = await get(path);
  } catch (e) {
    setMain(el("h1", {}, `Node ${name}`), errorBox(e));
    setLive("closed");
    return;
  }
  const records = nd.records || [];
  const render = () => {
    const hooks = records.filter((r) => r.type === "HookRun");
    const swaps = records.filter((r) => r.type === "Swap");
    const byHook = new Map();
    for (const r of hooks) {
      const h = r.hookRun;
      const k = `${h.handler}\u0000${h.hook}`;
      const cur = byHook.get(k) || { handler: h.handler, hook: h.hook, wasm: h.wasm, counts: {}, last: null };
      cur.counts[h.outcome] = (cur.counts[h.outcome] || 0) + 1;
      cur.last = r;
      byHook.set(k, cur);
    }
    setMain(
      el("h1", {}, el("span", { class: "muted" }, "Node "), name),
      section("Hooks that ran here", byHook.size ? el("table", { class: "grid", id: "hook-summary" },
        el("thead", {}, el("tr", {}, ["handler", "hook", "module", "outcomes", "last"].map((h) => el("th", {}, h)))),
        el("tbody", {}, [...byHook.values()].map((s) => el("tr", { "data-handler": s.handler },
          el("td", {}, link(policyHref(s.handler), s.handler)), el("td", {}, s.hook), el("td", {}, moduleLabel(s.wasm)),
          el("td", {}, Object.entries(s.counts).map(([o, n]) => [badge(o), ` ${n} `])),
          el("td", { class: "muted" }, fmtTime(s.last.time), " ", s.last.hookRun.message || ""))))) : empty("No wasm probe or preStop has run on this node (in the records its kubelet holds).")),
      section("Runs", hooks.length ? el("table", { class: "grid hooks" },
        el("thead", {}, el("tr", {}, ["time", "pod", "container", "hook", "outcome", "message", "duration"].map((h) => el("th", {}, h)))),
        el("tbody", {}, hooks.slice().reverse().map((r) => {
          const h = r.hookRun;
          return el("tr", { "data-record": r.id }, el("td", { class: "num muted" }, fmtTime(r.time)), el("td", {}, link(podHref(h.pod), `${h.pod.namespace}/${h.pod.name}`)),
            el("td", {}, h.container), el("td", {}, h.hook), el("td", {}, badge(h.outcome)), el("td", {}, h.message || ""), el("td", { class: "num" }, fmtDuration(h.durationNanos)));
        }))) : empty("No runs.")),
      section("Swaps in this kubelet", swaps.length ? el("ul", { class: "plain" }, swaps.map((r) => el("li", {}, badge(r.swap.result), " ", fmtTime(r.time), " ", recordSummary(r)))) : empty("No swaps.")));
  };
  render();
  watch(path, nd.metadata && nd.metadata.resourceVersion, (r) => { records.push(r); render(); }, setLive);
}
