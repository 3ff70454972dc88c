/* Agora dashboard: competitions, leaderboards, uploads, the aggregation lab and the playground.
 * Plain JavaScript, no build step; charts by the vendored Chart.js (static/vendor). Everything it
 * shows comes from the /v1 API, with the caller's own credentials: the organiser's API key (saved
 * in this browser) or the participant token received when joining a competition. */
"use strict";

const main = document.getElementById("main");
const charts = [];
const COLORS = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16", "#4a5568"];

// ---------------------------------------------------------------------------------------------
// credentials
const store = {
  get key() { return localStorage.getItem("agora.key") || ""; },
  set key(v) { v ? localStorage.setItem("agora.key", v) : localStorage.removeItem("agora.key"); },
  token(cid) { return localStorage.getItem("agora.token." + cid) || ""; },
  setToken(cid, t) { localStorage.setItem("agora.token." + cid, t); },
  dropToken(cid) { localStorage.removeItem("agora.token." + cid); },
};

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function fmt(x, d = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  const v = Number(x).toFixed(d);
  return /^-0(\.0*)?$/.test(v) ? v.slice(1) : v; // never "-0.000"
}
function fmtP(p) { if (p === null || p === undefined) return "—"; return p < 1e-3 ? Number(p).toExponential(1) : Number(p).toFixed(3); }
function when(iso) { if (!iso) return "—"; const d = new Date(iso); return d.toLocaleString(undefined, { timeZoneName: "short" }); }

async function api(path, { method = "GET", body, auth = "key", raw = false, headers = {} } = {}) {
  const h = { ...headers };
  const secret = auth === "key" ? store.key : auth && auth.startsWith("token:") ? store.token(auth.slice(6)) : "";
  if (secret) h["Authorization"] = "Bearer " + secret;
  let payload = body;
  if (body !== undefined && !(body instanceof FormData) && !raw) {
    h["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers: h, body: payload });
  let data = null;
  const ct = r.headers.get("content-type") || "";
  if (ct.includes("json")) data = await r.json(); else data = await r.text();
  return { status: r.status, ok: r.ok, data, headers: r.headers };
}

function problemText(data) {
  if (!data || typeof data !== "object") return String(data || "request failed");
  const errs = (data.errors || []).map((e) => `${e.field}: ${e.reason}`).join("; ");
  return (data.detail || data.title || "error") + (errs && !String(data.detail).includes(errs) ? ` (${errs})` : "");
}

function clearCharts() { while (charts.length) charts.pop().destroy(); }
function chart(canvas, config) { const c = new Chart(canvas, config); charts.push(c); return c; }

// ---------------------------------------------------------------------------------------------
// routing
const routes = [
  [/^#?\/?$/, viewList],
  [/^#\/playground$/, viewPlayground],
  [/^#\/c\/([\w-]+)\/lab$/, (m) => viewCompetition(m[1], "lab")],
  [/^#\/c\/([\w-]+)(?:\/(\w+))?$/, (m) => viewCompetition(m[1], m[2] || "leaderboard")],
];

// every render() takes a new number; a view whose request returns after a newer render began drops its result,
// so a slow answer never overwrites the page the user has moved on to (or re-rendered, e.g. by saving the key)
let renderSeq = 0;
function stale(seq, at) { return seq !== renderSeq || location.hash !== at; }

async function render() {
  renderSeq += 1;
  clearCharts();
  const h = location.hash || "#/";
  document.querySelectorAll("[data-nav]").forEach((a) => a.classList.toggle("active",
    (a.dataset.nav === "playground") === h.startsWith("#/playground")));
  for (const [re, fn] of routes) {
    const m = h.match(re);
    if (m) {
      try { await fn(m); } catch (e) { main.innerHTML = `<div class="card error">Something went wrong: ${esc(e.message || e)}</div>`; }
      return;
    }
  }
  main.innerHTML = `<div class="card">Unknown page. <a href="#/">Back to the competitions</a>.</div>`;
}
window.addEventListener("hashchange", render);

function initKeyForm() {
  const input = document.getElementById("apikey");
  const state = document.getElementById("keystate");
  input.value = store.key;
  state.textContent = store.key ? "saved" : "";
  document.getElementById("keyform").addEventListener("submit", (ev) => {
    ev.preventDefault();
    store.key = input.value.trim();
    state.textContent = store.key ? "saved" : "cleared";
    render();
  });
}

// ---------------------------------------------------------------------------------------------
// competitions list + create
async function viewList() {
  const at = location.hash, seq = renderSeq;
  const r = await api("/v1/competitions");
  if (stale(seq, at)) return;  // the user moved on while this page loaded: never overwrite the newer page
  if (!r.ok) { main.innerHTML = `<div class="card error">${esc(problemText(r.data))}</div>`; return; }
  const items = r.data.items;
  const rows = items.map((c) => `
    <tr data-cid="${esc(c.id)}">
      <td><a href="#/c/${esc(c.id)}">${esc(c.title)}</a>${c.role !== "visitor" ? `<span class="badge role">${esc(c.role)}</span>` : ""}</td>
      <td class="num">${c.n_classes}</td><td class="num">${c.n_items}</td>
      <td class="num">${c.n_participants}</td><td class="num">${c.n_submissions}</td>
      <td>${when(c.deadline)} <span class="badge ${c.closed ? "closed" : "open"}">${c.closed ? "closed" : "open"}</span></td>
    </tr>`).join("");
  // the list is already on screen (e.g. the key was just saved): refresh its rows only, so that whatever the user
  // has typed into the create form meanwhile is kept
  const shown = document.getElementById("createform") && document.querySelector("#complist tbody");
  if (shown) { shown.innerHTML = rows || `<tr><td colspan="6" class="muted">No competitions yet.</td></tr>`; return; }
  main.innerHTML = `
    <h1>Competitions</h1>
    <p class="muted">Each competition scores uploaded predictions by perplexity on a public part at once, keeps the
    private part hidden until the deadline, and — the point of Agora — aggregates all submissions with opinion pools,
    Rényi pools and markets, crediting each submission for what it adds.</p>
    <div class="card"><table id="complist">
      <thead><tr><th>Title</th><th class="num">K</th><th class="num">Items</th><th class="num">Participants</th><th class="num">Submissions</th><th>Deadline</th></tr></thead>
      <tbody>${rows || `<tr><td colspan="6" class="muted">No competitions yet.</td></tr>`}</tbody></table></div>
    <div class="card"><h2>Create a competition</h2>
      <p class="muted">Needs an API key with the <code>write</code> scope (top right). Labels file: one integer class per line,
      or a CSV with a header naming its columns: <code>label</code>, optionally <code>id</code> and a group column
      (e.g. <code>id,label,image</code>). The server draws the public/private split as you choose; only you can see
      and download it.</p>
      <form id="createform" class="stack">
        <label>Title <input type="text" name="title" required maxlength="200"></label>
        <label>Description <textarea name="description" rows="2"></textarea></label>
        <label>Number of classes K <input type="number" name="n_classes" min="2" max="1000" value="3" required></label>
        <label>Hidden labels of the test items <input type="file" name="labels" required></label>
        <div class="grid2">
          <label>Public fraction <input type="number" name="public_fraction" min="0.05" max="0.95" step="0.05" value="0.5"></label>
          <label>Daily cap <input type="number" name="daily_cap" min="1" value="5"></label>
          <label>Selected entries for the final ranking <input type="number" name="n_select" min="1" value="2"></label>
          <label>Deadline <input type="datetime-local" name="deadline" required></label>
          <label>Who may join <select name="join_policy"><option value="invite" selected>invitation codes only (issue them on the Invitations tab)</option><option value="open">anyone (fresh identities can probe the public score)</option></select></label>
          <label>Public/private split <select name="split"><option value="random">random</option><option value="stratified">stratified by label</option><option value="grouped">grouped by a column of the labels file</option></select></label>
          <label>Group column (for a grouped split) <input type="text" name="group_column" placeholder="e.g. image"></label>
          <label>Public score shown <select name="score_mechanism"><option value="exact">exact (probing can recover the public labels)</option><option value="ladder">Ladder (changes only on a real improvement)</option><option value="round">rounded</option></select></label>
          <label>Score step (Ladder margin / rounding) <input type="number" name="score_step" min="0.0001" step="any" value="0.01"></label>
        </div>
        <div><button type="submit" id="createbtn">Create</button> <span id="createmsg"></span></div>
      </form></div>`;
  const f = document.getElementById("createform");
  const dl = new Date(Date.now() + 14 * 864e5);
  f.deadline.value = new Date(dl.getTime() - dl.getTimezoneOffset() * 6e4).toISOString().slice(0, 16);
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const msg = document.getElementById("createmsg");
    msg.className = ""; msg.textContent = "creating…";
    let labels, ids, groups;
    const groupColumn = f.split.value === "grouped" ? f.group_column.value.trim() : "";
    try {
      if (f.split.value === "grouped" && !groupColumn) throw new Error("a grouped split needs the name of the group column");
      ({ ids, labels, groups } = parseLabels(await f.labels.files[0].text(), groupColumn));
    } catch (e) { msg.className = "error"; msg.textContent = e.message; return; }
    const body = {
      title: f.title.value, description: f.description.value, n_classes: Number(f.n_classes.value), labels,
      public_fraction: Number(f.public_fraction.value), daily_cap: Number(f.daily_cap.value), n_select: Number(f.n_select.value),
      deadline: new Date(f.deadline.value).toISOString(),
      join_policy: f.join_policy.value, score_mechanism: f.score_mechanism.value, split: f.split.value,
    };
    if (groups) body.groups = groups;
    if (f.score_mechanism.value !== "exact") body.score_step = Number(f.score_step.value);
    // the item ids go into the JSON as written (exact 64-bit integers), not through JavaScript numbers
    const json = JSON.stringify(body);
    const payload = ids ? json.slice(0, -1) + `,"item_ids":[${ids.join(",")}]}` : json;
    const r2 = await api("/v1/competitions", { method: "POST", body: payload, raw: true, headers: { "Content-Type": "application/json" } });
    if (!r2.ok) { msg.className = "error"; msg.textContent = problemText(r2.data); return; }
    location.hash = `#/c/${r2.data.id}`;
  });
}

// a labels file: one integer per line, or a CSV whose header names its columns ("label", optionally "id" and
// the group column); without a header, the last column is the label and the first (of two or more) the id
function parseLabels(text, groupColumn = "") {
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  if (!lines.length) throw new Error("the labels file is empty");
  const first = lines[0].split(",").map((v) => v.trim());
  const header = first.some((v) => Number.isNaN(Number(v)));
  const body = header ? lines.slice(1) : lines;
  if (!body.length) throw new Error("the labels file has a header and no rows");
  const width = body[0].split(",").length;
  let col = { label: width - 1, id: width > 1 ? 0 : -1, group: -1 };
  if (header) {
    const at = (name) => first.indexOf(name);
    col = { label: at("label") >= 0 ? at("label") : width - 1, id: at("id"), group: groupColumn ? at(groupColumn) : -1 };
    if (col.id < 0 && width > 1 && col.label !== 0 && !groupColumn) col.id = 0;
  }
  if (groupColumn && col.group < 0)
    throw new Error(`unknown group column "${groupColumn}": the labels file ${header ? `has the columns ${first.join(", ")}` : "has no header naming its columns"}`);
  const labels = [], ids = col.id >= 0 ? [] : null, groups = col.group >= 0 ? [] : null;
  for (const l of body) {
    const parts = l.split(",").map((v) => v.trim());
    const v = Number(parts[col.label]);
    if (!Number.isInteger(v)) throw new Error(`not an integer label: ${l.slice(0, 30)}`);
    labels.push(v);
    if (ids) {
      const id = parts[col.id];
      if (!/^-?\d{1,19}$/.test(id)) throw new Error(`not an integer item id: ${id.slice(0, 30)}`);
      ids.push(id);  // kept as text: ids above 2^53 would be rounded by a JavaScript number
    }
    if (groups) groups.push(parts[col.group] ?? "");
  }
  return { ids, labels, groups };
}

// ---------------------------------------------------------------------------------------------
// one competition
function authFor(cid) { return store.token(cid) ? "token:" + cid : "key"; }

async function viewCompetition(cid, tab) {
  const at = location.hash, seq = renderSeq;
  const r = await api(`/v1/competitions/${cid}`, { auth: authFor(cid) });
  if (stale(seq, at)) return;  // a newer page was asked for while this one loaded
  if (r.status === 401 && store.token(cid)) { store.dropToken(cid); return viewCompetition(cid, tab); }
  if (!r.ok) { main.innerHTML = `<div class="card error">${esc(problemText(r.data))}</div>`; return; }
  const c = r.data;
  // the organiser view needs the key even when this browser also holds a participant token
  let org = c.role === "organiser";
  if (!org && store.key) {
    const r2 = await api(`/v1/competitions/${cid}`, { auth: "key" });
    if (stale(seq, at)) return;
    org = r2.ok && r2.data.role === "organiser";
  }
  const tabs = [["leaderboard", "Leaderboard"], ["submit", "Join & submit"], ["mine", "My submissions"], ["data", "Data"]];
  if (org) tabs.push(["invitations", "Invitations"]);
  if (org || c.closed) tabs.push(["lab", "Aggregation lab"]);
  main.innerHTML = `
    <p><a href="#/">← competitions</a></p>
    <h1 id="comptitle">${esc(c.title)} <span class="badge ${c.closed ? "closed" : "open"}">${c.closed ? "closed" : "open"}</span>
      ${org ? `<span class="badge role">organiser</span>` : c.me ? `<span class="badge role">you are ${esc(c.me.name)}</span>` : ""}</h1>
    <p>${esc(c.description)}</p>
    <div class="kpi">
      <div><span class="muted">classes</span><b>${c.n_classes}</b></div>
      <div><span class="muted">test items</span><b>${c.n_items}</b></div>
      <div><span class="muted">public items</span><b>${c.n_public}</b></div>
      <div><span class="muted">participants</span><b>${c.n_participants}</b></div>
      <div><span class="muted">submissions</span><b>${c.n_submissions}</b></div>
      <div><span class="muted">daily cap</span><b>${c.daily_cap}</b></div>
      <div><span class="muted">public score</span><b>${c.score_mechanism === "exact" ? "exact" : `${esc(c.score_mechanism)} (step ${c.score_step})`}</b></div>
      <div><span class="muted">joining</span><b>${c.join_policy === "invite" ? "by invitation" : "open"}</b></div>
      <div><span class="muted">split</span><b>${esc(SPLIT_NAMES[c.split] || c.split || "random")}</b></div>
      <div><span class="muted">deadline</span><b style="font-size:1rem">${when(c.deadline)}</b></div>
    </div>
    <nav class="tabs">${tabs.map(([t, l]) => `<a href="#/c/${cid}/${t}" class="${t === tab ? "active" : ""}" data-tab="${t}">${l}</a>`).join("")}</nav>
    <section id="tab"></section>`;
  const el = document.getElementById("tab");
  if (tab === "leaderboard") return tabLeaderboard(c, el, org);
  if (tab === "submit") return tabSubmit(c, el);
  if (tab === "mine") return tabMine(c, el, org);
  if (tab === "data") return tabData(c, el, org);
  if (tab === "invitations" && org) return tabInvitations(c, el);
  if (tab === "lab") return tabLab(c, el, org);
}

async function tabLeaderboard(c, el, org) {
  const r = await api(`/v1/competitions/${c.id}/leaderboard`, { auth: org ? "key" : authFor(c.id) });
  if (!r.ok) { el.innerHTML = `<div class="card error">${esc(problemText(r.data))}</div>`; return; }
  const lb = r.data;
  const me = c.me ? c.me.participant_id : null;
  const rows = lb.rows.map((x) => `<tr class="${x.participant_id === me ? "mine" : ""}">
      <td class="num">${x.rank}</td><td>${esc(x.participant)}</td><td class="num">${fmt(x.score)}</td>
      <td class="num">${x.entries}</td><td>${when(x.last_submission)}</td></tr>`).join("");
  const aggs = lb.aggregates || [];
  const best = aggs.find((a) => a.method === "best_single");
  const key = lb.private_revealed ? "perplexity_mean" : "public_perplexity";
  const aggRows = aggs.map((a) => {
    const v = a[key];
    const beats = best && a.method !== "best_single" && v < best[key] * (1 - 1e-6);
    return `<tr class="${a.method === "best_single" ? "best" : "agg"}"><td>${esc(a.label)}</td>
      <td class="num">${fmt(a.public_perplexity)}</td>
      ${lb.private_revealed ? `<td class="num">${fmt(a.perplexity_mean)} ± ${fmt(a.perplexity_std)}</td>` : ""}
      <td>${a.method === "best_single" ? esc((a.params || {}).participant || "") : beats ? `<span class="good">beats the best single entry</span>` : `<span class="muted">does not beat it</span>`}</td></tr>`;
  }).join("");
  el.innerHTML = `
    <div class="card"><h2>${lb.which === "private" ? "Final (private) leaderboard" : "Public leaderboard"}</h2>
      <p class="muted">${lb.which === "private" ? "Scored on the hidden part with each participant's selected submissions." :
        "Perplexity on the public part (lower is better); the private part stays hidden until the deadline."}</p>
      <table id="leaderboard"><thead><tr><th class="num">Rank</th><th>Participant</th><th class="num">Perplexity</th><th class="num">Entries</th><th>Last submission</th></tr></thead>
      <tbody>${rows || `<tr><td colspan="5" class="muted">No submissions yet.</td></tr>`}</tbody></table></div>
    <div class="card"><h2>Aggregates of all submissions</h2>
      ${aggs.length ? `<p class="muted">Fitted on the public (validation) part${lb.private_revealed ? "; private column: mean ± std over 10 private subsets (Table 2.3)" : "; their private scores appear after the deadline"}.</p>
      <table id="aggregates"><thead><tr><th>Method</th><th class="num">Public (fit on it)</th>${lb.private_revealed ? `<th class="num">Private</th>` : ""}<th></th></tr></thead><tbody>${aggRows}</tbody></table>`
      : lb.aggregation_running ? `<p class="muted">An aggregation is running; its rows appear here when it finishes.</p>`
      : `<p class="muted">The organiser has not run the aggregation yet.</p>`}</div>`;
}

async function tabSubmit(c, el) {
  const tok = store.token(c.id);
  if (!tok) {
    el.innerHTML = c.closed ? `<div class="card">The competition is closed.</div>` : `
      <div class="card"><h2>Join</h2><p class="muted">Pick a name; you receive a participant token, kept in this browser.</p>
      <form id="joinform" class="stack"><label>Name <input type="text" name="name" required maxlength="100"></label>
      ${c.join_policy === "invite" ? `<label>Invitation code <input type="text" name="invitation" required maxlength="100"></label>` : ""}
      <div><button type="submit" id="joinbtn">Join</button> <span id="joinmsg"></span></div></form></div>`;
    const f = document.getElementById("joinform");
    if (f) f.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const r = await api(`/v1/competitions/${c.id}/participants`, { method: "POST", body: f.invitation ? { name: f.name.value, invitation: f.invitation.value } : { name: f.name.value }, auth: null });
      const msg = document.getElementById("joinmsg");
      if (!r.ok) { msg.className = "error"; msg.textContent = problemText(r.data); return; }
      store.setToken(c.id, r.data.token);
      await viewCompetition(c.id, "submit");
      const note = document.createElement("div");
      note.className = "card";
      note.innerHTML = `<b>Joined as ${esc(r.data.name)}.</b> Your participant token (shown once; saved in this browser):<div class="token" id="newtoken">${esc(r.data.token)}</div>`;
      document.getElementById("tab").prepend(note);
    });
    return;
  }
  el.innerHTML = `
    <div class="card"><h2>Upload a submission</h2>
      <p class="muted">One row per test item: the item id, then ${c.n_classes} log-probabilities (unnormalised rows are
      normalised by the server). CSV with a header <code>id,c0,…</code>, a <code>.npy</code> array (n, K+1) whose first
      column is the id, or a <code>.npz</code> with <code>ids</code> and <code>log_probs</code>.
      <a href="/v1/competitions/${c.id}/items?format=csv">Download the id template</a>.</p>
      <form id="uploadform" class="stack">
        <label>File <input type="file" name="file" required></label>
        <label>Rows hold <select name="kind"><option value="log_probs">log-probabilities</option><option value="probs">probabilities</option></select></label>
        <label>Description <input type="text" name="description" maxlength="500"></label>
        <div><button type="submit" id="uploadbtn" ${c.closed ? "disabled" : ""}>Upload</button></div>
      </form>
      <div id="uploadresult" style="margin-top:.8rem"></div></div>`;
  document.getElementById("uploadform").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const fd = new FormData();
    fd.append("file", f.file.files[0]);
    fd.append("kind", f.kind.value);
    fd.append("description", f.description.value);
    const out = document.getElementById("uploadresult");
    out.innerHTML = `<span class="muted">uploading and scoring…</span>`;
    const r = await api(`/v1/competitions/${c.id}/submissions`, { method: "POST", body: fd, auth: "token:" + c.id });
    if (r.ok) {
      const warn = (r.data.warnings || []).map((w) => `<li class="warn">${esc(w.reason)}</li>`).join("");
      out.innerHTML = `<div class="report ok" id="uploadok"><b>Accepted.</b> Public perplexity <b>${fmt(r.data.public_perplexity)}</b>
        (log loss ${fmt(r.data.public_log_loss)}). The private score stays hidden until the deadline.${warn ? `<ul>${warn}</ul>` : ""}</div>`;
    } else if (r.data && r.data.report) {
      const errs = r.data.report.errors.map((e) => `<li><b>${esc(e.field)}</b>: ${esc(e.reason)}${e.items ? ` — e.g. item ${e.items.map(esc).join(", ")}` : ""}</li>`).join("");
      out.innerHTML = `<div class="report" id="uploaderror"><b>Rejected; nothing was stored.</b><ul>${errs}</ul></div>`;
    } else {
      out.innerHTML = `<div class="report" id="uploaderror"><b>Rejected.</b> ${esc(problemText(r.data))}</div>`;
    }
  });
}

async function tabMine(c, el, org) {
  const useKey = org && !store.token(c.id);
  const r = await api(`/v1/competitions/${c.id}/submissions`, { auth: useKey ? "key" : "token:" + c.id });
  if (!r.ok) { el.innerHTML = `<div class="card">${r.status === 401 ? "Join the competition to see your submissions." : esc(problemText(r.data))}</div>`; return; }
  const items = r.data.items;
  const priv = items.length && "private_perplexity" in items[0];
  el.innerHTML = `<div class="card"><h2>${useKey ? "All submissions (organiser)" : "My submissions"}</h2>
    ${useKey ? "" : `<p class="muted">Select up to ${c.n_select} for the final ranking (otherwise your best public ones count).</p>`}
    <table id="mysubs"><thead><tr><th>When</th>${useKey ? "<th>Participant</th>" : ""}<th>Description</th><th class="num">Public</th>${priv ? `<th class="num">Private</th>` : ""}<th>Selected</th></tr></thead><tbody>
    ${items.map((s) => `<tr><td>${when(s.created_at)}</td>${useKey ? `<td>${esc(s.participant)}</td>` : ""}<td>${esc(s.description || s.filename)}</td>
      <td class="num">${fmt(s.public_perplexity)}</td>${priv ? `<td class="num">${fmt(s.private_perplexity)}</td>` : ""}
      <td>${useKey ? (s.selected ? "yes" : "") : `<input type="checkbox" data-sid="${esc(s.id)}" ${s.selected ? "checked" : ""} ${c.closed ? "disabled" : ""}>`}</td></tr>`).join("")
      || `<tr><td colspan="6" class="muted">Nothing yet.</td></tr>`}</tbody></table><p id="selmsg"></p></div>`;
  el.querySelectorAll("input[data-sid]").forEach((cb) => cb.addEventListener("change", async () => {
    const r2 = await api(`/v1/competitions/${c.id}/submissions/${cb.dataset.sid}/selection`, { method: "POST", body: { selected: cb.checked }, auth: "token:" + c.id });
    const msg = document.getElementById("selmsg");
    if (!r2.ok) { cb.checked = !cb.checked; msg.className = "error"; msg.textContent = problemText(r2.data); } else { msg.className = "muted"; msg.textContent = "saved"; }
  }));
}

const SPLIT_NAMES = { random: "random", stratified: "stratified by label", grouped: "grouped" };

function tabData(c, el, org) {
  const files = (c.extra && c.extra.files) || [];
  el.innerHTML = `<div class="card"><h2>Data</h2><ul>
    <li><a href="/v1/competitions/${c.id}/items?format=csv">Submission template</a> (the ${c.n_items} test item ids, CSV)</li>
    ${files.map((f) => `<li><a href="/v1/competitions/${c.id}/files/${encodeURIComponent(f)}">${esc(f)}</a></li>`).join("")}
    </ul>${c.extra && c.extra.task ? `<p class="muted">Task: ${esc(c.extra.task)}</p>` : ""}</div>
    ${org ? `<div class="card" id="splitcard"><h2>The public/private split</h2>
      <p>${c.n_public} of ${c.n_items} items are public, drawn <b id="splitkind">${esc(SPLIT_NAMES[c.split] || c.split)}</b>; the others are private.
      Only you see which: <button id="splitdl">Download the split (CSV: id, part)</button></p>
      ${c.n_submissions === 0 && !c.closed ? `<form id="splitform" class="stack"><p class="muted">Until the first submission you may draw it again
        (a grouped split needs one group per item: create the competition from a labels file with a group column).</p>
        <div class="grid2"><label>Split <select name="split"><option value="random">random</option><option value="stratified">stratified by label</option></select></label>
        <label>Public fraction <input type="number" name="public_fraction" min="0.05" max="0.95" step="0.05" value="${c.public_fraction}"></label></div>
        <div><button type="submit" id="splitbtn">Draw again</button> <span id="splitmsg"></span></div></form>` : ""}</div>` : ""}`;
  if (!org) return;
  document.getElementById("splitdl").addEventListener("click", async () => {
    const r = await fetch(`/v1/competitions/${c.id}/split?format=csv`, { headers: { Authorization: "Bearer " + store.key } });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(await r.blob());
    a.download = `${c.id}-split.csv`;
    document.body.appendChild(a); a.click(); a.remove();
  });
  const f = document.getElementById("splitform");
  if (f) f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const msg = document.getElementById("splitmsg");
    const r = await api(`/v1/competitions/${c.id}/split`, { method: "PUT", body: { split: f.split.value, public_fraction: Number(f.public_fraction.value) } });
    if (!r.ok) { msg.className = "error"; msg.textContent = problemText(r.data); return; }
    msg.className = "good"; msg.textContent = `drawn: ${r.data.n_public} public items, ${SPLIT_NAMES[r.data.split]}`;
    document.getElementById("splitkind").textContent = SPLIT_NAMES[r.data.split];
  });
}

// ---------------------------------------------------------------------------------------------
// invitations (organiser)
async function tabInvitations(c, el) {
  el.innerHTML = `<div class="card"><h2>Issue invitations</h2>
      <p class="muted">${c.join_policy === "invite" ? "Only holders of a code may join." : "This competition is open: anyone may join, codes are not needed."}
      Each code admits one participant and is shown only once: send each to one person.</p>
      <form id="inviteform" class="stack"><div class="grid2">
        <label>How many codes <input type="number" name="n" min="1" max="1000" value="1" required></label>
        <label>Note (who they are for) <input type="text" name="note" maxlength="200"></label></div>
        <div><button type="submit" id="invitebtn">Issue</button> <span id="invitemsg"></span></div></form>
      <div id="newcodes"></div></div>
    <div class="card"><h2>Invitations</h2><div id="invitelist"><p class="muted">Loading…</p></div></div>`;
  const f = document.getElementById("inviteform");
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const msg = document.getElementById("invitemsg");
    const r = await api(`/v1/competitions/${c.id}/invitations`, { method: "POST", body: { n: Number(f.n.value), note: f.note.value } });
    if (!r.ok) { msg.className = "error"; msg.textContent = problemText(r.data); return; }
    msg.className = ""; msg.textContent = "";
    document.getElementById("newcodes").innerHTML = `<p class="good">New codes (copy them now: they are not shown again):</p>
      <ul id="codes">${r.data.items.map((x) => `<li><code>${esc(x.code)}</code>${x.note ? ` <span class="muted">${esc(x.note)}</span>` : ""}</li>`).join("")}</ul>`;
    listInvitations(c);
  });
  await listInvitations(c);
}

async function listInvitations(c) {
  const box = document.getElementById("invitelist");
  const r = await api(`/v1/competitions/${c.id}/invitations`);
  if (!box.isConnected) return;
  if (!r.ok) { box.innerHTML = `<p class="error">${esc(problemText(r.data))}</p>`; return; }
  const items = r.data.items;
  const used = items.filter((x) => x.used).length;
  box.innerHTML = items.length ? `<p class="muted">${items.length} issued, ${used} used, ${items.length - used} unused.</p>
    <table id="invitations"><thead><tr><th>Issued</th><th>Note</th><th>Status</th><th></th></tr></thead><tbody>
    ${items.map((x) => `<tr data-id="${esc(x.id)}"><td>${when(x.created_at)}</td><td>${esc(x.note)}</td>
      <td>${x.used ? `used by <b>${esc(x.participant || x.participant_id)}</b> on ${when(x.used_at)}` : `<span class="muted">unused</span>`}</td>
      <td>${x.used ? "" : `<button class="revoke" data-id="${esc(x.id)}">Revoke</button>`}</td></tr>`).join("")}</tbody></table>`
    : `<p class="muted">No invitations yet.</p>`;
  box.querySelectorAll("button.revoke").forEach((b) => b.addEventListener("click", async () => {
    b.disabled = true;
    const d = await api(`/v1/competitions/${c.id}/invitations/${b.dataset.id}`, { method: "DELETE" });
    if (!d.ok) { b.disabled = false; b.insertAdjacentHTML("afterend", ` <span class="error">${esc(problemText(d.data))}</span>`); return; }
    listInvitations(c);
  }));
}

// ---------------------------------------------------------------------------------------------
// aggregation lab
async function tabLab(c, el, org) {
  el.innerHTML = `
    ${org ? `<div class="card"><h2>Aggregate the submissions</h2>
      <p class="muted">Fits top-k average, power BMA, linear, log and Rényi pools (γ sweep) and a market when available on the
      public (validation) part, then scores them on the private part split in 10 subsets (Table 2.3).</p>
      <label class="muted">Rényi sweep, η = 1/γ: <input type="text" id="etas" value="1.5, 3.02, 6.08, 12.2, 24.7, 49.7, 100" size="40"></label>
      <span class="muted">or log-spaced from <input type="number" id="etamin" value="1.5" min="1" step="any" style="width:5em">
      to <input type="number" id="etamax" value="100" min="1" step="any" style="width:5em">,
      <input type="number" id="etan" value="7" min="2" max="20" style="width:4em"> points <button type="button" id="etafill">fill</button></span>
      <button id="runagg">Run aggregation</button>
      <div id="jobbox" style="display:none"><div class="progress"><div id="jobbar"></div></div><span id="jobtext" class="muted"></span>
      <div id="jobstage" class="muted"></div></div></div>` : ""}
    <div id="labresult"><p class="muted">Loading the latest aggregation…</p></div>
    ${org ? `<div class="card" id="submap"><h3>Submission map</h3><p class="muted">Loading…</p></div>` : ""}`;
  if (org) document.getElementById("runagg").addEventListener("click", () => runAggregation(c));
  if (org) document.getElementById("etafill").addEventListener("click", () => {
    const lo = Number(document.getElementById("etamin").value), hi = Number(document.getElementById("etamax").value);
    const n = Math.round(Number(document.getElementById("etan").value));
    if (!(lo >= 1 && hi > lo && n >= 2)) return;
    document.getElementById("etas").value = [...Array(n).keys()].map((i) => Number((lo * (hi / lo) ** (i / (n - 1))).toPrecision(3))).join(", ");
  });
  if (org) showSubmissionMap(c);
  await showAggregation(c, org);
}

// the submission map: a sparse Gaussian graphical model over the submissions' public log-loss residuals
async function showSubmissionMap(c) {
  const box = document.getElementById("submap");
  const r = await api(`/v1/competitions/${c.id}/submission-map`);
  const head = `<h3>Submission map</h3><p class="muted">Which submissions err on the same public items: edges are partial
    correlations of their log-loss residuals (graphical lasso), colours the families they form.</p>`;
  if (!r.ok) { box.innerHTML = head + `<p class="muted">${esc(problemText(r.data))}</p>`; return; }
  const m = r.data, n = m.nodes.length, R = 120, W = 2 * R + 60;
  const family = new Array(n).fill(0);
  m.families.forEach((f, k) => f.forEach((i) => { family[i] = k; }));
  const colour = (i) => m.families[family[i]].length > 1 ? COLORS[family[i] % COLORS.length] : "#a0aec0";
  const xy = m.nodes.map((_, i) => [W / 2 + R * Math.cos((2 * Math.PI * i) / n), W / 2 + R * Math.sin((2 * Math.PI * i) / n)]);
  const edges = m.edges.map((e) => {
    const [a, b] = e.pair;
    return `<line class="edge" x1="${xy[a][0]}" y1="${xy[a][1]}" x2="${xy[b][0]}" y2="${xy[b][1]}" stroke="${e.weight > 0 ? "#2d3748" : "#e53e3e"}"
      stroke-width="${(0.5 + 8 * Math.abs(e.weight)).toFixed(2)}" opacity="0.6"><title>${e.weight.toFixed(3)}</title></line>`;
  }).join("");
  const nodes = m.nodes.map((v, i) => `<g class="node"><circle cx="${xy[i][0]}" cy="${xy[i][1]}" r="9" fill="${colour(i)}"><title>${esc(v.participant)} · ${esc(v.submission_id)}</title></circle>
    <text x="${xy[i][0]}" y="${xy[i][1] + 4}" text-anchor="middle" font-size="9" fill="#fff">${i + 1}</text></g>`).join("");
  // the log-pool weight of each node, from the latest finished aggregation (when it used the submission)
  const latest = await api(`/v1/competitions/${c.id}/aggregations/latest`);
  const credit = latest.ok && latest.data.result && latest.data.result.credit ? latest.data.result.credit : [];
  const weight = Object.fromEntries(credit.map((x) => [x.submission_id, x.weight_log]));
  const weights = `<table id="submapnodes"><thead><tr><th>#</th><th>Participant</th><th>Family</th><th class="num">Log-pool weight</th></tr></thead><tbody>
    ${m.nodes.map((v, i) => `<tr><td>${i + 1}</td><td>${esc(v.participant)}</td><td><span style="color:${colour(i)}">●</span> ${family[i] + 1}</td>
    <td class="num">${fmt(weight[v.submission_id])}</td></tr>`).join("")}</tbody></table>`;
  const rows = m.edges.map((e) => `<tr><td>${e.pair[0] + 1} · ${esc(m.nodes[e.pair[0]].participant)}</td><td>${e.pair[1] + 1} · ${esc(m.nodes[e.pair[1]].participant)}</td>
    <td class="num">${fmt(e.weight)}</td></tr>`).join("");
  if (!box.isConnected) return;
  const nfam = m.families.filter((f) => f.length > 1).length;
  box.innerHTML = head + `<div class="grid2"><svg id="submapsvg" viewBox="0 0 ${W} ${W}" width="${W}" height="${W}">${edges}${nodes}</svg>
    <table id="submapedges"><thead><tr><th>Submission</th><th>Submission</th><th class="num">Partial correlation</th></tr></thead><tbody>${rows}</tbody></table></div>${weights}
    <p class="muted">${n} submissions, ${nfam} ${nfam === 1 ? "family" : "families"} of near-copies, λ = ${fmt(m.lam, 4)} on ${m.n_items} public items.</p>`;
}

async function runAggregation(c) {
  const btn = document.getElementById("runagg");
  btn.disabled = true;
  const etas = document.getElementById("etas").value.split(",").map((v) => Number(v.trim())).filter((v) => v >= 1);
  const r = await api(`/v1/competitions/${c.id}/aggregations`, { method: "POST", body: etas.length ? { etas } : {} });
  const box = document.getElementById("jobbox"), bar = document.getElementById("jobbar"), txt = document.getElementById("jobtext");
  box.style.display = "block";
  if (!r.ok) { txt.className = "error"; txt.textContent = problemText(r.data); btn.disabled = false; return; }
  const job = r.headers.get("Location"), run = `/v1/competitions/${c.id}/aggregations/${r.data.id}`;
  const stage = document.getElementById("jobstage");
  for (;;) {
    const [j, a] = await Promise.all([api(job), api(run)]);
    if (!j.ok) { txt.textContent = problemText(j.data); break; }
    bar.style.width = `${j.data.percent}%`;
    txt.textContent = `${j.data.state} · ${j.data.percent.toFixed(0)}%` + (j.data.eta_seconds ? ` · about ${Math.ceil(j.data.eta_seconds)} s left` : "");
    if (a.ok && a.data.stage) stage.textContent = `now: ${a.data.stage}`;
    if (["succeeded", "failed", "cancelled"].includes(j.data.state)) {
      if (j.data.state !== "succeeded") txt.className = "error", txt.textContent += j.data.error ? ` — ${j.data.error.detail}` : "";
      break;
    }
    await new Promise((res) => setTimeout(res, 400));
  }
  btn.disabled = false;
  clearCharts();
  await showAggregation(c, true);
  await showSubmissionMap(c);  // the new run's weights beside the map
}

async function showAggregation(c, org) {
  const out = document.getElementById("labresult");
  const r = await api(`/v1/competitions/${c.id}/aggregations/latest`, { auth: org ? "key" : authFor(c.id) });
  if (r.status === 404) { out.innerHTML = `<div class="card muted">No aggregation yet.</div>`; return; }
  if (!r.ok) { out.innerHTML = `<div class="card error">${esc(problemText(r.data))}</div>`; return; }
  const a = r.data;
  if (a.state === "queued" || a.state === "running") {
    // follow the run's job (its progress is mirrored on the aggregation resource)
    out.innerHTML = `<div class="card"><h3>Aggregation ${esc(a.state)}…</h3><div class="progress"><div id="runbar" style="width:${(100 * (a.progress || 0)).toFixed(0)}%"></div></div>
      <span id="runtext" class="muted">${(100 * (a.progress || 0)).toFixed(0)}%${a.eta_seconds ? ` · about ${Math.ceil(a.eta_seconds)} s left` : ""}</span>
      <div id="runstage" class="muted">${a.stage ? `now: ${esc(a.stage)}` : ""}</div></div>`;
    await new Promise((res) => setTimeout(res, 1500));
    if (document.getElementById("labresult") === out) return showAggregation(c, org);
    return;
  }
  if (a.state !== "succeeded" || !a.result) {
    out.innerHTML = `<div class="card">Latest run: <b>${esc(a.state)}</b>${a.error ? ` — ${esc(a.error.detail)}` : ""}</div>`;
    return;
  }
  const res = a.result;
  if (!res.credit) { out.innerHTML = `<div class="card muted">The detailed results are visible to the organiser until the deadline.</div>`; return; }
  const rows = res.rows;
  const lin = rows.find((x) => x.method === "linear");
  const best = rows.find((x) => x.method === "best_single");
  const table = `<table id="table23"><thead><tr><th>Method</th><th>Chosen</th><th class="num">Public (fit)</th><th class="num">Private: mean ± std over subsets</th>
      <th class="num">Δ log perplexity vs linear</th><th class="num">p (one-sided)</th><th class="num">Fit (s)</th></tr></thead><tbody>
    ${rows.map((x) => x.error ? `<tr><td>${esc(x.label)}</td><td colspan="6" class="muted">${esc(x.error)}</td></tr>` : `
      <tr class="${x.method === "best_single" ? "best" : "agg"}"><td>${esc(x.label)}</td><td class="muted">${esc(paramText(x))}</td>
      <td class="num">${fmt(x.public_perplexity)}</td><td class="num">${fmt(x.perplexity_mean)} ± ${fmt(x.perplexity_std)}</td>
      <td class="num">${x.method === "linear" ? "baseline" : x.diff_mean === null || x.diff_mean === undefined ? "—" : `${fmt(x.diff_mean)} ± ${fmt(x.diff_std)}`}</td>
      <td class="num">${x.method === "linear" ? "" : fmtP(x.p_value)}</td><td class="num">${fmt(x.seconds, 2)}</td></tr>`).join("")}</tbody></table>`;
  const winners = rows.filter((x) => !x.error && x.method !== "best_single" && best && x.perplexity_mean < best.perplexity_mean * (1 - 1e-6));
  const verdict = best ? (winners.length
    ? `<p class="good" id="verdict">${winners.length} aggregate(s) beat the best single entry (${fmt(best.perplexity_mean)}) on the private part: ${winners.map((w) => esc(w.label)).join(", ")}.</p>`
    : `<p class="bad" id="verdict">No aggregate beats the best single entry (${fmt(best.perplexity_mean)}) on the private part.</p>`) : "";
  out.innerHTML = `
    <div class="card"><h2>Table 2.3 — ${res.n_agents} submissions, ${res.n_validation} validation and ${res.n_private} private items</h2>
      ${verdict}${table}<p class="muted">Private (table): mean ± std of the perplexity over ${res.n_subsets} private subsets; the γ sweep chart
      plots the perplexity on the whole private part. Δ: paired
      difference in log perplexity from the linear pool; p: one-sided paired t-test that the method is better than the linear pool.</p></div>
    <div class="grid2">
      <div class="card"><h3>Rényi γ sweep (Fig. 2.5a)</h3><div class="chartbox"><canvas id="sweepchart"></canvas></div></div>
      <div class="card"><h3>Learnt weights over ranked submissions (Fig. 2.6)</h3><div class="chartbox"><canvas id="weightchart"></canvas></div></div>
      <div class="card"><h3>Leave-one-out gain (private perplexity without − with)</h3><div class="chartbox"><canvas id="loochart"></canvas></div>
        <p class="muted">${res.loo_mode === "refit" ? "The log pool is refitted without each submission." : esc(res.loo_mode || "not computed")}</p></div>
      <div class="card"><h3>Market wealth over epochs</h3>${res.market && res.market.wealth_history ? `<div class="chartbox"><canvas id="wealthchart"></canvas></div>` : `<p class="muted">No market in this run (the isoelastic market appears when the markets package provides it).</p>`}</div>
    </div>
    <div class="card"><h3>Credit per submission</h3><table id="credit"><thead><tr><th>#</th><th>Participant</th><th>Description</th><th class="num">Public</th>
      <th class="num">Log-pool weight</th><th class="num">Rényi weight</th><th class="num">LOO gain</th><th class="num">Market wealth</th></tr></thead><tbody>
      ${res.credit.map((x, i) => `<tr><td>${i + 1}</td><td>${esc(x.participant)}</td><td>${esc(x.description)}</td><td class="num">${fmt(x.public_perplexity)}</td>
      <td class="num">${fmt(x.weight_log)}</td><td class="num">${fmt(x.weight_renyi)}</td><td class="num">${fmt(x.loo_gain, 4)}</td><td class="num">${fmt(x.market_wealth)}</td></tr>`).join("")}</tbody></table></div>`;
  drawSweep(res, rows);
  drawWeights(res);
  drawLoo(res);
  if (res.market && res.market.wealth_history) drawWealth(res.market.wealth_history, res.credit);
}

function paramText(x) {
  const p = x.params || {};
  if (x.method === "best_single") return p.participant ? `${p.participant}: ${p.description || ""}` : "";
  return Object.entries(p).filter(([k]) => ["k", "alpha", "gamma", "eta"].includes(k)).map(([k, v]) => `${k}=${Number(v).toPrecision(3)}`).join(", ");
}

function drawSweep(res, rows) {
  const s = res.gamma_sweep || [];
  const canvas = document.getElementById("sweepchart");
  if (!s.length) { canvas.parentElement.innerHTML = `<p class="muted">No Rényi sweep in this run.</p>`; return; }
  const hline = (label, v, color) => ({ label, data: s.map((p) => ({ x: p.eta, y: v })), borderColor: color, borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5 });
  const ds = [
    { label: "Rényi, whole private part", data: s.map((p) => ({ x: p.eta, y: p.private_perplexity })), borderColor: COLORS[0], backgroundColor: COLORS[0] },
    { label: "Rényi, public (fit)", data: s.map((p) => ({ x: p.eta, y: p.public_perplexity })), borderColor: COLORS[1], backgroundColor: COLORS[1] },
  ];
  const find = (m) => rows.find((x) => x.method === m && !x.error);
  for (const [m, col] of [["best_single", "#718096"], ["log", COLORS[2]], ["topk", COLORS[3]], ["power_bma", COLORS[4]]]) {
    const r = find(m); if (r) ds.push(hline(`${r.label} (whole private part)`, r.private_perplexity, col));
  }
  chart(canvas, { type: "line", data: { datasets: ds }, options: { maintainAspectRatio: false, animation: false, parsing: true,
    scales: { x: { type: "logarithmic", title: { display: true, text: "η = 1/γ (η = 1: linear pool)" } }, y: { title: { display: true, text: "perplexity" } } },
    plugins: { legend: { labels: { boxWidth: 12 } } } } });
}

function drawWeights(res) {
  const cr = res.credit;
  const labels = cr.map((x, i) => `${i + 1}. ${x.participant}`); // labelled by submission
  const ds = [];
  if (cr.some((x) => x.weight_log !== undefined)) ds.push({ label: "log pool", data: cr.map((x) => x.weight_log ?? 0), backgroundColor: COLORS[2] });
  if (cr.some((x) => x.weight_renyi !== undefined)) ds.push({ label: "Rényi pool (chosen γ)", data: cr.map((x) => x.weight_renyi ?? 0), backgroundColor: COLORS[0] });
  if (cr.some((x) => x.weight_linear !== undefined)) ds.push({ label: "linear pool", data: cr.map((x) => x.weight_linear ?? 0), backgroundColor: COLORS[1] });
  const canvas = document.getElementById("weightchart");
  if (!ds.length) { canvas.parentElement.innerHTML = `<p class="muted">No learnt weights in this run.</p>`; return; }
  // the log pool's credible intervals (weight posterior), drawn as whiskers over its bars
  const bands = cr.map((x) => x.weight_log_interval || null);
  const hasBands = ds[0].label === "log pool" && bands.some(Boolean);
  const whiskers = { id: "weightBands", afterDatasetsDraw(ch) {
    if (!hasBands) return;
    const y = ch.scales.y, g = ch.ctx;
    let n = 0;
    g.save(); g.strokeStyle = "#1a202c"; g.lineWidth = 1.5;
    ch.getDatasetMeta(0).data.forEach((bar, j) => {
      const b = bands[j]; if (!b) return;
      const lo = y.getPixelForValue(b[0]), hi = y.getPixelForValue(b[1]), w = Math.max(3, bar.width / 4);
      g.beginPath(); g.moveTo(bar.x, lo); g.lineTo(bar.x, hi);
      g.moveTo(bar.x - w, lo); g.lineTo(bar.x + w, lo); g.moveTo(bar.x - w, hi); g.lineTo(bar.x + w, hi); g.stroke(); n++;
    });
    g.restore(); ch.canvas.dataset.bands = String(n);
  } };
  const top = hasBands ? Math.max(...bands.filter(Boolean).map((b) => b[1])) : undefined;
  chart(canvas, { type: "bar", data: { labels, datasets: ds }, plugins: [whiskers], options: { maintainAspectRatio: false, animation: false,
    scales: { x: { title: { display: true, text: "submission, ranked by public perplexity" } }, y: { suggestedMax: top, title: { display: true, text: "weight" } } },
    plugins: { tooltip: { callbacks: { title: (it) => { const x = cr[it[0].dataIndex]; return `${x.participant}: ${x.description}`; },
      afterLabel: (it) => it.datasetIndex === 0 && hasBands && bands[it.dataIndex] ? `95% credible interval ${fmt(bands[it.dataIndex][0])}–${fmt(bands[it.dataIndex][1])}` : "" } } } } });
  if (res.weight_bands) canvas.parentElement.insertAdjacentHTML("afterend", `<p class="muted" id="weightbands">${hasBands ? "Whiskers: " : "Credible bands "}${esc(res.weight_bands)}.</p>`);
}

function drawLoo(res) {
  const cr = res.credit;
  const canvas = document.getElementById("loochart");
  if (!cr.some((x) => x.loo_gain !== undefined)) { canvas.parentElement.innerHTML = `<p class="muted">Not computed in this run.</p>`; return; }
  chart(canvas, { type: "bar", data: { labels: cr.map((x, i) => `${i + 1}. ${x.participant}`), datasets: [{ label: "perplexity gain", data: cr.map((x) => x.loo_gain ?? 0),
    backgroundColor: cr.map((x) => (x.loo_gain ?? 0) >= 0 ? COLORS[2] : "#e53e3e") }] },
    options: { maintainAspectRatio: false, animation: false, plugins: { legend: { display: false } },
      scales: { x: { title: { display: true, text: "submission, ranked by public perplexity" } } } } });
}

function drawWealth(hist, credit) {
  // hist: epochs x agents
  const n = hist[0].length;
  const top = [...Array(n).keys()].sort((i, j) => hist[hist.length - 1][j] - hist[hist.length - 1][i]).slice(0, 8);
  chart(document.getElementById("wealthchart"), { type: "line", data: { labels: hist.map((_, e) => String(e)),
    datasets: top.map((a, i) => ({ label: credit[a] ? `${credit[a].participant} #${a + 1}` : `#${a + 1}`, data: hist.map((w) => w[a]), borderColor: COLORS[i % COLORS.length], pointRadius: 0 })) },
    options: { maintainAspectRatio: false, animation: false, scales: { x: { title: { display: true, text: "epoch" } }, y: { title: { display: true, text: "wealth" } } } } });
}

// ---------------------------------------------------------------------------------------------
// playground
const EXAMPLE = `[[0.70, 0.20, 0.10],
 [0.50, 0.30, 0.20],
 [0.10, 0.30, 0.60]]`;

function viewPlayground() {
  main.innerHTML = `
    <h1>Playground</h1>
    <p class="muted">Paste (or upload as CSV) the predictions of several agents for one item — one row per agent, one column per
    class — and see the pools side by side (<code>POST /v1/aggregate</code>, nothing stored). With γ close to 1 the Rényi pool is the
    linear pool, close to 0 the log pool (seed 000, Fig. 2.7).</p>
    <div class="grid2">
      <div class="card"><form id="playform" class="stack">
        <label>Predictions (rows: agents, columns: classes) <textarea name="preds" rows="7">${EXAMPLE}</textarea></label>
        <label>…or a CSV file <input type="file" name="file" accept=".csv,.txt"></label>
        <label>Rows hold <select name="kind"><option value="probs">probabilities</option><option value="log_probs">log-probabilities</option></select></label>
        <label>Weights (comma-separated, blank = uniform) <input type="text" name="weights"></label>
        <label>Rényi γ <input type="number" name="gamma" value="0.5" min="0.001" max="1" step="0.05"></label>
        <div><button type="submit" id="poolbtn">Pool</button> <span id="playmsg"></span></div>
      </form></div>
      <div class="card"><h3>Distributions</h3><div class="chartbox"><canvas id="playchart"></canvas></div></div>
    </div>
    <div class="card" id="playtable"></div>`;
  const f = document.getElementById("playform");
  f.file.addEventListener("change", async () => {
    const t = await f.file.files[0].text();
    const rows = t.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).filter((l) => !Number.isNaN(Number(l.split(",")[0])));
    f.preds.value = "[" + rows.map((l) => "[" + l.split(",").map(Number).join(", ") + "]").join(",\n ") + "]";
  });
  f.addEventListener("submit", async (ev) => { ev.preventDefault(); await pool(f); });
  pool(f);
}

async function pool(f) {
  const msg = document.getElementById("playmsg");
  msg.className = ""; msg.textContent = "";
  let P;
  try { P = JSON.parse(f.preds.value); } catch (e) { msg.className = "error"; msg.textContent = "not valid JSON: " + e.message; return; }
  if (!Array.isArray(P) || !Array.isArray(P[0])) { msg.className = "error"; msg.textContent = "expected a list of rows"; return; }
  const weights = f.weights.value.trim() ? f.weights.value.split(",").map(Number) : null;
  const gamma = Number(f.gamma.value);
  const methods = [["average", "simple average", {}], ["linear", "linear pool", weights ? { weights } : {}],
    ["log", "log pool", weights ? { weights } : {}], ["renyi", `Rényi γ=${gamma}`, { gamma, ...(weights ? { weights } : {}) }]];
  const results = [];
  for (const [m, label, params] of methods) {
    const r = await api("/v1/aggregate", { method: "POST", body: { method: m, kind: f.kind.value, output: "probs", predictions: [P], params } });
    if (!r.ok) { results.push({ label, error: problemText(r.data) }); continue; }
    results.push({ label, p: r.data.aggregate[0] });
  }
  const K = P[0].length;
  const agentsP = P.map((row) => f.kind.value === "probs" ? row : softmax(row));
  clearCharts();
  const ds = agentsP.map((row, i) => ({ label: `agent ${i + 1}`, data: row, borderColor: "#a0aec0", backgroundColor: "#a0aec0", borderDash: [4, 3], pointRadius: 2, borderWidth: 1 }));
  results.filter((r) => r.p).forEach((r, i) => ds.push({ label: r.label, data: r.p, borderColor: COLORS[i], backgroundColor: COLORS[i], borderWidth: 2.5, pointRadius: 3 }));
  chart(document.getElementById("playchart"), { type: "line", data: { labels: [...Array(K).keys()].map((k) => `class ${k}`), datasets: ds },
    options: { maintainAspectRatio: false, animation: false, scales: { y: { min: 0, title: { display: true, text: "probability" } } } } });
  document.getElementById("playtable").innerHTML = `<table id="pooltable"><thead><tr><th>Pool</th>${[...Array(K).keys()].map((k) => `<th class="num">class ${k}</th>`).join("")}</tr></thead><tbody>
    ${results.map((r) => `<tr><td>${esc(r.label)}</td>${r.p ? r.p.map((v) => `<td class="num">${fmt(v, 4)}</td>`).join("") : `<td colspan="${K}" class="error">${esc(r.error)}</td>`}</tr>`).join("")}</tbody></table>`;
}

function softmax(row) { const m = Math.max(...row); const e = row.map((v) => Math.exp(v - m)); const s = e.reduce((a, b) => a + b, 0); return e.map((v) => v / s); }

initKeyForm();
render();
