// The home page: the newest records of every kind, live, each linking to its pod,
// request, policy or node.
import { get, watch } from "./api.js";
import { el, setMain, section, empty, badge, fmtTime, recordSummary, recordVerdict, TYPE_LABEL, link, podHref, requestHref, policyHref, nodeHref, setLive, errorBox } from "./ui.js";

const LIMIT = 200;

export function recordLink(r) {
  switch (r.type) {
    case "SchedulingAttempt": return podHref(r.schedulingAttempt.pod);
    case "AdmissionRequest": return requestHref(r);
    case "HookRun": return podHref(r.hookRun.pod);
    case "Swap": return r.swap.policy ? policyHref(r.swap.policy) : null;
  }
  return null;
}

function timelineRow(r) {
  const href = recordLink(r);
  return el("tr", { class: `rec t-${r.type}`, "data-record": r.id, "data-type": r.type },
    el("td", { class: "num muted" }, fmtTime(r.time)),
    el("td", {}, el("span", { class: `kind k-${r.type}` }, TYPE_LABEL[r.type] || r.type)),
    el("td", {}, badge(recordVerdict(r))),
    el("td", { class: "summary" }, href ? link(href, recordSummary(r)) : recordSummary(r)),
    el("td", { class: "muted" }, r.component === "kubelet" ? link(nodeHref(r.source), r.source) : `${r.component}${r.source ? " " + r.source : ""}`,
      r.admissionRequest && r.admissionRequest.user ? el("div", { class: "user" }, r.admissionRequest.user) : null));
}

export function timelineTable(records, opts) {
  opts = opts || {};
  if (!records.length) return empty(opts.emptyText || "No decisions recorded yet.");
  return el("table", { class: "grid timeline-table" },
    el("thead", {}, el("tr", {}, ["time", "kind", "verdict", "decision", "by"].map((h) => el("th", {}, h)))),
    el("tbody", {}, records.slice().reverse().map(timelineRow)));
}

// routine: an allowed admission request that no policy took part in (every policy
// skipped it: leases, statuses, bindings...). Hidden by default so that the decisions
// stand out; a checkbox shows them.
export function routine(r) {
  return r.type === "AdmissionRequest" && r.admissionRequest.allowed &&
    (r.admissionRequest.policies || []).every((p) => p.verdict === "Skipped");
}

export async function homeView() {
  const params = new URLSearchParams(location.search);
  if (params.get("pod")) {
    const v = params.get("pod");
    const [ns, name] = v.includes("/") ? v.split("/", 2) : ["default", v];
    location.replace(new URL(`pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, document.baseURI));
    return;
  }
  document.title = "Decisions · wasmkube explorer";
  let list;
  try {
    list = await get(`records?limit=${LIMIT}`);
  } catch (e) {
    setMain(errorBox(e));
    setLive("closed");
    return;
  }
  let records = list.items || [];
  let policies = [];
  try { policies = (await get("policies")).items || []; } catch (_) { /* may not list policies */ }
  const show = { SchedulingAttempt: true, AdmissionRequest: true, HookRun: true, Swap: true, routine: false };
  const shown = (r) => show[r.type] && (show.routine || !routine(r));
  const holder = el("div", { id: "timeline-holder" });
  const fill = () => holder.replaceChildren(timelineTable(records.filter(shown)));
  const box = (key, label) => el("label", { class: "filter-box" },
    el("input", { type: "checkbox", checked: show[key], "data-filter": key, onchange: (e) => { show[key] = e.target.checked; fill(); } }), " ", label);
  setMain(
    el("h1", {}, "Decisions"),
    el("p", { class: "lede" }, "Every scheduling attempt, admission request, kubelet hook run and policy swap the cluster's components hold, newest first. Open a pod to see why it landed where it did, a request to see which policy refused it."),
    policies.length ? section("Policies", el("ul", { class: "chips" }, policies.map((p) => el("li", {}, link(policyHref(p.metadata.name), p.metadata.name))))) : null,
    section("Timeline",
      el("div", { class: "filters" }, box("SchedulingAttempt", "scheduling"), box("AdmissionRequest", "admission"), box("HookRun", "kubelet hooks"), box("Swap", "swaps"),
        box("routine", "requests no policy took part in")),
      holder));
  fill();
  // New records go on top without redrawing the rest (a row under the pointer stays).
  watch("records", list.metadata && list.metadata.resourceVersion, (r) => {
    records.push(r);
    if (records.length > LIMIT) records = records.slice(-LIMIT);
    if (!shown(r)) return;
    const tbody = holder.querySelector("tbody");
    if (!tbody) { fill(); return; }
    tbody.prepend(timelineRow(r));
    while (tbody.children.length > LIMIT) tbody.lastElementChild.remove();
  }, setLive);
}
