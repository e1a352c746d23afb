// Small DOM helpers shared by the views. No framework: a view is a function that builds
// its elements from the records and replaces the old ones when new records arrive.

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "style" && typeof v === "object") {
      for (const [prop, val] of Object.entries(v)) {
        if (prop.startsWith("--")) e.style.setProperty(prop, val);
        else e.style[prop] = val;
      }
    }
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// Verdicts and outcomes: each has a class (colour), a symbol (so colour is never the
// only signal) and the word itself.
const VERDICTS = {
  Pass: ["ok", "✓"], Scheduled: ["ok", "✓"], Allowed: ["ok", "✓"], Success: ["ok", "✓"], Applied: ["ok", "✓"],
  Mutated: ["mut", "✎"],
  Unschedulable: ["bad", "✗"], UnschedulableAndUnresolvable: ["bad", "⊘"], Denied: ["bad", "✗"], Failure: ["bad", "✗"],
  Error: ["err", "!"], Failed: ["err", "!"],
  Warned: ["warn", "⚠"], Audited: ["none", "◎"],
  // a policy's swaps, as its page counts them
  SwapApplied: ["ok", "✓"], SwapFailed: ["err", "!"],
  Skip: ["skip", "–"], Skipped: ["skip", "–"], NotRun: ["none", "·"],
};

export function verdictClass(v) { return (VERDICTS[v] || ["none"])[0]; }

export function badge(v, extra) {
  const [cls, sym] = VERDICTS[v] || ["none", "•"];
  const label = v === "UnschedulableAndUnresolvable" ? "Unresolvable" : v;
  return el("span", { class: `badge v-${cls}`, "data-verdict": v, title: extra || v }, el("span", { class: "sym", "aria-hidden": "true" }, sym), " ", label);
}

export function legend(items) {
  return el("div", { class: "legend", "aria-label": "legend" },
    el("span", { class: "legend-title" }, "Legend"),
    items.map(([v, text]) => el("span", { class: "legend-item" }, badge(v), " ", el("span", { class: "muted" }, text))));
}

export function fmtDuration(nanos) {
  if (nanos === undefined || nanos === null) return "";
  if (nanos < 1e3) return `${nanos} ns`;
  if (nanos < 1e6) return `${(nanos / 1e3).toFixed(nanos < 1e4 ? 1 : 0)} µs`;
  if (nanos < 1e9) return `${(nanos / 1e6).toFixed(nanos < 1e7 ? 2 : 1)} ms`;
  return `${(nanos / 1e9).toFixed(2)} s`;
}

export function fmtTime(t) {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d)) return t;
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function fmtDate(t) {
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

export function moduleLabel(m) {
  if (!m) return el("span", { class: "tag native", title: "built-in Go plugin" }, "native");
  const digest = m.digest ? m.digest.replace(/^sha256:/, "").slice(0, 12) : "";
  return el("span", { class: "tag wasm", title: [m.path, m.digest].filter(Boolean).join("\n") }, "wasm", digest ? " " + digest : "");
}

export function section(title, ...children) {
  return el("section", { class: "card" }, el("h2", {}, title), ...children);
}

export function empty(text) { return el("p", { class: "muted empty" }, text); }

export function link(href, text, attrs) { return el("a", Object.assign({ href }, attrs || {}), text); }

export function podHref(ref) { return `pods/${encodeURIComponent(ref.namespace || "default")}/${encodeURIComponent(ref.name)}`; }
export function requestHref(rec) { return `requests/${encodeURIComponent(rec.id)}`; }
export function policyHref(name) { return `policies/${encodeURIComponent(name)}`; }
export function nodeHref(name) { return `nodes/${encodeURIComponent(name)}`; }

export function setMain(...children) {
  const m = document.getElementById("main");
  m.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

export function errorBox(err) {
  const status = err && err.status;
  let hint = "";
  if (status === 401) hint = "Not authenticated: open the page through `kubectl proxy` or send a bearer token.";
  else if (status === 403) hint = "Your user may not read these records (they need get on the pod, node or policy).";
  else if (status === 404) hint = "Nothing is recorded under this name (yet, or any more: records live in a bounded ring).";
  return el("div", { class: "error", role: "alert" }, el("strong", {}, String(err && err.message || err)), hint ? el("p", {}, hint) : null);
}

export function setLive(state) {
  const e = document.getElementById("live");
  if (!e) return;
  e.dataset.state = state;
  e.textContent = { live: "● live", connecting: "connecting…", reconnecting: "reconnecting…", closed: "not live", none: "" }[state] ?? state;
  e.hidden = state === "none";
}

// recordSummary is the one-line description of a record on a timeline.
export function recordSummary(r) {
  switch (r.type) {
    case "SchedulingAttempt": {
      const a = r.schedulingAttempt;
      return a.result === "Scheduled" ? `attempt ${a.attempt}: scheduled on ${a.node}` : `attempt ${a.attempt}: ${a.result}${a.message ? " — " + a.message : ""}`;
    }
    case "AdmissionRequest": {
      const q = r.admissionRequest;
      const what = `${q.operation} ${q.resource}${q.subResource ? "/" + q.subResource : ""} ${q.object.namespace ? q.object.namespace + "/" : ""}${q.object.name}`;
      if (q.allowed) {
        const mutated = [...new Set((q.policies || []).filter((p) => p.verdict === "Mutated").map((p) => p.name))];
        const warned = [...new Set((q.policies || []).filter((p) => p.verdict === "Warned").map((p) => p.name))];
        return `${what}: allowed${mutated.length ? ", changed by " + mutated.join(", ") : ""}${warned.length ? ", warned by " + warned.join(", ") : ""}`;
      }
      return `${what}: denied by ${q.deniedBy || "?"}${q.message ? " — " + q.message : ""}`;
    }
    case "HookRun": {
      const h = r.hookRun;
      return `${h.hook} ${h.container} on ${h.node}: ${h.outcome}${h.message ? " — " + h.message : ""}`;
    }
    case "Swap": {
      const s = r.swap;
      const what = (s.changes || []).length ? ` (${s.changes.join("; ")})` : "";
      const gen = s.generation ? ` generation ${s.generation}` : "";
      // a fetch error quotes whole URLs: the line keeps its start, the policy's page has all
      const reason = s.reason && s.reason.length > 160 ? s.reason.slice(0, 160) + "…" : s.reason;
      return `swap ${s.policy || "config"}${gen} in ${r.component}, ${s.tier} tier: ${s.result}${what}${reason ? " — " + reason : ""}`;
    }
  }
  return r.type;
}

export function recordVerdict(r) {
  switch (r.type) {
    case "SchedulingAttempt": return r.schedulingAttempt.result;
    case "AdmissionRequest": return r.admissionRequest.allowed ? "Allowed" : "Denied";
    case "HookRun": return r.hookRun.outcome;
    case "Swap": return r.swap.result;
  }
  return "";
}

export const TYPE_LABEL = { SchedulingAttempt: "scheduling", AdmissionRequest: "admission", HookRun: "kubelet hook", Swap: "swap" };
