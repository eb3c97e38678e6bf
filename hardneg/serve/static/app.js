// hardneg search page: vanilla JS over the JSON API (no build step, no network dependencies).
"use strict";
const $ = (s) => document.querySelector(s);
const PAGE = 24;
// view: what the grid shows, so that Previous / Next can ask for another page of it
//   {kind: "browse"} | {kind: "example", id} | {kind: "upload", file} | {kind: "model", name} | {kind: "text", text}
const state = { model: null, marks: new Map(), busy: false, view: { kind: "browse" }, offset: 0, hasMore: false, queryUrl: null };
// concept rankings open on the new finds: the model's own training examples are left out unless asked for
function newOnly() { const box = $("#show-examples"); return !(box && box.checked); }

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
// seconds (keys ending in _s) as milliseconds; anything else (batch_size, nprobe) is a count
function fmtTimings(t, wall) {
  const parts = Object.entries(t || {}).map(([k, v]) => (k.endsWith("_s")
    ? `${k.slice(0, -2).replace(/_/g, " ")} ${(v * 1000).toFixed(v < 1 ? 1 : 0)} ms`
    : `${k.replace(/_/g, " ")} ${Number.isInteger(v) ? v : v.toFixed(2)}`));
  if (wall !== undefined) parts.unshift(`total ${(wall * 1000).toFixed(0)} ms`);
  return parts.join(" · ");
}
function selected() { return [...state.marks].filter(([, m]) => m === "rel").map(([id]) => id); }
function updateMarked() {
  $("#n-marked").textContent = state.marks.size;
  $("#rerank").disabled = !state.model || state.marks.size === 0 || state.busy;
  $("#n-selected").textContent = selected().length;
  $("#learn").disabled = selected().length === 0 || state.busy;
  $("#prev").disabled = state.offset === 0 || state.busy;
  $("#next").disabled = !state.hasMore || state.busy;
}
function showQuery(src, caption) {
  const fig = $("#query");
  if (state.queryUrl && state.queryUrl !== src) { URL.revokeObjectURL(state.queryUrl); state.queryUrl = null; }
  if (!src) { fig.hidden = true; $("#query-img").removeAttribute("src"); return; }
  if (src.startsWith("blob:")) state.queryUrl = src;
  $("#query-img").src = src; $("#query-caption").textContent = caption; fig.hidden = false;
}
function showPager(offset, n, hasMore, total) {
  state.offset = offset; state.hasMore = hasMore;
  $("#pager").hidden = offset === 0 && !hasMore;
  $("#page-info").textContent = n ? `${offset + 1}–${offset + n}${total !== undefined ? " of " + total.toLocaleString("en") : ""}` : "no more results";
}
function clearResults() {  // after an error: nothing stale stays under the message
  $("#grid").innerHTML = ""; $("#timings").textContent = ""; $("#pager").hidden = true; showQuery(null);
  state.offset = 0; state.hasMore = false;
}
function render(results, scoreLabel, offset) {
  const grid = $("#grid"); grid.innerHTML = ""; grid.classList.remove("stale");
  results.forEach((it, i) => {
    const li = document.createElement("li"); li.className = "card"; li.dataset.id = it.id;
    const mark = state.marks.get(it.id); if (mark) li.classList.add(mark);
    if (it.example) li.classList.add("example");  // one of the model's training examples, not a new find
    const img = document.createElement("img"); img.alt = `item ${it.id}`; img.loading = "lazy";
    img.src = `api/items/${encodeURIComponent(it.id)}/thumbnail`;
    img.onerror = () => { img.style.visibility = "hidden"; };
    const meta = document.createElement("div"); meta.className = "meta";
    const label = it.label_name || (it.label >= 0 ? String(it.label) : "");
    const score = it.score === null || it.score === undefined ? "" : ` · ${scoreLabel} ${it.score.toFixed(3)}`;
    meta.textContent = `#${offset + i + 1} ${it.example ? "[example] " : ""}${it.id}${label ? " · " + label : ""}${score}`;
    if (it.example) meta.title = "one of the examples the model was trained on";
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
  if (state.busy) return; state.busy = true; updateMarked(); $("#grid").classList.add("stale");
  try { await fn(); }
  catch (e) { setStatus(`${label}: ${e.message}`, true); clearResults(); }
  finally { state.busy = false; updateMarked(); $("#grid").classList.remove("stale"); }
}
function setModel(name) {
  if (state.model !== name) state.marks.clear();  // marks belong to one concept; they persist across its rounds
  state.model = name; $("#model-name").textContent = name ? `model: ${name}` : "";
}
function showConcept(job, label, t0) {
  const res = job.result; setModel(res.model); state.view = { kind: "model", name: res.model };
  showQuery(null); render(res.results, "score", res.offset); showPager(res.offset, res.results.length, res.has_more, res.total);
  const wall = (performance.now() - t0) / 1000;
  const from = res.train_split ? ` (${res.train_split} split)` : "";
  const shown = res.new_only ? `new finds only: its ${res.n_examples} training examples are left out (“show my examples” shows them)`
                             : `its ${res.n_examples} training examples are marked [example]`;
  setStatus(`${label}: ${res.k} results from model “${res.model}”, trained on ${res.n_positives} positives${from}; ` +
            `${shown}. Mark results ✓ / ✗, then re-rank.`);
  $("#timings").textContent = fmtTimings(res.timings, wall);
  loadModels();
}
function concept(tag) {
  return run("concept search", async () => {
    const t0 = performance.now(); setStatus(`training “${tag}”…`);
    const job = await waitJob(await api("POST", "api/concept", { tag, k: PAGE, new_only: newOnly() }));
    showConcept(job, `concept “${tag}”`, t0);
  });
}
function learnSelected() {
  return run("concept from examples", async () => {
    const t0 = performance.now(); const positive_ids = selected();
    setStatus(`training a concept from ${positive_ids.length} selected items…`);
    const job = await waitJob(await api("POST", "api/concept", { positive_ids, k: PAGE, new_only: newOnly() }));
    state.model = job.result.model;  // the selection becomes this model's marks
    showConcept(job, `concept from ${positive_ids.length} selected items`, t0);
  });
}
function rerank() {
  return run("feedback", async () => {
    const t0 = performance.now();
    const relevant_ids = selected();
    const not_relevant_ids = [...state.marks].filter(([, m]) => m === "notrel").map(([id]) => id);
    // the same page of the new ranking: re-ranking from page 3 stays on page 3
    const job = await waitJob(await api("POST", `api/models/${encodeURIComponent(state.model)}/feedback`,
      { relevant_ids, not_relevant_ids, k: PAGE, offset: state.offset, new_only: newOnly() }));
    showConcept(job, `re-ranked after ${relevant_ids.length} relevant / ${not_relevant_ids.length} not relevant`, t0);
  });
}
function scoreLabel() { return ($("#mode-select").selectedOptions[0] || {}).value === "hamming" ? "−dist" : "score"; }
function showSearch(res, label, t0) {
  render(res.results, res.mode.startsWith("concept:") || res.mode === "text" ? "score" : scoreLabel(), res.offset);
  showPager(res.offset, res.results.length, res.has_more, res.total ?? undefined);
  const finds = !res.mode.startsWith("concept:") ? " results"
    : newOnly() ? " new finds (the model's training examples left out)" : " results (its training examples are marked [example])";
  setStatus(`${label}: ${res.results.length}${finds} (${res.mode}).`);
  $("#timings").textContent = fmtTimings(res.timings, (performance.now() - t0) / 1000);
}
// one page of the current view
async function fetchPage(view, offset) {
  const t0 = performance.now();
  if (view.kind === "browse") {
    const page = await api("GET", `api/items?offset=${offset}&limit=${PAGE}`);
    render(page.items, "score", offset); showPager(offset, page.items.length, offset + page.items.length < page.total, page.total);
    setStatus(`Browsing the store. Type a tag and press Enter, drop an image, or pick “similar” on an item.`);
    $("#timings").textContent = "";
  } else if (view.kind === "example") {
    const res = await api("POST", "api/search/example", { id: view.id, mode: view.mode, k: PAGE, offset });
    showSearch(res, `similar to ${view.id}`, t0);
  } else if (view.kind === "upload") {
    const fd = new FormData();
    fd.append("file", view.file); fd.append("mode", view.mode); fd.append("k", String(PAGE)); fd.append("offset", String(offset));
    const res = await api("POST", "api/search/upload", fd);
    showSearch(res, `similar to ${view.file.name}`, t0);
  } else if (view.kind === "text") {
    const res = await api("POST", "api/search/text", { text: view.text, k: PAGE, offset });
    showSearch(res, `text “${view.text}”`, t0);
  } else {
    const res = await api("POST", `api/models/${encodeURIComponent(view.name)}/search`, { k: PAGE, offset, new_only: newOnly() });
    showSearch(res, `model “${view.name}”`, t0);
  }
}
function page(delta) { return run("page", () => fetchPage(state.view, Math.max(0, state.offset + delta))); }
function browse() { state.view = { kind: "browse" }; return run("browse", () => fetchPage(state.view, 0)); }
function queryExample(id) {
  return run("query by example", async () => {
    const view = { kind: "example", id, mode: $("#mode-select").value };
    setModel(null);  // ✓ marks made while searching by example stay: they can become a concept
    await fetchPage(view, 0);
    state.view = view;
    showQuery(`api/items/${encodeURIComponent(id)}/thumbnail`, `query: stored item ${id} (left out of its results)`);
  });
}
// While the first text query builds the store's text index, say how far it is (polls its status).
function watchTextIndex(text) {
  let stop = false;
  (async () => {
    while (!stop) {
      try {
        const st = await api("GET", "api/search/text/status");
        if (stop) break;
        if (st.state === "building") {
          const pct = st.total ? Math.floor((100 * st.done) / st.total) : 0;
          setStatus(`searching for “${text}”: building the text index${st.method ? " (" + st.method + ")" : ""}, ` +
                    `${st.done.toLocaleString("en")} of ${st.total.toLocaleString("en")} items (${pct} %); once per store`);
        }
      } catch (e) { /* the query itself reports errors */ }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return () => { stop = true; };
}
function textSearch(text) {  // search by description: the store's text index (built on the first text query)
  return run("text search", async () => {
    const view = { kind: "text", text };
    setModel(null);
    setStatus(`searching for “${text}”…`);
    const unwatch = watchTextIndex(text);
    try { await fetchPage(view, 0); } finally { unwatch(); }
    state.view = view;
    showQuery(null);
  });
}
function upload(file) {
  return run("image query", async () => {
    const view = { kind: "upload", file, mode: $("#mode-select").value };
    setModel(null);
    await fetchPage(view, 0);
    state.view = view;
    showQuery(URL.createObjectURL(file), `query: uploaded image ${file.name}`);
  });
}
function useModel(name) {
  return run("saved model", async () => {
    const info = await api("GET", `api/models/${encodeURIComponent(name)}`);
    setModel(name); state.view = { kind: "model", name };
    // a reopened model shows the user's own marks: the items marked ✓ (not the tag's positives: those
    // are its [example]s) and the items it was told are not relevant ✗
    state.marks.clear();
    for (const id of info.marked_ids || []) state.marks.set(id, "rel");
    for (const id of info.negative_ids || []) state.marks.set(id, "notrel");
    await fetchPage(state.view, 0);
    showQuery(null);
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
// the upload feature extractor loads in the background at start-up: say so until it is ready
async function watchExtractor() {
  const note = $("#extractor-status");
  for (;;) {
    let info; try { info = await api("GET", "api/info"); } catch (e) { return; }
    if (info.extractor === "loading") { note.hidden = false; await new Promise((r) => setTimeout(r, 500)); continue; }
    if (info.extractor === "failed") { note.textContent = "the feature extractor could not be loaded: image upload will fail"; note.hidden = false; }
    else note.hidden = true;
    return;
  }
}
$("#search-form").addEventListener("submit", (ev) => { ev.preventDefault(); const t = $("#tag-input").value.trim(); if (t) concept(t); });
$("#text-form").addEventListener("submit", (ev) => { ev.preventDefault(); const t = $("#text-input").value.trim(); if (t) textSearch(t); });
$("#rerank").addEventListener("click", rerank);
$("#show-examples").addEventListener("change", () => {
  if (state.view.kind === "model") run("page", () => fetchPage(state.view, 0));
});
$("#learn").addEventListener("click", learnSelected);
$("#prev").addEventListener("click", () => page(-PAGE));
$("#next").addEventListener("click", () => page(PAGE));
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
watchExtractor();
browse();
