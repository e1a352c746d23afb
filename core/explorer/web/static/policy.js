// The policy page: the policy's swaps and failures, how it decided, and its latency.
import { get, getText, watch } from "./api.js";
import { el, setMain, section, empty, badge, fmtDuration, fmtTime, setLive, errorBox } from "./ui.js";
import { timelineTable } from "./home.js";

// Histograms of a policy's call time in the Prometheus text the server exposes: the
// admission policy's calls and the scheduler plugin's executions, by policy or plugin
// label; other labels are summed.
const HISTOGRAMS = [
  ["wasmkube_admission_policy_duration_seconds", "policy", "admission calls"],
  ["scheduler_plugin_execution_duration_seconds", "plugin", "scheduler plugin runs (sampled)"],
];

function parseLabels(s) {
  const out = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let m;
  while ((m = re.exec(s))) out[m[1]] = m[2].replace(/\\"/g, '"').replace(/\\\\/g, "\\");
  return out;
}

// histogramFromMetrics returns [{title, buckets: [{le, count}]}] for name, bucket counts
// per bucket (not cumulative), empty buckets at both ends trimmed.
export function histogramFromMetrics(text, name) {
  const out = [];
  for (const [metric, label, title] of HISTOGRAMS) {
    const cum = new Map();
    for (const line of text.split("\n")) {
      if (!line.startsWith(metric + "_bucket{")) continue;
      const close = line.lastIndexOf("}");
      const labels = parseLabels(line.slice(metric.length + 8, close));
      if (labels[label] !== name) continue;
      const v = Number(line.slice(close + 1).trim().split(" ")[0]);
      const le = labels.le === "+Inf" ? Infinity : Number(labels.le);
      cum.set(le, (cum.get(le) || 0) + v);
    }
    if (!cum.size) continue;
    const les = [...cum.keys()].sort((a, b) => a - b);
    let prev = 0;
    let buckets = les.map((le) => { const c = cum.get(le) - prev; prev = cum.get(le); return { le, count: c }; });
    while (buckets.length && buckets[buckets.length - 1].count === 0) buckets.pop();
    const first = buckets.findIndex((b) => b.count > 0);
    if (first < 0) continue;
    buckets = buckets.slice(Math.max(0, first - 1));
    out.push({ title: `${title} (${metric})`, buckets });
  }
  return out;
}

// durationsOf is the policy's time per decision in the records: the fallback when the
// viewer may not read /metrics.
function durationsOf(name, records) {
  const ds = [];
  for (const r of records) {
    if (r.admissionRequest) for (const p of r.admissionRequest.policies || []) if (p.name === name && p.verdict !== "Skipped") ds.push(p.durationNanos / 1e9);
    if (r.schedulingAttempt) for (const t of r.schedulingAttempt.timings || []) if (t.plugin === name) ds.push(t.nanos / 1e9);
    if (r.hookRun && r.hookRun.handler === name) ds.push(r.hookRun.durationNanos / 1e9);
  }
  if (!ds.length) return [];
  const edges = [10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, Infinity];
  const buckets = edges.map((le) => ({ le, count: 0 }));
  for (const d of ds) buckets.find((b) => d <= b.le).count++;
  while (buckets.length && buckets[buckets.length - 1].count === 0) buckets.pop();
  const first = buckets.findIndex((b) => b.count > 0);
  return [{ title: `time per decision in the records held (${ds.length})`, buckets: buckets.slice(Math.max(0, first - 1)) }];
}

function histogram(h) {
  const max = Math.max(1, ...h.buckets.map((b) => b.count));
  return el("figure", { class: "histogram" }, el("figcaption", {}, h.title),
    el("div", { class: "bars" }, h.buckets.map((b) => el("div", { class: "hb", title: `≤ ${b.le === Infinity ? "∞" : fmtDuration(b.le * 1e9)}: ${b.count}` },
      el("span", { class: "hb-n" }, b.count || ""),
      el("span", { class: "hb-bar", style: { height: `${Math.round(100 * b.count / max)}%` } }),
      el("span", { class: "hb-le" }, b.le === Infinity ? "∞" : "≤" + fmtDuration(b.le * 1e9))))));
}

const SHOWN = 100;

// skipped: an admission request the policy did not apply to (it is in every request's
// chain, so listing those would bury its decisions).
function skipped(r, name) {
  return r.type === "AdmissionRequest" && (r.admissionRequest.policies || []).every((p) => p.name !== name || p.verdict === "Skipped");
}

export async function policyView(name) {
  document.title = `Policy ${name} · wasmkube explorer`;
  const path = `policies/${encodeURIComponent(name)}`;
  let pd;
  try {
    pd = await get(path);
  } catch (e) {
    setMain(el("h1", {}, `Policy ${name}`), errorBox(e));
    setLive("closed");
    return;
  }
  let hists = [];
  try { hists = histogramFromMetrics(await getText("metrics"), name); } catch (_) { /* no read of /metrics */ }
  const records = pd.records || [];
  const render = () => {
    const swaps = records.filter((r) => r.type === "Swap");
    const failures = records.filter((r) => (r.swap && r.swap.result === "Failed") ||
      (r.admissionRequest && (r.admissionRequest.policies || []).some((p) => p.name === name && p.verdict === "Failed")) ||
      (r.hookRun && r.hookRun.handler === name && r.hookRun.outcome === "Error"));
    const shown = hists.length ? hists : durationsOf(name, records);
    setMain(
      el("h1", {}, el("span", { class: "muted" }, "Policy "), name),
      section("Decisions", (pd.counts || []).length ? el("table", { class: "grid counts", id: "counts" },
        el("thead", {}, el("tr", {}, ["component", "verdict", "count"].map((h) => el("th", {}, h)))),
        el("tbody", {}, pd.counts.map((c) => el("tr", {}, el("td", {}, c.component), el("td", {}, badge(c.verdict)), el("td", { class: "num" }, c.count))))) : empty("No decisions in the records held.")),
      section("Latency", shown.length ? shown.map(histogram) : empty("No timings: the metrics are not readable and no record timed this policy.")),
      section("Swaps", swaps.length ? el("ol", { class: "swaps", id: "swaps" }, swaps.map((r) => el("li", { "data-record": r.id },
        badge(r.swap.result), ` ${fmtTime(r.time)} · ${r.component} ${r.source || ""} · ${r.swap.tier} tier`,
        (r.swap.changes || []).length ? el("ul", {}, r.swap.changes.map((c) => el("li", {}, c))) : null,
        r.swap.reason ? el("p", { class: "msg bad" }, r.swap.reason) : null))) : empty("No swaps held.")),
      section("Failures", failures.length ? timelineTable(failures) : empty("No failures in the records held.")),
      section("Decisions it took part in", (() => {
        const took = records.filter((r) => r.type !== "Swap" && !skipped(r, name));
        return [took.length > SHOWN ? el("p", { class: "meta" }, `The newest ${SHOWN} of ${took.length}.`) : null,
          timelineTable(took.slice(-SHOWN), { emptyText: "None held (requests it skipped are counted above, not listed)." })];
      })()));
  };
  render();
  watch(path, pd.metadata && pd.metadata.resourceVersion, (r) => { records.push(r); render(); }, setLive);
}
