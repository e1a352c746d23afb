// The admission request page: the chain in order, each policy's verdict, and the patch.
import { get } from "./api.js";
import { el, setMain, section, empty, badge, legend, fmtDuration, fmtDate, moduleLabel, link, podHref, policyHref, errorBox, setLive } from "./ui.js";

// patchLines turns a JSON Patch into before/after lines. before (the record's, one entry
// per operation) is the value each operation's path held just before this policy's
// patch (null: not set); a record without it (an older server) names the path only.
export function patchLines(patch, before) {
  const out = [];
  const show = (v) => JSON.stringify(v);
  const known = Array.isArray(before);
  const was = (i, path) => {
    if (!known) return { kind: "was", path, text: `  ${path}: (value not recorded)` };
    const v = before[i];
    return v === null || v === undefined ? { kind: "was", path, text: `  ${path}: (not set)` } : { kind: "del", path, text: `- ${path}: ${show(v)}` };
  };
  (patch || []).forEach((op, i) => {
    switch (op.op) {
      case "add":
      case "replace":
        out.push(was(i, op.path));
        out.push({ kind: "add", path: op.path, text: `+ ${op.path}: ${show(op.value)}` });
        break;
      case "remove": {
        const w = was(i, op.path);
        out.push(w.kind === "del" ? w : { kind: "del", path: op.path, text: `- ${op.path}` });
        out.push({ kind: "was-after", path: op.path, text: `  ${op.path}: (removed)` });
        break;
      }
      case "move": {
        const w = was(i, op.from);
        out.push(w, { kind: "add", path: op.path, text: `+ ${op.path}: ${w.kind === "del" ? w.text.slice(op.from.length + 4) : `(moved from ${op.from})`}` });
        break;
      }
      case "copy": {
        const w = was(i, op.from);
        out.push({ kind: "add", path: op.path, text: `+ ${op.path}: ${w.kind === "del" ? w.text.slice(op.from.length + 4) : `(copied from ${op.from})`}` });
        break;
      }
      case "test": out.push({ kind: "ctx", path: op.path, text: `  ${op.path} == ${show(op.value)}` }); break;
      default: out.push({ kind: "ctx", path: op.path, text: `  ${JSON.stringify(op)}` });
    }
  });
  return out;
}

function patchView(patch, before) {
  const lines = patchLines(patch, before);
  if (!lines.length) return null;
  const before_ = lines.filter((l) => l.kind === "was" || l.kind === "del" || l.kind === "ctx");
  const after = lines.filter((l) => l.kind === "add" || l.kind === "ctx" || l.kind === "was-after");
  const col = (title, ls) => el("div", { class: "patch-col" }, el("div", { class: "patch-title" }, title),
    el("pre", { class: "patch" }, ls.length ? ls.map((l) => el("div", { class: `pl pl-${l.kind}` }, l.text)) : el("div", { class: "muted" }, "(nothing)")));
  return el("div", { class: "patch-diff" }, col("before", before_), col("after", after));
}

// celLine says through which binding (and param) a CEL policy ran, and what its binding
// does with a failed validation.
function celLine(p) {
  if (!p.binding && !p.param && !(p.validationActions || []).length) return null;
  const parts = [];
  if (p.binding) parts.push(`binding ${p.binding}`);
  if (p.param) parts.push(`param ${p.param}`);
  if ((p.validationActions || []).length) parts.push(`validationActions ${p.validationActions.join(", ")}`);
  return el("p", { class: "muted cel", "data-binding": p.binding || "" }, parts.join(" · "));
}

function violations(p) {
  const vs = p.violations || [];
  if (!vs.length) return null;
  return el("ul", { class: "violations" }, vs.map((v) => el("li", { "data-field": v.field },
    el("code", {}, v.field), v.expression ? [" ", el("code", { class: "expr" }, v.expression)] : null, " → ", el("span", { class: "bad" }, v.message))));
}

const VERDICT_NOTE = { Warned: "validation failed; the binding only warns (no Deny)", Audited: "validation failed; the binding only audits (no Deny)" };

export function policyRow(p, i) {
  const warnings = p.warnings || [];
  const audits = Object.entries(p.auditAnnotations || {});
  return el("li", { class: `chain-item v-${p.verdict}`, "data-policy": p.name, "data-verdict": p.verdict },
    el("div", { class: "chain-head" },
      el("span", { class: "chain-n" }, String(i + 1)),
      badge(p.verdict, VERDICT_NOTE[p.verdict]),
      link(policyHref(p.name), p.name, { class: "chain-name" }),
      el("span", { class: "muted" }, ` ${p.kind} · ${p.phase}${p.mode && p.mode !== "Enforce" ? " · " + p.mode : ""} `),
      p.reinvoked ? el("span", { class: "tag pass2", title: "a plugin after it changed the object, so the mutating plugins ran a second time (reinvocation)" }, "second pass") : null,
      p.kind === "WasmPolicy" || p.wasm ? moduleLabel(p.wasm) : null,
      el("span", { class: "dur num" }, fmtDuration(p.durationNanos))),
    celLine(p),
    p.message ? el("p", { class: `msg${p.verdict === "Denied" ? " bad" : ""}`, "data-message": "" }, p.message) : null,
    VERDICT_NOTE[p.verdict] ? el("p", { class: "muted" }, VERDICT_NOTE[p.verdict]) : null,
    violations(p),
    p.skipReason ? el("p", { class: "muted" }, `skipped: ${p.skipReason}`) : null,
    p.failure ? el("p", { class: "msg bad" }, `call failed: ${p.failure} (failurePolicy ${p.failurePolicy || "?"}${p.failurePolicy === "Ignore" ? ": the request went on" : ": the request was refused"})`) : null,
    warnings.length ? el("ul", { class: "warnings" }, warnings.map((w) => el("li", {}, "⚠ ", w))) : null,
    audits.length ? el("dl", { class: "audit" }, audits.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])) : null,
    patchView(p.patch, p.before));
}

// denial is the refusal in the denying policy's own words (its message, or why its call
// failed), else the message the client saw.
function denial(q) {
  const d = denier(q);
  return (d && (d.message || d.failure)) || q.message || "no message";
}

function denier(q) {
  return (q.policies || []).slice().reverse().find((p) => p.name === q.deniedBy && (p.verdict === "Denied" || p.verdict === "Failed"));
}

// deniedHow names the denying policy's kind and binding beside its name.
function deniedHow(q) {
  const d = denier(q);
  if (!d) return "";
  return ` (${d.kind}${d.binding ? ", binding " + d.binding : ""})`;
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
      : el("p", { class: "why bad", id: "why" }, "Refused by ", el("strong", { id: "denied-by" }, q.deniedBy || "?"), deniedHow(q), `: ${denial(q)}`),
    !q.allowed && q.message && q.message !== denial(q) ? el("p", { class: "meta" }, `The client saw: ${q.message}`) : null,
    el("p", { class: "meta" }, `${gvr} · user ${q.user || "?"} · ${fmtDate(r.time)} · ${r.source || r.component}${q.dryRun ? " · dry run" : ""} · uid ${q.uid}`,
      q.kind === "Pod" && q.object.name ? [" · ", link(podHref(q.object), "the pod's page")] : null),
    section("Policies in chain order",
      legend([["Allowed", "admitted"], ["Mutated", "changed the object"], ["Denied", "refused"], ["Warned", "failed, warned only"], ["Audited", "failed, audited only"], ["Failed", "call failed"], ["Skipped", "did not apply"]]),
      (q.policies || []).length ? el("ol", { class: "chain", id: "chain" }, q.policies.map(policyRow)) : empty("No policy matched this request."),
      q.allowed ? null : el("p", { class: "muted", id: "chain-stopped" }, "The chain stops at the first refusal: the policies after it did not run and are not listed.")));
}
