// The admission request page: the chain in order, each policy's verdict, and the patch.
import { get } from "./api.js";
import { el, setMain, section, empty, badge, legend, fmtDuration, fmtDate, moduleLabel, link, podHref, policyHref, errorBox, setLive } from "./ui.js";

// patchLines turns a JSON Patch into before/after lines: what the object had at each path
// (when the op says: test, or the old value is unknown and shown as such) and what it
// has after. The record keeps the patch, not the object, so a replaced or removed value
// is named by its path.
export function patchLines(patch) {
  const out = [];
  const show = (v) => (typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v, null, 0));
  for (const op of patch || []) {
    switch (op.op) {
      case "add":
        out.push({ kind: "was", path: op.path, text: `  ${op.path}: (not set)` });
        out.push({ kind: "add", path: op.path, text: `+ ${op.path}: ${show(op.value)}` });
        break;
      case "remove": out.push({ kind: "del", path: op.path, text: `- ${op.path}` }); break;
      case "replace":
        out.push({ kind: "del", path: op.path, text: `- ${op.path}: (previous value)` });
        out.push({ kind: "add", path: op.path, text: `+ ${op.path}: ${show(op.value)}` });
        break;
      case "move": out.push({ kind: "del", path: op.from, text: `- ${op.from}` }, { kind: "add", path: op.path, text: `+ ${op.path}: (moved from ${op.from})` }); break;
      case "copy": out.push({ kind: "add", path: op.path, text: `+ ${op.path}: (copied from ${op.from})` }); break;
      case "test": out.push({ kind: "ctx", path: op.path, text: `  ${op.path} == ${show(op.value)}` }); break;
      default: out.push({ kind: "ctx", path: op.path, text: `  ${JSON.stringify(op)}` });
    }
  }
  return out;
}

function patchView(patch) {
  const lines = patchLines(patch);
  if (!lines.length) return null;
  const before = lines.filter((l) => l.kind !== "add"), after = lines.filter((l) => l.kind !== "del" && l.kind !== "was");
  const col = (title, ls) => el("div", { class: "patch-col" }, el("div", { class: "patch-title" }, title),
    el("pre", { class: "patch" }, ls.length ? ls.map((l) => el("div", { class: `pl pl-${l.kind}` }, l.text)) : el("div", { class: "muted" }, "(nothing)")));
  return el("div", { class: "patch-diff" }, col("before", before), col("after", after));
}

export function policyRow(p, i) {
  const warnings = p.warnings || [];
  const audits = Object.entries(p.auditAnnotations || {});
  return el("li", { class: `chain-item v-${p.verdict}`, "data-policy": p.name, "data-verdict": p.verdict },
    el("div", { class: "chain-head" },
      el("span", { class: "chain-n" }, String(i + 1)),
      badge(p.verdict),
      link(policyHref(p.name), p.name, { class: "chain-name" }),
      el("span", { class: "muted" }, ` ${p.kind} · ${p.phase}${p.mode && p.mode !== "Enforce" ? " · " + p.mode : ""} `),
      p.kind === "WasmPolicy" || p.wasm ? moduleLabel(p.wasm) : null,
      el("span", { class: "dur num" }, fmtDuration(p.durationNanos))),
    p.message ? el("p", { class: `msg${p.verdict === "Denied" ? " bad" : ""}`, "data-message": "" }, p.message) : null,
    p.skipReason ? el("p", { class: "muted" }, `skipped: ${p.skipReason}`) : null,
    p.failure ? el("p", { class: "msg bad" }, `call failed: ${p.failure} (failurePolicy ${p.failurePolicy || "?"}${p.failurePolicy === "Ignore" ? ": the request went on" : ": the request was refused"})`) : null,
    warnings.length ? el("ul", { class: "warnings" }, warnings.map((w) => el("li", {}, "⚠ ", w))) : null,
    audits.length ? el("dl", { class: "audit" }, audits.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])) : null,
    patchView(p.patch));
}

export async function requestView(id) {
  document.title = `Request ${id} · wasmkube explorer`;
  setLive("none"); // a request's record never changes
  let r;
  try {
    r = await get(`records/${encodeURIComponent(id)}`);
  } catch (e) {
    setMain(el("h1", {}, `Admission request ${id}`), errorBox(e));
    return;
  }
  if (r.type !== "AdmissionRequest") {
    setMain(el("h1", {}, `Record ${id}`), el("p", {}, `This record is a ${r.type}, not an admission request.`));
    return;
  }
  const q = r.admissionRequest;
  const obj = `${q.object.namespace ? q.object.namespace + "/" : ""}${q.object.name}`;
  const gvr = `${q.group ? q.group + "/" : ""}${q.version} ${q.resource}${q.subResource ? "/" + q.subResource : ""}`;
  setMain(
    el("div", { class: "title-row" }, el("h1", {}, el("span", { class: "muted" }, `${q.operation} `), `${q.kind || q.resource} ${obj}`), badge(q.allowed ? "Allowed" : "Denied")),
    q.allowed ? el("p", { class: "why", id: "why" }, `Allowed by the whole chain in ${fmtDuration(q.durationNanos)}.`)
      : el("p", { class: "why bad", id: "why" }, "Refused by ", el("strong", { id: "denied-by" }, q.deniedBy || "?"), q.message ? `: ${q.message}` : "."),
    el("p", { class: "meta" }, `${gvr} · user ${q.user || "?"} · ${fmtDate(r.time)} · ${r.source || r.component}${q.dryRun ? " · dry run" : ""} · uid ${q.uid}`,
      q.kind === "Pod" && q.object.name ? [" · ", link(podHref(q.object), "the pod's page")] : null),
    section("Policies in chain order",
      legend([["Allowed", "admitted"], ["Mutated", "changed the object"], ["Denied", "refused"], ["Failed", "call failed"], ["Skipped", "did not apply"]]),
      (q.policies || []).length ? el("ol", { class: "chain", id: "chain" }, q.policies.map(policyRow)) : empty("No policy matched this request.")));
}
