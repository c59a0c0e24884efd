// seqlab serve: the pages. The server embeds the page's data as JSON; everything else comes from the JSON API.
// Charts are plotly's (served from the installed plotly package); the rest is plain DOM.
"use strict";

const DATA = JSON.parse(document.getElementById("data").textContent);
const MAIN = document.getElementById("main");
const PLOT = {displaylogo: false, responsive: true};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "on") for (const [ev, f] of Object.entries(v)) node.addEventListener(ev, f);
    else if (k === "text") node.textContent = v;
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function runPath(id) { return id.split("/").map(encodeURIComponent).join("/"); }
function apiUrl(id, op) { return "/api/runs/" + runPath(id) + (op ? "/" + op : ""); }

async function api(url, body) {
  const r = await fetch(url, body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  let j = null;
  try { j = await r.json(); } catch (e) { throw new Error(r.status + " " + r.statusText); }
  if (!r.ok) throw new Error(j.detail || r.statusText);
  return j;
}

function fmt(x, digits) {
  if (x === null || x === undefined) return "–";
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(digits || 4);
  return String(x);
}

function errorBox() { return el("div", {class: "error", role: "alert"}); }
function showError(box, e) { box.textContent = "error: " + (e.message || e); }

function section(title, id, ...children) { return el("section", {id: id}, el("h2", {text: title}), ...children); }

function field(labelText, input) { return el("label", {}, labelText + " ", input); }
function labelFor(input, text) { return el("label", {for: input.id, text: text}); }

// ---- the runs page ------------------------------------------------------------------------------------

function runsTable(runs) {
  if (!runs.length) return el("p", {class: "muted", text: "No runs under the served folders yet."});
  const head = el("tr", {}, ["run", "task", "arch", "step", "best valid loss", "updated", "training", "problem"]
    .map(h => el("th", {text: h})));
  const rows = runs.map(r => el("tr", {"data-run": r.id},
    el("td", {}, el("a", {href: "/runs/" + runPath(r.id), text: r.id})),
    el("td", {text: r.kind || "–"}), el("td", {text: r.arch || "–"}),
    el("td", {text: r.step === null || r.arch === "ar" ? "–" : fmt(r.step) + (r.max_steps ? " / " + r.max_steps : "")}),
    el("td", {text: fmt(r.best_valid_loss)}), el("td", {text: r.updated || "–"}),
    el("td", r.training ? {class: "live", text: "training (PID " + r.training.pid + ")"} : {text: "no"}),
    el("td", {class: "error", text: r.error || ""})));
  return el("table", {id: "runs"}, head, rows);
}

function runsPage() {
  const box = el("div", {}, runsTable(DATA.runs));
  MAIN.append(section("Runs", "runs-section", box));
  setInterval(async () => {
    try { const j = await api("/api/runs"); box.replaceChildren(runsTable(j.runs)); } catch (e) { /* next time */ }
  }, 5000);
}

// ---- the run page: summary, curves, config, checkpoints, eval ---------------------------------------

const RUN = DATA.run;
const AR = RUN && RUN.arch === "ar";  // an AR fit (closed form): no trainer, no steps, no loss curve
let checkpointSelect = null;
function useLast() { return checkpointSelect !== null && checkpointSelect.value === "last"; }

function summaryBlock(r) {
  const items = [["task", r.kind], ["arch", r.arch], ...(AR ? [] : [["step", fmt(r.step)],
                 ["best valid loss", fmt(r.best_valid_loss)], ["best step", fmt(r.best_step)]]), ["updated", r.updated || "–"],
                 ["training now", r.training ? "yes (PID " + r.training.pid + ")" : "no"]];
  return el("table", {id: "summary"}, items.map(([k, v]) => el("tr", {}, el("th", {text: k}), el("td", {text: v}))));
}

function fitBlock(fit) {
  if (!fit) return null;
  return section("AR fit", "fit-section", el("table", {id: "fit"},
    Object.entries(fit).map(([k, v]) => el("tr", {}, el("th", {text: k}), el("td", {text: fmt(v)})))));
}

// The right-hand axis (and its zero line) only while a series drawn on it is shown (a legend click shows one).
function rightShown(traces) { return traces.some(t => t.yaxis === "y2" && t.visible === true); }

function curves() {
  const div = el("div", {id: "curves", style: "height:320px"});
  const note = el("div", {class: "muted"});
  let rows = [], listening = false;
  function draw() {
    const traces = [];
    const train = rows.filter(r => r.split === "train" && typeof r.loss === "number");
    if (train.length) traces.push({x: train.map(r => r.step), y: train.map(r => r.loss), name: "train loss", mode: "lines"});
    const valid = rows.filter(r => r.split === "valid");
    const keys = new Set();
    valid.forEach(r => Object.keys(r).forEach(k => { if (typeof r[k] === "number" && k !== "step") keys.add(k); }));
    for (const k of keys) {
      const v = valid.filter(r => typeof r[k] === "number");
      traces.push({x: v.map(r => r.step), y: v.map(r => r[k]), name: "valid " + k, mode: "lines+markers",
                   yaxis: k === "loss" ? "y" : "y2", visible: k === "loss" || k === "f1" || k === "accuracy" ? true : "legendonly"});
    }
    note.textContent = rows.length ? rows.length + " rows in metrics.jsonl" : "no metrics yet";
    Plotly.react(div, traces, {margin: {t: 10, r: 50, b: 40, l: 50}, xaxis: {title: {text: "step"}},
      yaxis: {title: {text: "loss"}}, yaxis2: {overlaying: "y", side: "right", visible: rightShown(traces)},
      legend: {orientation: "h"}}, PLOT);
    if (!listening) div.on("plotly_restyle", () => Plotly.relayout(div, {"yaxis2.visible": rightShown(div.data)}));
    listening = true;
  }
  async function poll() {
    try {
      const j = await api(apiUrl(RUN.id, "metrics") + "?since=" + rows.length);
      if (j.count < rows.length) rows = [];  // the run was replaced
      if (j.rows.length || !div.data) { rows = rows.concat(j.rows); draw(); }
    } catch (e) { note.textContent = "metrics: " + e.message; }
  }
  poll();
  setInterval(poll, 3000);
  return section("Loss and metrics", "curves-section", div, note);
}

function configBlock(config) {
  if (!config) return null;
  const text = Object.entries(config).map(([sec, vals]) => "[" + sec + "]\n" +
    Object.entries(vals).map(([k, v]) => k + " = " + JSON.stringify(v)).join("\n")).join("\n\n");
  return section("Resolved config (config.toml)", "config-section", el("pre", {class: "config", text: text}));
}

function checkpointsBlock(list) {
  if (!list.length) return section("Checkpoints", "checkpoints-section", el("p", {class: "muted", text: "none yet"}));
  const rows = list.map(c => el("tr", {}, el("td", {text: c.name}), el("td", {text: fmt(c.step)}),
    el("td", {text: fmt(c.best_valid_loss)}), el("td", {text: c.updated || ""}), el("td", {class: "error", text: c.error || ""})));
  checkpointSelect = el("select", {id: "checkpoint"}, el("option", {value: "best", text: "best (default)"}),
                        el("option", {value: "last", text: "last (--last)"}));
  return section("Checkpoints", "checkpoints-section",
    el("table", {}, el("tr", {}, ["checkpoint", "step", "best valid loss", "written", ""].map(h => el("th", {text: h}))), rows),
    el("div", {class: "row"}, field("the pages below read", checkpointSelect)));
}

function evalBlock() {
  const out = el("div", {id: "eval-out"});
  const err = errorBox();
  const split = el("select", {id: "eval-split"}, el("option", {value: "test", text: "test"}), el("option", {value: "valid", text: "valid"}));
  const button = el("button", {id: "eval-button", text: "Evaluate", on: {click: async () => {
    // busy while the split is scored (seconds to minutes): the button says so and cannot start a second run
    button.disabled = true; button.textContent = "Evaluating…"; out.setAttribute("aria-busy", "true");
    out.classList.add("busy"); err.textContent = ""; out.textContent = `evaluating the ${split.value} split…`;
    try {
      const j = await api(apiUrl(RUN.id, "eval"), {split: split.value, last: useLast()});
      out.replaceChildren(el("table", {}, Object.entries(j).filter(([k, v]) => typeof v !== "object" || v === null)
        .map(([k, v]) => el("tr", {}, el("th", {text: k}), el("td", {text: fmt(v)})))));
    } catch (e) { out.textContent = ""; showError(err, e); }
    button.disabled = false; button.textContent = "Evaluate"; out.removeAttribute("aria-busy");
    out.classList.remove("busy");
  }}});
  return section("Evaluate (seqlab eval)", "eval-section", el("div", {class: "row"}, field("split", split), button), err, out);
}

// Layers and heads are numbered from 0 here, as in the API's weights[layer][head] and in .plot().

// ---- language models: streaming generation and the attention explorer ------------------------------

function generatePanel() {
  const prompt = el("textarea", {id: "prompt", rows: 3}, "The ");
  const n = el("input", {id: "max-new-tokens", type: "number", value: 100, min: 0});
  const temp = el("input", {id: "temperature", type: "number", value: 0.8, step: 0.1, min: 0});
  const topk = el("input", {id: "top-k", type: "number", value: 0, min: 0});
  const topp = el("input", {id: "top-p", type: "number", value: 1, step: 0.05, min: 0.01, max: 1});
  const seed = el("input", {id: "seed", type: "number", value: 0, min: 0});
  const out = el("div", {id: "generation", class: "output"});
  const status = el("div", {id: "generation-status", class: "muted"});
  const err = errorBox();
  let source = null;
  const stop = el("button", {id: "stop", text: "Stop", disabled: true, on: {click: () => finish("stopped")}});
  function finish(msg) { if (source) source.close(); source = null; go.disabled = false; stop.disabled = true; status.textContent = msg; }
  function fail(e) { showError(err, e); finish(err.textContent); }  // the status line says why, not "generating…"
  const go = el("button", {id: "generate", text: "Generate", on: {click: async () => {
    err.textContent = ""; out.replaceChildren(el("span", {class: "prompt", text: prompt.value}));
    const q = new URLSearchParams({prompt: prompt.value, max_new_tokens: n.value, temperature: temp.value,
                                   top_k: topk.value, top_p: topp.value, last: useLast()});
    if (seed.value !== "") q.set("seed", seed.value);
    const url = apiUrl(RUN.id, "generate/stream") + "?" + q;
    // EventSource hides the status and body of a refused request: on an error, the same request shows why
    go.disabled = true; stop.disabled = false; status.textContent = "generating…";
    let count = 0;
    const started = performance.now();
    source = new EventSource(url);
    source.addEventListener("token", ev => {
      const t = JSON.parse(ev.data);
      count += 1;
      const alts = t.top.map(a => JSON.stringify(a.token) + " " + a.probability.toFixed(3)).join("\n");
      out.append(el("span", {class: "tok", "data-probability": t.probability.toFixed(4),
                             title: "p = " + t.probability.toFixed(4) + "\ntop 5:\n" + alts, text: t.token}));
      status.textContent = count + " tokens";
    });
    source.addEventListener("done", ev => {
      const d = JSON.parse(ev.data);
      finish(d.tokens + " tokens in " + ((performance.now() - started) / 1000).toFixed(2) + " s");
    });
    source.addEventListener("failure", ev => fail(new Error(JSON.parse(ev.data).failure)));
    source.onerror = async () => {
      if (!source) return;
      finish("");
      try { await api(url); } catch (e) { fail(e); }
    };
  }}});
  return section("Generate", "generate-section", labelFor(prompt, "prompt"), prompt,
    el("div", {class: "row"}, field("max new tokens", n), field("temperature", temp), field("top-k", topk),
       field("top-p", topp), field("seed", seed), go, stop),
    err, out, status, el("div", {class: "muted", text: "Hover a token for its probability and the top 5 alternatives."}));
}

function heatmap(div, x, y, z, opts) {
  const small = opts && opts.small;
  const layout = small ? {margin: {t: 2, r: 2, b: 2, l: 2}, xaxis: {visible: false}, yaxis: {visible: false, autorange: "reversed"}}
    : {margin: {t: 30, r: 10, b: 80, l: 80}, title: {text: (opts && opts.title) || ""},
       xaxis: {title: {text: (opts && opts.xtitle) || "key"}, tickangle: -45},
       yaxis: {title: {text: (opts && opts.ytitle) || "query"}, autorange: "reversed"}};
  const idx = a => a.map((t, i) => i + ":" + t);  // positions keep repeated tokens apart
  Plotly.newPlot(div, [{type: "heatmap", z: z, x: idx(x), y: idx(y), colorscale: "Viridis", showscale: !small,
    hovertemplate: "%{y} → %{x}<br>weight %{z:.4f}<extra></extra>"}], layout,
    {...PLOT, displayModeBar: !small, staticPlot: false});
}

function attentionPanel() {
  const text = el("input", {id: "attention-text", type: "text", size: 60, value: "The quick brown fox"});
  const grid = el("div", {id: "attention-grid", class: "grid"});
  const large = el("div", {id: "attention-large", style: "height:460px"});
  const err = errorBox();
  const go = el("button", {id: "attention-button", text: "Show attention", on: {click: async () => {
    err.textContent = ""; go.disabled = true;
    try {
      const j = await api(apiUrl(RUN.id, "attention"), {text: text.value, last: useLast()});
      const heads = j.weights[0].length;
      grid.style.gridTemplateColumns = "repeat(" + heads + ", 130px)";
      grid.replaceChildren();
      j.weights.forEach((layer, l) => layer.forEach((w, h) => {
        const plot = el("div", {style: "width:128px;height:110px"});
        const cell = el("div", {class: "cell", "data-layer": l, "data-head": h, title: "click to enlarge",
          on: {click: () => heatmap(large, j.tokens, j.tokens, w, {title: "layer " + l + ", head " + h})}},
          plot, el("div", {class: "lbl", text: "layer " + l + " · head " + h}));
        grid.append(cell);
        heatmap(plot, j.tokens, j.tokens, w, {small: true});
      }));
      heatmap(large, j.tokens, j.tokens, j.weights[j.weights.length - 1][0],
              {title: "layer " + (j.weights.length - 1) + ", head 0"});
    } catch (e) { showError(err, e); }
    go.disabled = false;
  }}});
  return section("Attention (layer × head; click one to enlarge, hover for the weight)", "attention-section",
    el("div", {class: "row"}, text, go), err, grid, large);
}

// ---- translation -----------------------------------------------------------------------------------------

function translatePanel() {
  const text = el("input", {id: "source", type: "text", size: 60});
  const beam = el("input", {id: "beam", type: "number", value: 5, min: 1, max: 16});
  const out = el("div", {id: "translation", class: "output"});
  const head = el("select", {id: "head"});
  const map = el("div", {id: "alignment", style: "height:420px"});
  const err = errorBox();
  let last = null;
  function draw() {
    if (!last) return;
    const h = head.value;
    const w = h === "mean" ? last.weights[0].map((row, i) => row.map((_, j) =>
      last.weights.reduce((s, m) => s + m[i][j], 0) / last.weights.length)) : last.weights[+h];
    heatmap(map, last.source_tokens, last.target_tokens, w, {title: "cross-attention", xtitle: "source", ytitle: "output"});
  }
  head.addEventListener("change", draw);
  const go = el("button", {id: "translate", text: "Translate", on: {click: async () => {
    err.textContent = ""; go.disabled = true;
    try {
      last = await api(apiUrl(RUN.id, "translate"), {text: text.value, beam: +beam.value, last: useLast()});
      out.textContent = last.translation;
      head.replaceChildren(el("option", {value: "mean", text: "mean of heads"}),
        ...last.weights.map((_, i) => el("option", {value: i, text: "head " + i})));
      draw();
    } catch (e) { showError(err, e); }
    go.disabled = false;
  }}});
  return section("Translate", "translate-section",
    el("div", {class: "row"}, text, field("beam", beam), go), err, out,
    el("div", {class: "row"}, field("alignment", head)), map);
}

// ---- tagging and classification -------------------------------------------------------------------------

function colour(type) {
  let h = 0;
  for (const c of type) h = (h * 31 + c.charCodeAt(0)) % 360;
  return "hsl(" + h + ", 70%, 82%)";
}

function tagPanel() {
  const text = el("input", {id: "sentence", type: "text", size: 70});
  const out = el("div", {id: "tagged", class: "sentence"});
  const err = errorBox();
  const go = el("button", {id: "tag", text: "Tag", on: {click: async () => {
    err.textContent = ""; go.disabled = true;
    try {
      const j = await api(apiUrl(RUN.id, "tag"), {text: text.value, last: useLast()});
      out.replaceChildren();
      let i = 0;
      for (const e of j.entities.concat([{start: j.tokens.length, end: j.tokens.length, type: null}])) {
        for (; i < e.start; i++) out.append(el("span", {class: "word", "data-tag": j.tags[i], text: j.tokens[i]}), " ");
        if (e.type === null) break;
        out.append(el("span", {class: "ent", "data-type": e.type, style: "background:" + colour(e.type)},
                      j.tokens.slice(e.start, e.end + 1).join(" "), el("sup", {text: e.type})), " ");
        i = e.end + 1;
      }
    } catch (e) { showError(err, e); }
    go.disabled = false;
  }}});
  return section("Tag", "tag-section", el("div", {class: "row"}, labelFor(text, "sentence"), text, go), err, out);
}

// A CRF tagger's scores: rows the tag before, columns the tag after, plus a start row and an end column; what the
// tagging scheme forbids is a gap (null), drawn in the grey of the plot's background (no score is grey: the
// colours run blue, white at 0, red).
function transitionsPanel() {
  const map = el("div", {id: "transitions", style: "height:480px"});
  const err = errorBox();
  async function draw() {
    err.textContent = "";
    try {
      const j = await api(apiUrl(RUN.id, "transitions") + "?last=" + useLast());
      const z = [j.start.map((s, k) => j.allowed_start[k] ? s : null).concat([null])].concat(j.transitions.map(
        (row, i) => row.map((s, k) => j.allowed[i][k] ? s : null).concat([j.allowed_end[i] ? j.end[i] : null])));
      Plotly.newPlot(map, [{type: "heatmap", z: z, x: j.labels.concat(["⟨end⟩"]), y: ["⟨start⟩"].concat(j.labels),
        colorscale: [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]], zmid: 0, hoverongaps: false,
        hovertemplate: "%{y} → %{x}<br>score %{z:.4f}<extra></extra>"}],
        {margin: {t: 10, r: 10, b: 80, l: 90}, plot_bgcolor: "#8c8c8c", xaxis: {title: {text: "to"}, tickangle: -45,
         showgrid: false}, yaxis: {title: {text: "from"}, autorange: "reversed", showgrid: false}}, PLOT);
    } catch (e) { showError(err, e); }
  }
  draw();
  if (checkpointSelect) checkpointSelect.addEventListener("change", draw);
  return section("CRF transitions", "transitions-section", el("div", {class: "muted", id: "transitions-caption",
    text: "The CRF's score for each tag (to) right after another (from), for the first tag (⟨start⟩ row) and the " +
          "last (⟨end⟩ column); grey: forbidden by the tagging scheme."}), err, map);
}

function classifyPanel() {
  const text = el("input", {id: "sentence", type: "text", size: 70});
  const out = el("div", {id: "label"});
  const bars = el("div", {id: "probabilities", style: "height:300px"});
  const err = errorBox();
  const go = el("button", {id: "classify", text: "Classify", on: {click: async () => {
    err.textContent = ""; go.disabled = true;
    try {
      const j = (await api(apiUrl(RUN.id, "predict"), {lines: [text.value], last: useLast()})).predictions[0];
      out.textContent = j.label + " (" + j.probability.toFixed(4) + ")";
      const names = Object.keys(j.probabilities);
      Plotly.newPlot(bars, [{type: "bar", orientation: "h", y: names, x: names.map(k => j.probabilities[k]),
        hovertemplate: "%{y}: %{x:.4f}<extra></extra>"}],
        {margin: {t: 10, l: 100}, xaxis: {range: [0, 1], title: {text: "probability"}}}, PLOT);
    } catch (e) { showError(err, e); }
    go.disabled = false;
  }}});
  return section("Classify", "classify-section", el("div", {class: "row"}, labelFor(text, "sentence"), text, go), err, out, bars);
}

// ---- word vectors ----------------------------------------------------------------------------------------

function answerTable(rows) {
  return el("table", {}, el("tr", {}, el("th", {text: "word"}), el("th", {text: "cosine"})),
    rows.map(r => el("tr", {}, el("td", {text: r.word}), el("td", {text: r.cosine.toFixed(4)}))));
}

function embedPanel() {
  const word = el("input", {id: "word", type: "text"});
  const k = el("input", {id: "k", type: "number", value: 10, min: 1, max: 100});
  const nOut = el("div", {id: "neighbors"});
  const nErr = errorBox();
  const nGo = el("button", {id: "neighbors-button", text: "Neighbours", on: {click: async () => {
    nErr.textContent = "";
    try { nOut.replaceChildren(answerTable((await api(apiUrl(RUN.id, "neighbors"), {word: word.value, k: +k.value})).neighbors)); }
    catch (e) { nOut.replaceChildren(); showError(nErr, e); }
  }}});
  const [a, b, c] = ["a", "b", "c"].map(x => el("input", {id: "analogy-" + x, type: "text", size: 10}));
  const aOut = el("div", {id: "analogy"});
  const aErr = errorBox();
  const aGo = el("button", {id: "analogy-button", text: "Analogy", on: {click: async () => {
    aErr.textContent = "";
    try { aOut.replaceChildren(answerTable((await api(apiUrl(RUN.id, "analogy"), {a: a.value, b: b.value, c: c.value})).answers)); }
    catch (e) { aOut.replaceChildren(); showError(aErr, e); }
  }}});
  const n = el("input", {id: "map-words", type: "number", value: 200, min: 3, max: 1000});
  const method = el("select", {id: "map-method"}, el("option", {value: "pca", text: "PCA"}), el("option", {value: "tsne", text: "t-SNE"}));
  const map = el("div", {id: "map", style: "height:560px"});
  const mErr = errorBox();
  const mGo = el("button", {id: "map-button", text: "Draw map", on: {click: async () => {
    mErr.textContent = ""; mGo.disabled = true;
    try {
      const j = await api(apiUrl(RUN.id, "map"), {words: +n.value, method: method.value});
      Plotly.newPlot(map, [{type: "scatter", mode: "markers+text", x: j.x, y: j.y, text: j.words, textposition: "top center",
        textfont: {size: 10}, marker: {size: 5}, hovertemplate: "%{text}<extra></extra>"}],
        {margin: {t: 10}, dragmode: "zoom", xaxis: {zeroline: false}, yaxis: {zeroline: false}}, PLOT);
    } catch (e) { showError(mErr, e); }
    mGo.disabled = false;
  }}});
  return [
    section("Nearest neighbours", "neighbors-section", el("div", {class: "row"}, labelFor(word, "word"), word, field("k", k), nGo), nErr, nOut),
    section("Analogy: a is to b as c is to ?", "analogy-section", el("div", {class: "row"}, a, " : ", b, " :: ", c, " : ? ", aGo), aErr, aOut),
    section("Map of the most frequent words (scroll or drag to zoom)", "map-section",
            el("div", {class: "row"}, field("words", n), field("method", method), mGo), mErr, map)];
}

// ---- forecasting -----------------------------------------------------------------------------------------

// The x values stay positions (the forecast runs past the last date); about 8 of them are labelled with their dates.
function dateTicks(dates) {
  const every = Math.max(1, Math.ceil(dates.length / 8));
  const at = dates.map((_, i) => i).filter(i => i % every === 0);
  return {tickvals: at, ticktext: at.map(i => dates[i])};
}

function forecastPanel() {
  const steps = el("input", {id: "steps", type: "number", value: 24, min: 1, max: 1000});
  const chart = el("div", {id: "forecast", style: "height:380px"});
  const err = errorBox();
  const go = el("button", {id: "forecast-button", text: "Forecast", on: {click: async () => {
    err.textContent = ""; go.disabled = true;
    try {
      const j = await api(apiUrl(RUN.id, "forecast"), {steps: +steps.value, last: useLast()});
      const t = j.values.map((_, i) => i);
      const o = j.origin;
      const traces = [{x: t.slice(0, o), y: j.values.slice(0, o), name: "history (train + valid)", mode: "lines"}];
      if (o < j.values.length) traces.push({x: t.slice(o - 1), y: j.values.slice(o - 1), name: "held-out truth", mode: "lines"});
      traces.push({x: [o - 1].concat(j.forecast.map((_, i) => o + i)), y: [j.values[o - 1]].concat(j.forecast),
                   name: "forecast", mode: "lines", line: {width: 2.5}});
      const xaxis = j.dates ? {title: {text: "date"}, ...dateTicks(j.dates)} : {title: {text: "position in the series"}};
      Plotly.newPlot(chart, traces, {margin: {t: 10}, xaxis: xaxis,
                                     yaxis: {title: {text: j.name || "value"}}, legend: {orientation: "h"}}, PLOT);
    } catch (e) { showError(err, e); }
    go.disabled = false;
  }}});
  return section("Forecast", "forecast-section", el("div", {class: "row"}, field("horizon", steps), go), err, chart);
}

// ---- sentence encoders -----------------------------------------------------------------------------------

function similarityPanel() {
  const a = el("input", {id: "sentence-a", type: "text", size: 50, value: "a cat sat on the mat"});
  const b = el("input", {id: "sentence-b", type: "text", size: 50, value: "a cat was sitting on the mat"});
  const out = el("div", {id: "similarity", class: "output"});
  const err = errorBox();
  const go = el("button", {id: "similarity-button", text: "Compare", on: {click: async () => {
    err.textContent = "";
    try { out.textContent = "cosine " + (await api(apiUrl(RUN.id, "similarity"), {a: a.value, b: b.value})).cosine.toFixed(4); }
    catch (e) { showError(err, e); }
  }}});
  return section("Sentence similarity", "similarity-section", el("div", {class: "row"}, labelFor(a, "sentence A"), a),
    el("div", {class: "row"}, labelFor(b, "sentence B"), b, " ", go), err, out);
}

// ---- the run page, by task -------------------------------------------------------------------------------

function runPage() {
  document.getElementById("crumb").textContent = " / " + RUN.id;
  const head = section(RUN.id, "run-section", summaryBlock(RUN));
  if (RUN.error) head.append(el("div", {class: "error", id: "run-error", role: "alert", text: "This run cannot be read: " + RUN.error}));
  MAIN.append(head);
  if (RUN.kind === "encoder") { MAIN.append(similarityPanel()); return; }
  const panels = {
    lm: () => [generatePanel(), DATA.config && DATA.config.model && DATA.config.model.arch !== "transformer"
               && DATA.config.model.arch !== "pretrained" ? null : attentionPanel()],
    translate: () => [translatePanel()], classify: () => [classifyPanel()],
    tag: () => [tagPanel(), DATA.config && DATA.config.model && DATA.config.model.crf ? transitionsPanel() : null],
    embed: embedPanel, forecast: () => [forecastPanel()]};
  const make = panels[RUN.kind];
  const ckpt = checkpointsBlock(DATA.checkpoints);
  if (make && !RUN.error) MAIN.append(...make().filter(Boolean));
  if (!RUN.error && DATA.config && DATA.config.model && DATA.config.model.arch === "pretrained"
      && (RUN.kind === "tag" || RUN.kind === "classify")) MAIN.append(similarityPanel());
  MAIN.append(AR ? fitBlock(DATA.fit) || "" : curves(), ckpt, configBlock(DATA.config) || "", evalBlock());
}

if (DATA.page === "runs") runsPage();
else if (DATA.page === "run") runPage();
else MAIN.append(el("p", {class: "error", text: DATA.detail || "not found"}));
