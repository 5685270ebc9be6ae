// minigrad lab: the browser only shows. Every number comes from the server, computed by minigrad
// when asked; nothing here computes a gradient. Hand-written, no libraries.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

const fmt = (x) => (x === null || x === undefined ? "-" : Number(x).toFixed(4));

// ---- talking to the server: errors are shown, never thrown away ------------------------------
function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  let response;
  try {
    response = await fetch(path, options);
  } catch (err) {
    showError("The lab server does not answer (is `minigrad lab` still running?)");
    throw err;
  }
  const data = await response.json();
  if (!response.ok) {
    showError(data.error || `error ${response.status}`);
    throw new Error(data.error);
  }
  showError("");
  return data;
}

function formValues(form) {
  const values = {};
  for (const field of form.elements) {
    if (!field.name) continue;
    if (field.type === "radio") { if (field.checked) values[field.name] = field.value; }
    else if (field.type === "checkbox") values[field.name] = field.checked;
    else values[field.name] = field.value;
  }
  return values;
}

function fillSelect(select, words, chosen) {
  select.replaceChildren(...words.map((w) => el("option", {value: w}, w)));
  if (words.includes(chosen)) select.value = chosen;
}

// ---- pages ----------------------------------------------------------------------------------
function showPage() {
  const page = (location.hash || "#audit").slice(1);
  for (const name of ["audit", "steps", "answer"]) {
    $("page-" + name).hidden = name !== page;
    $("nav-" + name).classList.toggle("current", name === page);
    if (name === page) $("nav-" + name).setAttribute("aria-current", "page");
    else $("nav-" + name).removeAttribute("aria-current");
  }
}

// ================================ page 1: the audit ============================================
const audit = {predictions: {untied: null, tied: null}, revealed: {untied: false, tied: false}};

function auditBody() {
  const values = formValues($("audit-controls"));
  if (values.vocab !== "corpus") delete values.vocab_size;
  values.width = values.width === "" ? undefined : values.width;
  return values;
}

const currentMode = () => ($("mode-tied").checked ? "tied" : "untied");

async function refreshVocabulary(resetContext) {
  const body = auditBody();
  if (resetContext) body.context = "";
  const setup = await api("/api/vocab?" + new URLSearchParams(
    Object.entries(body).filter(([, v]) => v !== undefined)));
  fillSelect($("token"), setup.vocab, setup.token);
  fillSelect($("target"), setup.vocab, setup.target);
  $("context").value = setup.context.join(", ");
  $("vocab_size").disabled = $("vocab").value !== "corpus";
}

function showPredictionState() {
  const mode = currentMode();
  $("predict-mode").textContent = mode;
  const saved = audit.predictions[mode];
  const id = saved && saved.id;
  $("reveal").disabled = !id || audit.revealed[mode];
  $("commit").disabled = Boolean(id);
  for (const input of $("predict-form").querySelectorAll("input")) input.disabled = Boolean(id);
  $("predict-questions").hidden = Boolean(id);  // committed: the answers now stand beside the result
  $("committed").textContent = id ? `Prediction ${id} committed for ${mode} mode at ` +
    `${new Date(saved.committed_at * 1000).toLocaleTimeString()}: ${saved.layout}; the larger is the ` +
    `${saved.larger}` + (saved.number === null ? "." : `; target row norm ${saved.number}.`) +
    (audit.revealed[mode] ? "" : " Now reveal.") : "Commit a prediction for this mode to see its gradients.";
  $("audit-result").hidden = $("compare-box").hidden = !audit.revealed[mode];
}

async function commitPrediction(event) {
  event.preventDefault();
  const values = formValues($("predict-form"));
  values.mode = currentMode();
  const saved = await api("/api/predict", values);
  audit.predictions[values.mode] = saved;
  showPredictionState();
  $("reveal").focus();
}

async function reveal() {
  const mode = currentMode();
  const body = auditBody();
  body.prediction = audit.predictions[mode].id;
  const result = await api("/api/audit", body);
  audit.revealed[mode] = true;
  showAudit(result);
  showPredictionState();
}

async function controlsChanged(event) {
  // the server validates every change (a bad value shows its message) and fills the choices
  await refreshVocabulary(event.target.name === "width");
  restorePredictionForm();
  showPredictionState();
  if (audit.revealed[currentMode()]) await reveal();  // once revealed, every change recomputes
}

function restorePredictionForm() {
  // a prediction is per mode: show the one committed for this mode, or an empty form
  const mode = currentMode();
  if (!audit.predictions[mode]) $("predict-form").reset();
}

function showAudit(r) {
  $("result-mode").textContent = r.setup.mode;
  $("loss").textContent = fmt(r.loss);
  const p = r.prediction, a = r.actual, right = r.right;
  const rows = [
    ["Where the two gradients live", p.layout, a.layout, right.layout],
    ["Which path sends the larger row gradient", p.larger,
      `${a.larger} (lookup ${fmt(a.norms.lookup)}, classifier ${fmt(a.norms.classifier)})`, right.larger],
    ["Norm of the target row's total gradient (head.weight)", p.number === null ? "(no guess)" : p.number,
      fmt(a.number), right.number],
  ];
  $("compare").tBodies[0].replaceChildren(...rows.map(([q, mine, theirs, ok]) => el("tr", {},
    el("td", {}, q), el("td", {}, mine), el("td", {"data-actual": q}, theirs),
    el("td", {class: ok === null ? "" : ok ? "right" : "wrong"}, ok === null ? "" : ok ? "right" : "not this time"))));
  $("ledger").replaceChildren(...r.tables.map(ledgerTable));
  $("checks").replaceChildren(...r.checks.map((c) => el("li", {},
    el("span", {class: c.ok ? "ok" : "bad"}, c.ok ? "ok" : "FAILED"),
    ` ${c.name}: largest |numerical - analytical| ${c.max_abs_error.toExponential(1)} (${c.mode})` +
    (c.matches_ledger ? ", the same gradient the ledger shows" : ", NOT the gradient the ledger shows"))));
  $("graph-row").textContent = r.setup.target;
  showSvg($("graph"), r.svg);
}

function ledgerTable(t) {
  const head = el("tr", {}, el("th", {scope: "col"}, "row"),
    ...t.paths.map((p, i) => el("th", {scope: "col"}, p, el("br"), el("span", {class: "small"}, t.layouts[i]))),
    el("th", {scope: "col"}, "total"));
  const body = t.rows.map((row) => el("tr", {"data-row": row.label},
    el("td", {}, row.label), ...row.paths.map((v) => el("td", {}, fmt(v))), el("td", {}, fmt(row.total))));
  const table = el("table", {class: "numbers", "data-param": t.label},
    el("caption", {}, t.label), el("thead", {}, head), el("tbody", {}, ...body));
  const box = el("div", {}, table);
  if (t.note) box.append(el("p", {class: "note"}, "Note: " + t.note));
  return box;
}

function showSvg(container, text) {
  // the server's Graphviz SVG, parsed as data: scripts and event handlers are dropped
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  for (const bad of svg.querySelectorAll("script, foreignObject")) bad.remove();
  for (const node of svg.querySelectorAll("*")) {
    for (const attr of [...node.attributes]) if (attr.name.startsWith("on")) node.removeAttribute(attr.name);
  }
  container.replaceChildren(document.importNode(svg, true));
}

// ================================ page 2: steps over time ======================================
const steps = {run: null, stopped: false, data: null};
const COLORS = {tied: "#e76f51", untied: "#1f6feb"};

async function runSteps(event) {
  event.preventDefault();
  const started = await api("/api/steps/start", formValues($("steps-controls")));
  steps.run = started.run;
  steps.stopped = false;
  steps.data = {meta: started, points: {tied: [], untied: []}, returns: {tied: [], untied: []}};
  $("run").disabled = true;
  $("stop").disabled = false;
  try {
    for (;;) {
      const chunk = await api("/api/steps/next", {run: started.run});
      for (const mode of ["tied", "untied"]) {
        steps.data.points[mode].push(...chunk.points[mode]);
        steps.data.returns[mode].push(...chunk.returns[mode]);
      }
      steps.data.updates = chunk.updates;
      steps.data.occurrences = chunk.occurrences;
      drawSteps(chunk);
      if (chunk.done || steps.stopped || steps.run !== started.run) break;
    }
  } finally {
    $("run").disabled = false;
    $("stop").disabled = true;
  }
}

function drawSteps(chunk) {
  const d = steps.data, m = d.meta;
  const figures = $("page-steps").querySelector(".charts");
  figures.dataset.redraws = String(Number(figures.dataset.redraws || 0) + 1);  // the tests count these
  const last = (mode) => chunk.losses[mode][chunk.losses[mode].length - 1];
  $("steps-status").textContent = `Step ${chunk.step} of ${chunk.steps} (${m.optimizer}` +
    `${m.lazy ? ", lazy" : ""}, decay ${m.decay}, lr ${m.lr}, weight decay ${m.weight_decay}). ` +
    `Frequent row ${m.frequent} (${m.words.frequent}), rare row ${m.rare} (${m.words.rare}). ` +
    `Loss: tied ${fmt(last("tied"))}, untied ${fmt(last("untied"))}.`;
  const series = (key, field) => ["tied", "untied"].flatMap((mode) => ["frequent", "rare"].map((row) => ({
    name: `${row}, ${mode}`, color: COLORS[mode], dash: row === "rare" ? "5 3" : "",
    points: d.points[mode].map((p) => [p.step, p[row][field]]).filter((xy) => key !== "log" || xy[1] > 0),
  })));
  chart($("chart-norm"), series("lin", "norm"), {xlabel: "step", ylabel: "row norm"});
  chart($("chart-moved"), series("log", "moved"), {xlabel: "step", ylabel: "distance moved", ylog: true});
  chart($("chart-return"), ["tied", "untied"].map((mode) => ({
    name: mode, color: COLORS[mode], dots: true,
    points: d.returns[mode].filter((r) => r.frequent_moved > 0).map((r) => [r.silence, r.moved / r.frequent_moved]),
  })), {xlabel: "silence before the return (steps)", ylabel: "rare step / frequent step"});
  chart($("chart-updates"), ["tied", "untied"].map((mode) => ({
    name: mode, color: COLORS[mode], dots: true,
    points: d.occurrences.map((n, i) => [n, d.updates[mode][i]]).filter(([n, u]) => n > 0 && u > 0),
  })), {xlabel: "occurrences of the token", ylabel: "steps that changed the row", xlog: true, ylog: true});
}

// A small line/dot chart in SVG: linear or log axes, a legend, tick labels.
function chart(svg, series, opts) {
  const W = 560, H = 230, L = 58, R = 12, T = 10, B = 36;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const ns = "http://www.w3.org/2000/svg";
  const make = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    return n;
  };
  const tx = (v, log) => (log ? Math.log10(v) : v);
  const all = series.flatMap((s) => s.points);
  svg.replaceChildren();
  if (!all.length) { svg.append(make("text", {x: W / 2, y: H / 2, class: "chart-text", "text-anchor": "middle"}, "no points yet")); return; }
  let [x0, x1] = [Math.min(...all.map((p) => tx(p[0], opts.xlog))), Math.max(...all.map((p) => tx(p[0], opts.xlog)))];
  let [y0, y1] = [Math.min(...all.map((p) => tx(p[1], opts.ylog))), Math.max(...all.map((p) => tx(p[1], opts.ylog)))];
  if (!opts.ylog) y0 = Math.min(y0, 0);
  const pad = (lo, hi) => (hi > lo ? [lo, hi] : [lo - 0.5, hi + 0.5]);  // one value: centre it
  [x0, x1] = pad(x0, x1);
  [y0, y1] = pad(y0, y1);
  const sx = (v) => L + (tx(v, opts.xlog) - x0) / (x1 - x0) * (W - L - R);
  const sy = (v) => H - B - (tx(v, opts.ylog) - y0) / (y1 - y0) * (H - T - B);
  svg.append(make("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "chart-axis"}),
             make("line", {x1: L, y1: T, x2: L, y2: H - B, class: "chart-axis"}));
  const label = (v, log) => { const x = log ? 10 ** v : (Math.abs(v) > 10 ? Math.round(v) : v); return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0) ? x.toExponential(0) : +x.toPrecision(3); };
  for (let i = 0; i <= 4; i++) {
    const xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    const px = L + (W - L - R) * i / 4, py = H - B - (H - T - B) * i / 4;
    svg.append(make("text", {x: px, y: H - B + 14, class: "chart-text", "text-anchor": "middle"}, label(xv, opts.xlog)),
               make("text", {x: L - 4, y: py + 4, class: "chart-text", "text-anchor": "end"}, label(yv, opts.ylog)));
  }
  svg.append(make("text", {x: (L + W - R) / 2, y: H - 4, class: "chart-text", "text-anchor": "middle"}, opts.xlabel),
             make("text", {x: 12, y: (T + H - B) / 2, class: "chart-text", "text-anchor": "middle",
                           transform: `rotate(-90 12 ${(T + H - B) / 2})`}, opts.ylabel));
  series.forEach((s) => {
    if (s.dots) {
      for (const [x, y] of s.points) svg.append(make("circle", {cx: sx(x), cy: sy(y), r: 2.5, fill: s.color, "fill-opacity": 0.6}));
    } else if (s.points.length) {
      svg.append(make("polyline", {points: s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" "),
        fill: "none", stroke: s.color, "stroke-width": 1.6, "stroke-dasharray": s.dash || ""}));
    }
  });
  svg.append(make("rect", {x: W - R - 156, y: T, width: 150, height: 14 * series.length + 6, class: "chart-legend"}));
  series.forEach((s, k) => {
    const lx = W - R - 150, ly = T + 12 + 14 * k;
    svg.append(make("line", {x1: lx, y1: ly - 4, x2: lx + 18, y2: ly - 4, stroke: s.color, "stroke-width": 2, "stroke-dasharray": s.dash || ""}),
               make("text", {x: lx + 24, y: ly, class: "chart-text"}, s.name));
  });
}

function optimizerChanged() {
  const defaults = {sgd: ["0.5", "0"], adam: ["0.01", "0"], adamw: ["0.01", "0.1"]}[$("optimizer").value];
  [$("lr").value, $("weight_decay").value] = defaults;
}

// ================================ page 3: check an answer ======================================
function answerBody() { return formValues($("answer-controls")); }

async function refreshQuestion() {
  const tied = $("answer-mode").value === "tied";
  $("answer-table").disabled = tied;
  if (tied) $("answer-table").value = "emb.weight";
  const q = await api("/api/answer/question", answerBody());
  $("answer-what").textContent = q.what + ` (shape ${q.shape.join(" x ")})`;
  const matrix = (caption, rows, labels) => el("table", {class: "numbers"}, el("caption", {}, caption),
    el("tbody", {}, ...rows.map((r, i) => el("tr", {}, el("td", {}, labels[i]), ...r.map((v) => el("td", {}, fmt(v)))))));
  $("question").replaceChildren(
    el("p", {}, `Reads ${q.token}, target ${q.target}, ${q.mode}; loss ${fmt(q.loss)}; context ${q.context.join(", ")}.`),
    matrix("emb.weight E", q.E, q.vocab),
    q.mode === "tied" ? "" : matrix("head.weight W", q.W, q.vocab),
    matrix("h = E[token] + context", [q.h], ["h"]),
    el("table", {class: "numbers"}, el("caption", {}, "p = softmax(h W^T)"),
      el("thead", {}, el("tr", {}, ...q.vocab.map((w) => el("th", {scope: "col"}, w)))),
      el("tbody", {}, el("tr", {}, ...q.p.map((v) => el("td", {}, fmt(v)))))));
  $("verdict").hidden = true;
}

async function checkAnswer(event) {
  event.preventDefault();
  const body = answerBody();
  body.answer = $("answer-text").value;
  $("verdict").hidden = true;
  const v = await api("/api/answer/check", body);
  const box = $("verdict");
  box.className = v.verdict;
  box.textContent = (v.verdict === "pass" ? "pass: " : "fail: ") + v.diagnosis;
  box.hidden = false;
  box.scrollIntoView({block: "nearest"});
}

async function initAnswer() {
  const setup = await api("/api/vocab");
  fillSelect($("answer-token"), setup.vocab, setup.token);
  fillSelect($("answer-target"), setup.vocab, setup.target);
  fillSelect($("answer-row"), [...setup.vocab, "(whole table)"], setup.target);
  await refreshQuestion();
}

// ---- wiring ---------------------------------------------------------------------------------
window.addEventListener("DOMContentLoaded", async () => {
  showPage();
  window.addEventListener("hashchange", showPage);
  $("audit-controls").addEventListener("change", (e) => controlsChanged(e).catch(() => {}));
  $("audit-controls").addEventListener("submit", (e) => e.preventDefault());
  $("predict-form").addEventListener("submit", (e) => commitPrediction(e).catch(() => {}));
  $("reveal").addEventListener("click", () => reveal().catch(() => {}));
  $("steps-controls").addEventListener("submit", (e) => runSteps(e).catch(() => {}));
  $("stop").addEventListener("click", () => { steps.stopped = true; });
  $("optimizer").addEventListener("change", optimizerChanged);
  $("answer-controls").addEventListener("change", () => refreshQuestion().catch(() => {}));
  $("answer-form").addEventListener("submit", (e) => checkAnswer(e).catch(() => {}));
  try {
    await refreshVocabulary(true);
    showPredictionState();
    await initAnswer();
  } catch (err) { /* the message is on the page */ }
  document.body.dataset.ready = "true";
});
