// Reading explorer.wasmkube.io/v1alpha1 with the viewer's credentials (kubectl proxy adds
// them, or the browser sends an Authorization header). Every URL is relative to the page's
// <base>, which is the explorer's root: the server's root is one level up, whatever prefix
// a proxy put in front of it.

export const GROUP = "explorer.wasmkube.io/v1alpha1";

export function serverURL(path) {
  return new URL("../" + path.replace(/^\//, ""), document.baseURI);
}

export function apiURL(path) {
  return serverURL("apis/" + GROUP + "/" + path.replace(/^\//, ""));
}

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function readError(res) {
  let msg = res.statusText;
  try {
    const st = await res.json();
    if (st && st.message) msg = st.message;
  } catch (_) { /* not a Status */ }
  return new APIError(res.status, `${res.status} ${msg}`);
}

export async function get(path) {
  const res = await fetch(apiURL(path), { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!res.ok) throw await readError(res);
  return res.json();
}

export async function getText(path) {
  const res = await fetch(serverURL(path), { credentials: "same-origin" });
  if (!res.ok) throw await readError(res);
  return res.text();
}

// watch follows path?watch=true as server-sent events from since (the list's
// resourceVersion; without it the server sends what it holds first): onRecord gets each
// record. EventSource reconnects by itself and resumes after Last-Event-ID.
export function watch(path, since, onRecord, onState) {
  const u = apiURL(path);
  u.searchParams.set("watch", "true");
  if (since) u.searchParams.set("resourceVersion", since);
  const es = new EventSource(u, { withCredentials: true });
  const state = (s) => { if (onState) onState(s); };
  state("connecting");
  es.onopen = () => state("live");
  es.onerror = () => state(es.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
  // ERROR: the ring overwrote records this page had not seen (410): the page lists again.
  es.addEventListener("ERROR", () => {
    es.close();
    state("closed");
    location.reload();
  });
  es.addEventListener("ADDED", (ev) => {
    try { onRecord(JSON.parse(ev.data)); } catch (e) { console.error("explorer: bad event", e); }
  });
  return () => es.close();
}
