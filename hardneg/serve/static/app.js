// hardneg search page: vanilla JS over the JSON API (no build step, no network dependencies).
"use strict";
const $ = (s) => document.querySelector(s);
const state = { model: null, marks: new Map(), busy: false };

function token() { const t = $("#token-input"); return t ? t.value : ""; }
function headers(json) {
  const h = {}; if (json) h["Content-Type"] = "application/json";
  if (token()) h["Authorization"] = "Bearer " + token();
  return h;
}
async function api(method, url, body) {
  const opts = { method, headers: headers(body !== undefined && !(body instanceof FormData)) };
  if (body instanceof FormData) opts.body = body; else if (body !== undefined) opts.body = JSON.stringify(body);
  const r = await fetch(url, opts);
  let data = null; try { data = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok) throw new Error((data && (typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail))) || r.statusText);
  return data;
}
function setStatus(text, err) { const s = $("#status"); s.textContent = text; s.style.color = err ? "#b42318" : ""; }
function fmtTimings(t, wall) {
  const parts = Object.entries(t || {}).map(([k, v]) => `${k.replace(/_s$/, "")} ${(v * 1000).toFixed(v < 1 ? 1 : 0)} ms`);
  if (wall !== undefined) parts.unshift(`total ${(wall * 1000).toFixed(0)} ms`);
  return parts.join(" · ");
}
function updateMarked() {
  $("#n-marked").textContent = state.marks.size;
  $("#rerank").disabled = !state.model || state.marks.size === 0 || state.busy;
}
function render(results, scoreLabel) {
  const grid = $("#grid"); grid.innerHTML = "";
  results.forEach((it, i) => {
    const li = document.createElement("li"); li.className = "card"; li.dataset.id = it.id;
    const mark = state.marks.get(it.id); if (mark) li.classList.add(mark);
    const img = document.createElement("img"); img.alt = `item ${it.id}`; img.loading = "lazy";
    img.src = `api/items/${encodeURIComponent(it.id)}/thumbnail`;
    img.onerror = () => { img.style.visibility = "hidden"; };
    const meta = document.createElement("div"); meta.className = "meta";
    const label = it.label_name || (it.label >= 0 ? String(it.label) : "");
    meta.textContent = `#${i + 1} ${it.id}${label ? " · " + label : ""} · ${scoreLabel} ${it.score === null ? "" : it.score.toFixed(3)}`;
    const btns = document.createElement("div"); btns.className = "btns";
    const mk = (cls, text, title) => {
      const b = document.createElement("button"); b.type = "button"; b.className = cls; b.textContent = text; b.title = title;
      b.setAttribute("aria-label", `${title}: ${it.id}`); b.setAttribute("aria-pressed", String(mark === cls)); return b;
    };
    const rel = mk("rel", "✓", "relevant"), notrel = mk("notrel", "✗", "not relevant"), sim = mk("sim", "similar", "query by this example");
    sim.removeAttribute("aria-pressed");
    const toggle = (cls) => {
      if (state.marks.get(it.id) === cls) state.marks.delete(it.id); else state.marks.set(it.id, cls);
      const m = state.marks.get(it.id);
      li.classList.toggle("rel", m === "rel"); li.classList.toggle("notrel", m === "notrel");
      rel.setAttribute("aria-pressed", String(m === "rel")); notrel.setAttribute("aria-pressed", String(m === "notrel"));
      updateMarked();
    };
    rel.onclick = () => toggle("rel"); notrel.onclick = () => toggle("notrel");
    sim.onclick = () => queryExample(it.id);
    btns.append(rel, notrel, sim); li.append(img, meta, btns); grid.append(li);
  });
}
async function waitJob(job) {
  while (job.status === "queued" || job.status === "running") {
    setStatus(`${job.kind}: ${job.status} (${job.done}/${job.total})…`);
    await new Promise((r) => setTimeout(r, 150));
    job = await api("GET", `api/jobs/${job.id}`);
  }
  if (job.status !== "done") throw new Error(job.error || "job failed");
  return job;
}
async function run(label, fn) {
  if (state.busy) return; state.busy = true; updateMarked();
  const t0 = performance.now();
  try { await fn((performance.now() - t0) / 1000); }
  catch (e) { setStatus(`${label}: ${e.message}`, true); }
  finally { state.busy = false; updateMarked(); }
}
function showConcept(job, label, t0) {
  const res = job.result; state.model = res.model; state.marks.clear();
  render(res.results, "score");
  const wall = (performance.now() - t0) / 1000;
  setStatus(`${label}: ${res.k} results from model “${res.model}”. Mark results ✓ / ✗, then re-rank.`);
  $("#timings").textContent = fmtTimings(res.timings, wall);
  $("#model-name").textContent = `model: ${res.model}`;
  loadModels();
}
function concept(tag) {
  return run("concept search", async () => {
    const t0 = performance.now(); setStatus(`training “${tag}”…`);
    const job = await waitJob(await api("POST", "api/concept", { tag, k: 24 }));
    showConcept(job, `concept “${tag}”`, t0);
  });
}
function rerank() {
  return run("feedback", async () => {
    const t0 = performance.now();
    const relevant_ids = [...state.marks].filter(([, m]) => m === "rel").map(([id]) => id);
    const not_relevant_ids = [...state.marks].filter(([, m]) => m === "notrel").map(([id]) => id);
    const job = await waitJob(await api("POST", `api/models/${encodeURIComponent(state.model)}/feedback`,
      { relevant_ids, not_relevant_ids, k: 24 }));
    showConcept(job, `re-ranked after ${relevant_ids.length} relevant / ${not_relevant_ids.length} not relevant`, t0);
  });
}
function showSearch(res, label, t0) {
  state.model = null; state.marks.clear();
  const scoreLabel = ($("#mode-select").selectedOptions[0] || {}).value === "hamming" ? "−dist" : "score";
  render(res.results, scoreLabel);
  setStatus(`${label}: ${res.results.length} results (${res.mode}).`);
  $("#timings").textContent = fmtTimings(res.timings, (performance.now() - t0) / 1000);
  $("#model-name").textContent = "";
}
function queryExample(id) {
  return run("query by example", async () => {
    const t0 = performance.now();
    const res = await api("POST", "api/search/example", { id, mode: $("#mode-select").value, k: 24 });
    showSearch(res, `similar to ${id}`, t0);
  });
}
function upload(file) {
  return run("image query", async () => {
    const t0 = performance.now(); const fd = new FormData();
    fd.append("file", file); fd.append("mode", $("#mode-select").value); fd.append("k", "24");
    const res = await api("POST", "api/search/upload", fd);
    showSearch(res, `similar to ${file.name}`, t0);
  });
}
function useModel(name) {
  return run("saved model", async () => {
    const t0 = performance.now();
    const res = await api("POST", `api/models/${encodeURIComponent(name)}/search`, { k: 24 });
    state.model = name; state.marks.clear(); render(res.results, "score");
    setStatus(`saved model “${name}”: ${res.results.length} results.`);
    $("#timings").textContent = fmtTimings(res.timings, (performance.now() - t0) / 1000);
    $("#model-name").textContent = `model: ${name}`;
  });
}
async function loadModels() {
  const ul = $("#models-list");
  try {
    const models = await api("GET", "api/models"); ul.innerHTML = "";
    if (!models.length) { ul.innerHTML = "<li>none yet</li>"; return; }
    for (const m of models) {
      const li = document.createElement("li"); li.dataset.name = m.name;
      const n = document.createElement("span"); n.className = "name"; n.textContent = m.name;
      const d = document.createElement("span"); d.textContent = `${m.n_positives ?? "?"} pos · ${m.feedback_rounds} feedback `;
      const use = document.createElement("button"); use.type = "button"; use.textContent = "use"; use.onclick = () => useModel(m.name);
      use.setAttribute("aria-label", `search with model ${m.name}`);
      const del = document.createElement("button"); del.type = "button"; del.textContent = "delete";
      del.setAttribute("aria-label", `delete model ${m.name}`);
      del.onclick = async () => {
        try { await api("DELETE", `api/models/${encodeURIComponent(m.name)}`); loadModels(); }
        catch (e) { setStatus(`delete: ${e.message}`, true); }
      };
      li.append(n, d, use, " ", del); ul.append(li);
    }
  } catch (e) { ul.textContent = `cannot list models: ${e.message}`; }
}
$("#search-form").addEventListener("submit", (ev) => { ev.preventDefault(); const t = $("#tag-input").value.trim(); if (t) concept(t); });
$("#rerank").addEventListener("click", rerank);
const drop = $("#drop-zone"), fileInput = $("#file-input");
fileInput.addEventListener("change", () => { if (fileInput.files.length) upload(fileInput.files[0]); fileInput.value = ""; });
drop.addEventListener("keydown", (ev) => { if ((ev.key === "Enter" || ev.key === " ") && !fileInput.disabled) { ev.preventDefault(); fileInput.click(); } });
drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (ev) => {
  ev.preventDefault(); drop.classList.remove("over");
  if (!fileInput.disabled && ev.dataTransfer.files.length) upload(ev.dataTransfer.files[0]);
});
loadModels();
