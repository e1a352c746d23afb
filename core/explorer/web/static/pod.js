// The pod page: why the pod landed where it did (or was refused), attempt by attempt.
import { get, watch } from "./api.js";
import {
  el, setMain, section, empty, badge, legend, fmtDuration, fmtTime, moduleLabel, link,
  requestHref, policyHref, nodeHref, setLive, errorBox, recordSummary, recordVerdict, TYPE_LABEL, verdictClass,
} from "./ui.js";

// heat is the background of a score cell: a single-hue blue ramp, readable by people
// who cannot tell red from green, with dark text on light and light text on dark.
export function heat(norm) {
  const v = Math.max(0, Math.min(100, Number(norm) || 0)) / 100;
  const light = 96 - v * 58;
  return { background: `hsl(217 80% ${light}%)`, color: light < 60 ? "#fff" : "#0b1d3a" };
}

const VERDICT_ORDER = { Pass: 0, Skip: 1, NotRun: 2, Unschedulable: 3, UnschedulableAndUnresolvable: 4, Error: 5 };

function attemptsOf(records) { return records.filter((r) => r.type === "SchedulingAttempt"); }

// why says in one sentence why the attempt ended as it did.
export function why(a) {
  const rows = a.matrix || [];
  if (a.result === "Scheduled") {
    const chosen = rows.find((r) => r.chosen) || rows.find((r) => r.node === a.node);
    const others = rows.filter((r) => !r.chosen && r.node !== a.node && (r.scores || []).length);
    const runner = others.sort((x, y) => y.final - x.final)[0];
    const parts = [];
    if (chosen && a.feasible === 1) {
      parts.push(`${a.node} was the only node that passed Filter (final score ${chosen.final})`);
    } else if (chosen) {
      const contrib = (a.scorePlugins || []).map((p, i) => [p.name, (chosen.scores || [])[i]]).filter(([, s]) => s && s.weighted)
        .sort((x, y) => y[1].weighted - x[1].weighted).map(([n, s]) => `${n} ${s.weighted}`);
      const tied = others.filter((r) => r.final === chosen.final);
      const sum = contrib.length ? " (" + contrib.join(" + ") + ")" : "";
      if (tied.length) {
        // a tie: the scheduler picks one of the best nodes at random, as upstream's does
        const names = tied.map((r) => r.node);
        const list = names.length > 3 ? `${names.slice(0, 3).join(", ")} and ${names.length - 3} more` : names.join(", ");
        parts.push(`${a.node} tied with ${list} for the highest final score, ${chosen.final}${sum}; the scheduler picks one of the tied nodes at random`);
        const below = others.filter((r) => r.final < chosen.final)[0];
        if (below) parts.push(`ahead of ${below.node} with ${below.final}`);
      } else {
        parts.push(`${a.node} had the highest final score, ${chosen.final}${sum}`);
        if (runner) parts.push(`ahead of ${runner.node} with ${runner.final}`);
      }
    } else {
      parts.push(`scheduled on ${a.node}`);
    }
    const rejected = rows.filter((r) => (r.filter || []).some((f) => f.verdict !== "Pass" && f.verdict !== "Skip" && f.verdict !== "NotRun"));
    if (rejected.length) parts.push(`${rejected.length} node${rejected.length > 1 ? "s" : ""} filtered out`);
    return parts.join(", ") + ".";
  }
  if (a.preFilter) return `PreFilter plugin ${a.preFilter.plugin} refused the pod: ${a.preFilter.reason || a.preFilter.verdict}.`;
  return a.message || a.result;
}

// rejecters counts, per filter plugin, the nodes it rejected.
function rejecters(a) {
  const out = new Map();
  (a.matrix || []).forEach((r) => (r.filter || []).forEach((f, i) => {
    if (f.verdict === "Unschedulable" || f.verdict === "UnschedulableAndUnresolvable" || f.verdict === "Error") {
      const name = (a.filterPlugins[i] || {}).name || `#${i}`;
      out.set(name, (out.get(name) || 0) + 1);
    }
  }));
  return out;
}

// decisive tells the filter plugins worth a column: a wasm plugin, or one that did not
// pass some node. The others (built-ins that passed or skipped every node) share one
// column unless the viewer asks for all.
export function decisive(a) {
  return (a.filterPlugins || []).map((p, i) => !!p.wasm || (a.matrix || []).some((r) => {
    const v = ((r.filter || [])[i] || {}).verdict;
    return v && v !== "Pass" && v !== "Skip" && v !== "NotRun";
  }));
}

// decisiveScores tells the score plugins worth a column: a wasm plugin, or one whose
// weighted score differs between the nodes that passed Filter. The others add the same
// to every node, so they cannot have decided, and share one column.
export function decisiveScores(a) {
  const scored = (a.matrix || []).filter((r) => (r.scores || []).length);
  return (a.scorePlugins || []).map((p, i) => !!p.wasm || new Set(scored.map((r) => (r.scores[i] || {}).weighted)).size > 1);
}

// columns of the matrix: node, final, the score plugins, the filter plugins. Final comes
// first because it is the answer; the plugins that decided nothing share one column
// each for Score and Filter unless the viewer asks for every plugin.
function columns(a, all) {
  const cols = [{ key: "node", label: "Node", kind: "node", value: (r) => r.node }];
  cols.push({ key: "final", label: "Final", kind: "final", value: (r) => ((r.scores || []).length ? r.final : -1) });
  const ks = decisiveScores(a);
  (a.scorePlugins || []).forEach((p, i) => {
    if (!all && !ks[i]) return;
    cols.push({ key: `s${i}`, label: p.name, plugin: p, kind: "score", index: i, value: (r) => ((r.scores || [])[i] || { weighted: -1 }).weighted });
  });
  const srest = ks.map((k, i) => (k ? -1 : i)).filter((i) => i >= 0);
  if (!all && srest.length) {
    cols.push({ key: "srest", label: `${srest.length} equal scores`, kind: "scores", rest: srest,
      names: srest.map((i) => a.scorePlugins[i].name),
      value: (r) => ((r.scores || []).length ? srest.reduce((sum, i) => sum + (r.scores[i] || { weighted: 0 }).weighted, 0) : -1) });
  }
  const kf = decisive(a);
  (a.filterPlugins || []).forEach((p, i) => {
    if (!all && !kf[i]) return;
    cols.push({ key: `f${i}`, label: p.name, plugin: p, kind: "filter", index: i, value: (r) => VERDICT_ORDER[((r.filter || [])[i] || {}).verdict] ?? 9 });
  });
  const frest = kf.map((k, i) => (k ? -1 : i)).filter((i) => i >= 0);
  if (!all && frest.length) {
    cols.push({ key: "frest", label: `${frest.length} other filters`, kind: "filters", rest: frest,
      names: frest.map((i) => a.filterPlugins[i].name),
      value: (r) => Math.max(...frest.map((i) => VERDICT_ORDER[((r.filter || [])[i] || {}).verdict] ?? 9)) });
  }
  return cols;
}

function headerSub(c) {
  switch (c.kind) {
    case "filter": return ["filter ", moduleLabel(c.plugin.wasm)];
    case "score": return [`score ×${c.plugin.weight || 1} `, moduleLabel(c.plugin.wasm)];
    case "final": return "sum of weighted";
    case "scores": return "same on every node";
    case "filters": return "passed or skipped every node";
  }
  return "";
}

function cellFor(c, r, maxFinal) {
  const passed = (r.scores || []).length > 0;
  switch (c.kind) {
    case "node":
      return el("th", { scope: "row", class: "node-cell" },
        r.chosen ? el("span", { class: "chosen-mark", title: "chosen node" }, "★ ") : null,
        link(nodeHref(r.node), r.node),
        r.chosen ? el("span", { class: "chosen-label" }, " chosen") : null);
    case "final":
      return el("td", { class: "final num", "data-final": passed ? r.final : null },
        passed ? [el("span", { class: "bar", style: { width: `${Math.round(100 * (r.final || 0) / maxFinal)}%` } }), el("span", { class: "fv" }, r.final)]
          : r.rejected ? el("span", { class: "muted", title: r.rejected.reason || "" }, `removed by ${r.rejected.plugin}${r.rejected.reason ? ": " + r.rejected.reason : ""}`)
            : el("span", { class: "muted" }, "filtered out"));
    case "score": {
      const s = (r.scores || [])[c.index];
      if (!s) return el("td", { class: "score none", "data-plugin": c.plugin.name, title: "not scored: the node did not pass Filter" }, "—");
      const w = c.plugin.weight || 1;
      return el("td", {
        class: "score num", "data-plugin": c.plugin.name, "data-raw": s.raw, "data-normalized": s.normalized, "data-weighted": s.weighted,
        style: heat(s.normalized), title: `raw ${s.raw} → normalized ${s.normalized} → ×${w} = ${s.weighted}`,
      }, el("span", { class: "w" }, s.weighted), el("span", { class: "raw" }, `raw ${s.raw}`));
    }
    case "scores": {
      if (!passed) return el("td", { class: "score none" }, "—");
      return el("td", { class: "score num rest", title: c.names.join(", ") }, el("span", { class: "w" }, c.value(r)), el("span", { class: "raw" }, `${c.rest.length} plugins`));
    }
    case "filter": {
      const f = (r.filter || [])[c.index] || { verdict: "NotRun" };
      return el("td", { class: `filter v-${verdictClass(f.verdict)}`, "data-plugin": c.plugin.name, "data-verdict": f.verdict, title: f.reason || f.verdict },
        badge(f.verdict, f.reason), f.reason ? el("div", { class: "reason" }, f.reason) : null);
    }
    case "filters": {
      const vs = c.rest.map((i) => ((r.filter || [])[i] || { verdict: "NotRun" }).verdict);
      const pass = vs.filter((v) => v === "Pass").length, skip = vs.filter((v) => v === "Skip").length;
      const all = pass + skip === vs.length;
      return el("td", { class: "filter rest", "data-verdict": all ? "Pass" : "NotRun", title: c.names.join(", ") },
        all ? [badge("Pass"), el("div", { class: "reason muted" }, `${pass} passed${skip ? `, ${skip} skipped` : ""}`)] : badge("NotRun"));
    }
  }
  return el("td");
}

function matrixTable(a, sort, onSort, all) {
  const cols = columns(a, all);
  const rows = (a.matrix || []).slice();
  if (sort.key) {
    const col = cols.find((c) => c.key === sort.key);
    if (col) {
      rows.sort((x, y) => {
        const vx = col.value(x), vy = col.value(y);
        const c = typeof vx === "string" ? vx.localeCompare(vy) : vx - vy;
        return sort.dir * c || x.node.localeCompare(y.node);
      });
    }
  }
  const maxFinal = Math.max(1, ...rows.map((r) => r.final || 0));
  const head = el("tr", {}, cols.map((c) => {
    const active = sort.key === c.key;
    const arrow = active ? (sort.dir > 0 ? " ▲" : " ▼") : "";
    return el("th", {
      class: `sortable col-${c.kind}${active ? " sorted" : ""}`, "data-col": c.key, "data-plugin": c.plugin ? c.plugin.name : null, scope: "col",
      "aria-sort": active ? (sort.dir > 0 ? "ascending" : "descending") : "none", title: c.names ? c.names.join(", ") : null,
      onclick: () => onSort(c.key),
    }, el("button", { type: "button", class: "th-btn" }, c.label, arrow), el("div", { class: "th-sub" }, headerSub(c)));
  }));
  const body = rows.map((r) => {
    const passed = (r.scores || []).length > 0;
    return el("tr", { class: `row${r.chosen ? " chosen" : ""}${passed ? "" : " rejected"}`, "data-node": r.node, "aria-selected": r.chosen ? "true" : null },
      cols.map((c) => cellFor(c, r, maxFinal)));
  });
  return el("div", { class: "scroll" }, el("table", { class: "grid matrix", id: "matrix" }, el("thead", {}, head), el("tbody", {}, body)));
}

// heatMap is scores over nodes at a glance: a row per score plugin plus the final sum,
// a column per node that passed Filter, the chosen node outlined.
function heatMap(a, all) {
  const rows = (a.matrix || []).filter((r) => (r.scores || []).length);
  if (!rows.length || !(a.scorePlugins || []).length) return null;
  const keep = decisiveScores(a);
  const maxFinal = Math.max(1, ...rows.map((r) => r.final || 0));
  const line = (label, cell) => el("div", { class: "hm-row" }, el("div", { class: "hm-label" }, label), rows.map(cell));
  return el("div", { class: "heatmap", id: "heatmap", style: { "--cols": rows.length } },
    el("div", { class: "hm-row hm-head" }, el("div", { class: "hm-label" }), rows.map((r) => el("div", { class: `hm-node${r.chosen ? " chosen" : ""}`, title: r.node }, r.node))),
    (a.scorePlugins || []).map((p, i) => (!all && !keep[i] ? null : line(p.name, (r) => {
      const s = r.scores[i] || { normalized: 0, weighted: 0 };
      return el("div", { class: `hm-cell${r.chosen ? " chosen" : ""}`, style: heat(s.normalized), title: `${r.node} · ${p.name}: normalized ${s.normalized}, weighted ${s.weighted}` }, s.normalized);
    }))),
    line("final", (r) => el("div", { class: `hm-cell final${r.chosen ? " chosen" : ""}`, style: heat(100 * (r.final || 0) / maxFinal), title: `${r.node}: final ${r.final}` }, r.final)));
}

// diff compares two attempts node by node, and their plugins (a swap between them shows
// as a changed module digest).
export function diffAttempts(a, b) {
  const nodes = new Map();
  for (const [side, att] of [["a", a], ["b", b]]) {
    for (const r of att.matrix || []) {
      const cur = nodes.get(r.node) || { node: r.node };
      const failing = (r.filter || []).map((f, i) => [att.filterPlugins[i], f]).find(([, f]) => f.verdict !== "Pass" && f.verdict !== "Skip" && f.verdict !== "NotRun");
      cur[side] = { verdict: failing ? `${failing[1].verdict} (${(failing[0] || {}).name})` : (r.scores || []).length ? "Pass" : "NotRun", final: (r.scores || []).length ? r.final : null, chosen: !!r.chosen };
      nodes.set(r.node, cur);
    }
  }
  const plugins = [];
  const byName = (ps) => new Map((ps || []).map((p) => [p.name, p]));
  for (const kind of ["filterPlugins", "scorePlugins"]) {
    const pa = byName(a[kind]), pb = byName(b[kind]);
    for (const name of new Set([...pa.keys(), ...pb.keys()])) {
      const x = pa.get(name), y = pb.get(name);
      const dx = x ? (x.wasm ? x.wasm.digest || x.wasm.path : "native") : "absent";
      const dy = y ? (y.wasm ? y.wasm.digest || y.wasm.path : "native") : "absent";
      const wx = x && x.weight, wy = y && y.weight;
      if (dx !== dy || wx !== wy) plugins.push({ kind: kind === "filterPlugins" ? "Filter" : "Score", name, from: dx + (wx ? ` ×${wx}` : ""), to: dy + (wy ? ` ×${wy}` : "") });
    }
  }
  return { nodes: [...nodes.values()].sort((x, y) => x.node.localeCompare(y.node)), plugins };
}

function diffView(recs, ia, ib, onPick) {
  const atts = recs.map((r) => r.schedulingAttempt);
  const pick = (which, cur) => el("select", { "aria-label": `attempt ${which}`, id: `diff-${which}`, onchange: (e) => onPick(which, Number(e.target.value)) },
    atts.map((a, i) => el("option", { value: i, selected: i === cur }, `attempt ${a.attempt} · ${fmtTime(recs[i].time)} · ${a.result}${a.node ? " " + a.node : ""}`)));
  const a = atts[ia], b = atts[ib];
  const d = diffAttempts(a, b);
  const rows = d.nodes.map((n) => {
    const va = n.a || { verdict: "absent", final: null }, vb = n.b || { verdict: "absent", final: null };
    const changed = va.verdict !== vb.verdict || va.final !== vb.final || va.chosen !== vb.chosen;
    const delta = va.final !== null && vb.final !== null ? vb.final - va.final : null;
    return el("tr", { class: changed ? "changed" : "", "data-node": n.node },
      el("th", { scope: "row" }, n.node),
      el("td", {}, va.verdict, va.chosen ? " ★" : ""), el("td", {}, vb.verdict, vb.chosen ? " ★" : ""),
      el("td", { class: "num" }, va.final ?? "—"), el("td", { class: "num" }, vb.final ?? "—"),
      el("td", { class: `num ${delta > 0 ? "up" : delta < 0 ? "down" : ""}` }, delta === null ? "" : (delta > 0 ? "+" : "") + delta));
  });
  return el("div", { class: "diff", id: "diff" },
    el("div", { class: "diff-pick" }, el("label", {}, "from ", pick("a", ia)), el("label", {}, " to ", pick("b", ib))),
    d.plugins.length ? el("ul", { class: "plugin-changes" }, d.plugins.map((p) => el("li", {}, el("strong", {}, `${p.kind} ${p.name}`), `: ${p.from} → ${p.to}`))) : el("p", { class: "muted" }, "Same plugins, modules and weights in both attempts."),
    el("table", { class: "grid diff-table" },
      el("thead", {}, el("tr", {}, ["node", "verdict (from)", "verdict (to)", "final (from)", "final (to)", "Δ"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)));
}

function timeline(records, selectedId, onSelect) {
  if (!records.length) return empty("No decisions about this pod are held.");
  return el("ol", { class: "timeline", id: "timeline" }, records.map((r) => {
    const v = recordVerdict(r);
    const label = r.type === "SchedulingAttempt" ? `attempt ${r.schedulingAttempt.attempt}` : r.type === "Swap" ? `swap ${r.swap.policy || "config"}` : TYPE_LABEL[r.type];
    const body = [el("span", { class: "ev-time" }, fmtTime(r.time)), el("span", { class: "ev-kind" }, label), badge(v), el("span", { class: "ev-text" }, recordSummary(r))];
    let inner;
    if (r.type === "SchedulingAttempt") inner = el("button", { type: "button", class: "ev-btn", onclick: () => onSelect(r.id) }, body);
    else if (r.type === "AdmissionRequest") inner = link(requestHref(r), body, { class: "ev-btn" });
    else if (r.type === "Swap" && r.swap.policy) inner = link(policyHref(r.swap.policy), body, { class: "ev-btn" });
    else inner = el("div", { class: "ev-btn" }, body);
    return el("li", { class: `ev t-${r.type} v-${verdictClass(v)}${r.id === selectedId ? " selected" : ""}`, "data-type": r.type, "data-record": r.id }, inner);
  }));
}

function hooksTable(hooks) {
  if (!hooks.length) return empty("No wasm probe or preStop has run for this pod on its node (or the node's records could not be read).");
  return el("table", { class: "grid hooks" },
    el("thead", {}, el("tr", {}, ["time", "container", "hook", "handler", "outcome", "message", "duration"].map((h) => el("th", {}, h)))),
    el("tbody", {}, hooks.slice().reverse().map((r) => {
      const h = r.hookRun;
      return el("tr", { "data-record": r.id }, el("td", { class: "num muted" }, fmtTime(r.time)), el("td", {}, h.container), el("td", {}, h.hook),
        el("td", {}, h.handler, " ", moduleLabel(h.wasm)), el("td", {}, badge(h.outcome)), el("td", {}, h.message || ""), el("td", { class: "num" }, fmtDuration(h.durationNanos)));
    })));
}

export async function podView(ns, name) {
  document.title = `${ns}/${name} · wasmkube explorer`;
  const path = `namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`;
  let pd;
  try {
    pd = await get(path);
  } catch (e) {
    setMain(el("h1", {}, `Pod ${ns}/${name}`), errorBox(e));
    setLive("closed");
    return;
  }
  let swaps = [], swapsRV = null, canSwaps = true;
  try {
    const l = await get("records?type=Swap");
    swaps = l.items || [];
    swapsRV = l.metadata && l.metadata.resourceVersion;
  } catch (_) { canSwaps = false; /* this user may not read swaps */ }
  const state = { records: pd.records || [], selected: null, sort: { key: "", dir: -1 }, diffA: null, diffB: null, allFilters: false };

  const render = () => {
    const attempts = attemptsOf(state.records);
    const sel = attempts.find((r) => r.id === state.selected) || attempts[attempts.length - 1];
    // Swaps that happened during the pod's life belong on its timeline.
    const first = state.records.length ? state.records[0].time : null;
    const merged = state.records.concat(swaps.filter((s) => !first || s.time >= first)).sort((x, y) => (x.time < y.time ? -1 : x.time > y.time ? 1 : 0));
    const admissions = state.records.filter((r) => r.type === "AdmissionRequest");
    const hooks = state.records.filter((r) => r.type === "HookRun");
    const a = sel && sel.schedulingAttempt;
    const node = pd.node || (a && a.node);
    const head = el("div", { class: "title-row" },
      el("h1", {}, el("span", { class: "muted" }, "Pod "), `${ns}/${name}`),
      a ? badge(a.result) : null,
      node ? el("span", { class: "on-node" }, "on ", link(nodeHref(node), node)) : el("span", { class: "on-node muted" }, "not bound"));
    const out = [head];
    if (a) {
      out.push(el("p", { class: "why", id: "why" }, why(a)));
      const rej = rejecters(a);
      if (rej.size) out.push(el("p", { class: "why-sub" }, "Rejected by: ", [...rej].map(([p, n], i) => [i ? ", " : "", el("strong", {}, p), ` (${n} node${n > 1 ? "s" : ""})`])));
    } else if (admissions.some((r) => !r.admissionRequest.allowed)) {
      const d = admissions.find((r) => !r.admissionRequest.allowed).admissionRequest;
      out.push(el("p", { class: "why bad", id: "why" }, `Refused at admission by ${d.deniedBy}: ${d.message || ""}`));
    }
    out.push(section("Timeline", timeline(merged, sel && sel.id, (id) => { state.selected = id; render(); })));
    if (a) {
      out.push(section(`Attempt ${a.attempt} · ${fmtTime(sel.time)} · profile ${a.profile}`,
        el("p", { class: "meta" }, `${a.nodes} nodes, ${a.evaluated} evaluated by Filter, ${a.feasible} feasible · cycle ${fmtDuration(a.durationNanos)}`,
          a.truncatedNodes ? ` · ${a.truncatedNodes} more nodes not kept` : ""),
        a.preFilter ? el("p", { class: "error" }, `PreFilter ${a.preFilter.plugin}: `, badge(a.preFilter.verdict), " ", a.preFilter.reason || "") : null,
        a.postFilter ? el("p", { class: "meta" }, `PostFilter${a.postFilter.plugin ? " " + a.postFilter.plugin : ""}: `, badge(a.postFilter.verdict === "Success" ? "Pass" : a.postFilter.verdict),
          a.postFilter.nominatedNode ? ` nominated ${a.postFilter.nominatedNode}` : "", a.postFilter.message ? ` — ${a.postFilter.message}` : "") : null,
        legend([["Pass", "passed Filter"], ["Unschedulable", "rejected (preemption may help)"], ["UnschedulableAndUnresolvable", "rejected for good"], ["Error", "plugin failed"], ["Skip", "nothing to check"], ["NotRun", "not evaluated"]]),
        el("div", { class: "legend scale" }, el("span", { class: "legend-title" }, "Score"), [0, 25, 50, 75, 100].map((v) => el("span", { class: "swatch", style: heat(v) }, v)),
          el("span", { class: "muted" }, "normalized 0-100; cells show the weighted score, ★ marks the chosen node")),
        matrixTable(a, state.sort, (key) => {
          state.sort = state.sort.key === key ? { key, dir: -state.sort.dir } : { key, dir: key === "node" ? 1 : -1 };
          state.selected = sel.id;
          render();
        }, state.allFilters),
        decisive(a).some((k) => !k) || decisiveScores(a).some((k) => !k) ? el("button", { type: "button", class: "toggle", id: "all-plugins", onclick: () => { state.allFilters = !state.allFilters; state.selected = sel.id; render(); } },
          state.allFilters ? "Fold the plugins that decided nothing" : "Show every plugin") : null,
        heatMap(a) ? el("h3", {}, "Scores over nodes (normalized; final as a share of the best)") : null, heatMap(a, state.allFilters),
        (a.timings || []).length ? el("details", { class: "timings" }, el("summary", {}, "Plugin timings"),
          el("table", { class: "grid" }, el("tbody", {}, a.timings.map((t) => el("tr", {}, el("td", {}, t.point), el("td", {}, t.plugin), el("td", { class: "num" }, fmtDuration(t.nanos))))))) : null));
    }
    if (attempts.length > 1) {
      const ib = state.diffB ?? attempts.indexOf(sel);
      const ia = state.diffA ?? Math.max(0, ib - 1);
      out.push(section("Compare attempts", diffView(attempts, ia, ib, (which, i) => { if (which === "a") state.diffA = i; else state.diffB = i; render(); })));
    }
    if (admissions.length) {
      out.push(section("Admission", el("ul", { class: "plain" }, admissions.map((r) => el("li", {}, badge(recordVerdict(r)), " ", link(requestHref(r), recordSummary(r)), el("span", { class: "muted" }, ` · ${fmtTime(r.time)} · ${fmtDuration(r.admissionRequest.durationNanos)}`))))));
    }
    out.push(section("Kubelet hooks", pd.kubeletError ? el("p", { class: "meta" }, `The node's records could not be read: ${pd.kubeletError}`) : null, hooksTable(hooks)));
    setMain(out);
  };
  render();
  watch(path, pd.metadata && pd.metadata.resourceVersion, (r) => {
    if (!state.records.some((x) => x.id === r.id && x.source === r.source)) state.records.push(r);
    render();
  }, setLive);
  // Swaps are not records of the pod: follow them on their own stream.
  if (canSwaps) {
    watch("records?type=Swap", swapsRV, (r) => {
      if (!swaps.some((s) => s.id === r.id)) { swaps.push(r); render(); }
    }, null);
  }
}
