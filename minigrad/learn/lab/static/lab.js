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

const fmt = (x, decimals = 4) => (x === null || x === undefined ? "-" : Number(x).toFixed(decimals));

// ---- talking to the server: errors are shown, never thrown away ------------------------------
// A page's results are hidden when a request of that page fails: the message replaces them, so
// nothing on screen belongs to controls other than the ones shown.
const hideResults = {audit: () => {}, steps: () => {}, answer: () => {}};

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
  if (message) {
    const top = box.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight - 40) box.scrollIntoView({block: "nearest"});
  }
}

async function api(path, body, page) {
  const options = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  let response, data;
  try {
    response = await fetch(path, options);
    data = await response.json();
  } catch (err) {
    if (page) hideResults[page]();
    showError("The lab server does not answer (is `minigrad lab` still running?)");
    throw err;
  }
  if (!response.ok) {
    if (page) hideResults[page]();
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

function hint(id, message) {
  $(id).textContent = message;
  $(id).hidden = !message;
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
  $("pieces-panel").hidden = page === "answer";  // page 3 checks your answer, not your pieces
  if (page === "steps" && steps.data) drawCharts();  // sized to the page now that it shows
}

// ================================ your pieces ==================================================
// The server marks your copies of the exercises of lessons 4 to 7; the switch is on by default
// once one passes (until you set it yourself). Every answer says whose piece computed it.
const pieces = {status: null, setByYou: false};

async function refreshPieces() {
  // marking a changed copy runs its check (about a second): say so, without disabling the button
  // (a disabled button would drop the keyboard's focus)
  const button = $("pieces-again");
  if (button.getAttribute("aria-disabled") === "true") return;
  button.setAttribute("aria-disabled", "true");
  button.textContent = "Marking your copies ...";
  try {
    showPieces((await api("/api/pieces")).pieces);
  } finally {
    button.removeAttribute("aria-disabled");
    button.textContent = "Mark your copies again";
  }
}

function showPieces(list) {
  const passing = list.filter((p) => p.passes);
  const use = $("use-pieces");
  if (!pieces.setByYou) use.checked = passing.length > 0;
  use.disabled = !passing.length;
  if (!passing.length) use.checked = false;
  pieces.status = list;
  const short = (p) => (p.why.startsWith("you have not built") ? "not built yet"
    : p.why.startsWith("your copy does not pass") ? "does not pass its check yet" : p.why);
  const theirs = list.filter((p) => !p.passes).map((p) => `${p.name} (${short(p)})`);
  $("pieces-summary").textContent = (passing.length ? `Yours: ${passing.map((p) => p.name).join(", ")}. ` : "") +
    (theirs.length ? `minigrad's: ${theirs.join(", ")}.` : "");
  $("pieces-list").replaceChildren(...list.map((p) => el("li", {"data-piece": p.name},
    el("code", {}, p.name), ` (lesson ${p.lesson}, ${p.does}): `,
    p.passes ? el("span", {class: "yours"}, "yours") : "minigrad's",
    p.passes ? `, from ${p.source}` : ` (${p.why})`)));
}

function whoseSentence(said) {
  // "your Embedding (the lookup ...); minigrad's CrossEntropy (why)": what computed this answer
  const why = (p) => (p.why.startsWith("you have not built") ? "yours is not built yet" : p.why);
  return said.filter((p) => p.whose !== "not used").map((p) => (p.whose === "yours"
    ? `your ${p.name} (${p.does})` : `minigrad's ${p.name}${p.why ? ` (${why(p)})` : ""}`)).join("; ");
}

async function piecesSwitched() {
  pieces.setByYou = true;
  if (audit.revealed[currentMode()]) await reveal();  // the same question, on the other pieces
}

// ================================ page 1: the audit ============================================
// A prediction answers one question: these controls, this mode. When a control changes, the
// question changes and the predictions made for the old one are dropped: predict again.
const audit = {predictions: {untied: null, tied: null}, revealed: {untied: false, tied: false},
               questionChanged: false};

function auditBody() {
  const values = formValues($("audit-controls"));
  if (values.vocab !== "corpus") delete values.vocab_size;
  values.pieces = $("use-pieces").checked;
  return values;
}

const currentMode = () => ($("mode-tied").checked ? "tied" : "untied");

async function refreshVocabulary(changed) {
  // A new vocabulary brings its own token and target (the old ones may not be in it); a new
  // width brings a context of the new length. The size box is usable exactly for the corpus.
  $("vocab_size").disabled = $("vocab").value !== "corpus";
  const body = auditBody();
  if (changed === "vocab" || changed === "vocab_size" || changed === "init") { delete body.token; delete body.target; }
  if (changed === "width" || changed === "init") body.context = "";
  const setup = await api("/api/vocab?" + new URLSearchParams(Object.entries(body)), undefined, "audit");
  fillSelect($("token"), setup.vocab, setup.token);
  fillSelect($("target"), setup.vocab, setup.target);
  $("context").value = setup.context.join(", ");
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
  let text;
  if (id) {
    text = `Prediction ${id} committed for ${mode} mode at ` +
      `${new Date(saved.committed_at * 1000).toLocaleTimeString()}: ${saved.layout}; the larger is the ` +
      `${saved.larger}` + (saved.number === null ? "." : `; target row norm ${saved.number}.`) +
      (audit.revealed[mode] ? "" : " Now reveal.");
  } else {
    text = (audit.questionChanged ? "The controls changed, so the question did: predict again. " : "") +
      "Commit a prediction for these controls in this mode to see its gradients.";
  }
  $("committed").textContent = text;
  $("audit-result").hidden = $("compare-box").hidden = !audit.revealed[mode];
}

async function commitPrediction(event) {
  event.preventDefault();
  const values = formValues($("predict-form"));
  if (!values.layout || !values.larger) {
    hint("predict-hint", "Choose an answer to both questions first: where the two gradients live, " +
      "and which path sends the larger row gradient.");
    return;
  }
  hint("predict-hint", "");
  const mode = currentMode();
  const saved = await api("/api/predict", {...auditBody(), ...values, mode}, "audit");
  audit.predictions[mode] = saved;
  showPredictionState();
  $("reveal").focus();
}

async function reveal() {
  const mode = currentMode();
  const body = {...auditBody(), prediction: audit.predictions[mode].id};
  const result = await api("/api/audit", body, "audit");
  audit.revealed[mode] = true;
  showAudit(result);
  showPredictionState();
}

async function controlsChanged(event) {
  const name = event.target.name;
  if (name === "mode") {  // the same question in the other mode: its own prediction, if any
    if (!audit.predictions[currentMode()]) $("predict-form").reset();
    hint("predict-hint", "");
    showPredictionState();
    if (audit.revealed[currentMode()]) await reveal();
    return;
  }
  const hadPrediction = Boolean(audit.predictions.untied || audit.predictions.tied);
  audit.predictions = {untied: null, tied: null};
  audit.revealed = {untied: false, tied: false};
  audit.questionChanged = hadPrediction;
  $("predict-form").reset();
  showPredictionState();
  await refreshVocabulary(name);  // the server validates the change (a bad value shows its message)
}

hideResults.audit = () => { $("audit-result").hidden = true; $("compare-box").hidden = true; };

function showAudit(r) {
  $("result-mode").textContent = r.setup.mode;
  $("loss").textContent = fmt(r.loss);
  $("computed-by").textContent = `Computed with ${whoseSentence(r.pieces)}.`;
  $("computed-head").textContent = r.pieces.some((p) => p.whose === "yours") ? "computed on your pieces"
    : "minigrad computed";
  const p = r.prediction, a = r.actual, right = r.right;
  const within = Math.round(100 * r.number_within);
  const rows = [
    ["Where the two gradients live", p.layout, a.layout, right.layout],
    ["Which path sends the larger row gradient", p.larger,
      `${a.larger} (lookup ${fmt(a.norms.lookup)}, classifier ${fmt(a.norms.classifier)})`, right.larger],
    [`Norm of the target row's total gradient (head.weight; right within ${within}%)`,
      p.number === null ? "(no guess)" : p.number, fmt(a.number), right.number],
  ];
  // three columns, the verdict under your answer: four would not fit a phone's width
  const verdict = (ok) => (ok === null ? "" : el("span", {class: "verdict " + (ok ? "right" : "wrong")},
    ok ? "right" : "not this time"));
  $("compare").tBodies[0].replaceChildren(...rows.map(([q, mine, theirs, ok]) => el("tr", {},
    el("th", {scope: "row"}, q), el("td", {}, el("span", {class: "mine"}, String(mine)), verdict(ok)),
    el("td", {"data-actual": q}, theirs))));
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
  const box = el("div", {class: "table-box"}, table);
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
// A run is advanced chunk by chunk; the server ends a chunk after at most 0.4 s, so the status
// moves and Stop takes effect within about half a second at any size.
const steps = {generation: 0, stopped: false, running: false, data: null};

function rowName(index, word) {
  return word === `#${index}` ? word : `${index} (${word})`;  // Zipf ids are their own names
}

function clearSteps(status) {
  steps.data = null;
  $("steps-status").textContent = status;
  $("steps-pieces").textContent = "";
  $("steps-verdict").hidden = true;
  for (const figure of $("page-steps").querySelectorAll(".charts figure")) {
    figure.querySelector("svg").replaceChildren();
    figure.querySelector(".legend").replaceChildren();
    figure.querySelector(".table-box").replaceChildren();
    figure.numbers = null;
  }
  $("updates-note").textContent = "";
}

hideResults.steps = () => clearSteps("");

async function runSteps(event) {
  event.preventDefault();
  const values = formValues($("steps-controls"));
  values.pieces = $("use-pieces").checked;
  if (!values.prediction) {
    hint("steps-hint", "Choose a prediction first (above): whose rare row moves further when its token " +
      "comes back after its longest silence?");
    return;
  }
  hint("steps-hint", "");
  const generation = ++steps.generation;
  steps.stopped = false;
  steps.running = true;
  clearSteps("Starting the run ...");
  $("stop").disabled = false;
  if (document.activeElement === $("run")) $("stop").focus();  // a disabled button would drop the focus
  $("run").disabled = true;
  try {
    const started = await api("/api/steps/start", values, "steps");
    steps.data = {meta: started, points: {tied: [], untied: []}, returns: {tied: [], untied: []}, chunk: null};
    $("steps-status").textContent = `Running ${started.steps} steps ...`;
    $("steps-pieces").textContent = `Trained with ${whoseSentence(started.pieces)}.`;
    for (;;) {
      const chunk = await api("/api/steps/next", {run: started.run}, "steps");
      if (generation !== steps.generation) return;
      for (const mode of ["tied", "untied"]) {
        steps.data.points[mode].push(...chunk.points[mode]);
        steps.data.returns[mode].push(...chunk.returns[mode]);
      }
      steps.data.chunk = chunk;
      showStepsStatus();
      drawCharts();
      if (chunk.done || steps.stopped) break;
    }
    showStepsStatus();
    showStepsVerdict();
  } finally {
    if (generation === steps.generation) {
      steps.running = false;
      $("run").disabled = false;
      if (document.activeElement === $("stop")) $("run").focus();  // as above, the other way
      $("stop").disabled = true;
      $("stop").removeAttribute("aria-disabled");
    }
  }
}

function stopSteps() {
  if (steps.stopped || !steps.running) return;
  steps.stopped = true;
  // marked as pressed, but not disabled: a disabled button would drop the keyboard's focus; when the
  // run has stopped the focus moves to Run
  $("stop").setAttribute("aria-disabled", "true");
  $("steps-status").textContent = "Stopping after the chunk being computed ...";
}

function showStepsStatus() {
  const d = steps.data, m = d.meta, chunk = d.chunk;
  const last = (mode) => chunk.losses[mode][chunk.losses[mode].length - 1];
  const state = chunk.done ? "Done" : steps.running && !steps.stopped ? "Running" : "Stopped";
  $("steps-status").textContent = `${state}: step ${chunk.step} of ${chunk.steps} (${m.optimizer}` +
    `${m.lazy ? ", lazy" : ""}, decay ${m.decay}, lr ${m.lr}, weight decay ${m.weight_decay}). ` +
    `Frequent row ${rowName(m.frequent, m.words.frequent)}, rare row ${rowName(m.rare, m.words.rare)}. ` +
    `Loss: tied ${fmt(last("tied"))}, untied ${fmt(last("untied"))}.`;
}

function showStepsVerdict() {
  const back = steps.data.chunk.longest_return, box = $("steps-verdict");
  const you = `You predicted: ${steps.data.meta.prediction === "about the same" ? "about the same"
    : "the " + steps.data.meta.prediction + " model's"}. `;
  const ran = steps.data.chunk.done ? "" : ` (the run stopped at step ${steps.data.chunk.step}: judged on the steps run)`;
  if (!back) {
    box.replaceChildren(you + `The rare token did not come back after a silence in this run${ran}, so ` +
      "there is nothing to compare: try more steps or a larger rare row.");
  } else {
    const further = back.further === "about the same" ? "they moved about the same (within 10%)"
      : `the ${back.further} model's moved further`;
    box.replaceChildren(you + `Its longest silence was ${back.silence} steps; when it came back (step ` +
      `${back.step}) the rare row moved ${fmt(back.tied, 5)} tied and ${fmt(back.untied, 5)} untied: ` +
      `${further}${ran}. `, el("span", {class: back.right ? "ok" : "bad"}, back.right ? "right" : "not this time"));
  }
  box.hidden = false;
}

// Each series differs by more than its colour: its dash pattern and its marker (tied: a circle,
// untied: a square; the frequent row's filled, the rare row's hollow). The legends draw the same.
const STYLE = {
  "frequent row, tied": {dash: "", marker: "circle", filled: true},
  "frequent row, untied": {dash: "7 4", marker: "square", filled: true},
  "rare row, tied": {dash: "2 3", marker: "circle", filled: false},
  "rare row, untied": {dash: "9 3 2 3", marker: "square", filled: false},
  "tied": {dash: "", marker: "circle", filled: true},
  "untied": {dash: "", marker: "square", filled: false},
};

function drawCharts() {
  const d = steps.data;
  if (!d || !d.chunk) return;
  const figures = $("page-steps").querySelector(".charts");
  figures.dataset.redraws = String(Number(figures.dataset.redraws || 0) + 1);  // the tests count these
  const rows = (field) => ["tied", "untied"].flatMap((mode) => ["frequent", "rare"].map((row) => ({
    name: `${row} row, ${mode}`, mode, points: d.points[mode].map((p) => [p.step, p[row][field]]),
  })));
  chart($("chart-norm"), rows("norm"), {xlabel: "step", ylabel: "row norm"});
  chart($("chart-moved"), rows("moved"), {xlabel: "step", ylabel: "distance moved", ylog: true,
                                          zeroLane: "no move"});
  const byMode = (points) => ["tied", "untied"].map((mode) => ({name: mode, mode, dots: true, points: points(mode)}));
  chart($("chart-return"), byMode((mode) => d.returns[mode].filter((r) => r.frequent_moved > 0)
    .map((r) => [r.silence, r.moved / r.frequent_moved])),
  {xlabel: "silence before the return (steps)", ylabel: "rare step ÷ frequent step"});
  const c = d.chunk;
  chart($("chart-updates"), byMode((mode) => c.occurrences.map((n, i) => [n, c.updates[mode][i]])
    .filter(([n, u]) => n > 0 && u > 0)),
  {xlabel: "times the token was read", ylabel: "steps that changed the row", xlog: true, ylog: true});
  $("updates-note").textContent = everyRowEveryStep(c);
}

function everyRowEveryStep(c) {
  // With dense weight decay (or, tied, the classifier's gradient) every row changes on every step, so
  // that model's points lie on one flat line at the number of steps: say so, and why.
  const flat = ["tied", "untied"].filter((mode) => c.occurrences.every((n, i) => n === 0 || c.updates[mode][i] === c.step));
  if (!flat.length) return "";
  const m = steps.data.meta;
  const why = (mode) => (mode === "tied" ? "tied, the classifier sends every row a gradient on every step"
    : !m.lazy ? "the optimizer steps every row on every step (not lazy)"
      : m.decay === "dense" && m.weight_decay > 0 ? "dense weight decay moves every row on every step" : "");
  return `Flat at ${c.step} for ${flat.join(" and ")}: every row that was read changed on every step (` +
    flat.map(why).filter(Boolean).join("; ") + "). Lazy steps with touched-only decay leave a silent untied row alone.";
}

// ---- a small chart in SVG: round ticks, log axes by decades, the legend beside it ----------------
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const n = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
}

function marker(x, y, s, kind) {
  // the series' marker at (x, y): `kind` says what it marks ("move": a move between two still steps)
  const style = STYLE[s.name], attrs = {class: `${kind} ${s.mode}${style.filled ? " filled" : ""}`,
                                        "data-series": s.name};
  if (style.marker === "circle") return svgEl("circle", {cx: x.toFixed(1), cy: y.toFixed(1), r: 3, ...attrs});
  return svgEl("rect", {x: (x - 2.8).toFixed(1), y: (y - 2.8).toFixed(1), width: 5.6, height: 5.6, ...attrs});
}

function niceStep(span, count) {
  const raw = span / count, power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
}

function linearAxis(lo, hi) {
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const step = niceStep(hi - lo, 4);
  const from = Math.floor(lo / step + 1e-9) * step, to = Math.ceil(hi / step - 1e-9) * step;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const ticks = [];
  for (let v = from; v <= to + step / 2; v += step) ticks.push([v, (Math.abs(v) < step / 2 ? 0 : v).toFixed(decimals)]);
  return {lo: from, hi: to, ticks, at: (v) => v};
}

function logAxis(lo, hi) {
  let a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
  if (b === a) b += 1;
  const every = Math.ceil((b - a) / 6);
  const powers = [];
  for (let k = a; k <= b; k += every) powers.push(k);
  // one notation per axis: plain numbers while they stay short, else every tick as 1eK
  const plain = powers.every((k) => k >= -3 && k <= 4);
  const ticks = powers.map((k) => [k, plain ? String(+(10 ** k).toFixed(Math.max(0, -k))) : `1e${k}`]);
  return {lo: a, hi: b, ticks, at: (v) => Math.log10(v)};
}

function chart(svg, series, opts) {
  const W = Math.max(300, Math.round(svg.clientWidth || 560)), H = 240;
  const L = 56, R = 14, T = 10, B = 38, lane = opts.zeroLane ? 26 : 0;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const figure = svg.closest("figure");
  legend(figure.querySelector(".legend"), series);
  figure.numbers = {series, opts};  // the text alternative, built when its details are opened
  fillNumbers(figure);
  const shown = (p) => (!opts.xlog || p[0] > 0) && (!opts.ylog || p[1] > 0);
  const all = series.flatMap((s) => s.points.filter(shown));
  if (!all.length) {
    svg.append(svgEl("text", {x: W / 2, y: H / 2, class: "chart-text", "text-anchor": "middle"}, "no points yet"));
    return;
  }
  const range = (i) => [Math.min(...all.map((p) => p[i])), Math.max(...all.map((p) => p[i]))];
  const [xlo, xhi] = range(0), [ylo, yhi] = range(1);
  const xa = opts.xlog ? logAxis(xlo, xhi) : linearAxis(Math.min(xlo, opts.xfrom ?? xlo), xhi);
  const ya = opts.ylog ? logAxis(ylo, yhi) : linearAxis(Math.min(ylo, 0), yhi);
  const bottom = H - B - lane;  // the plot's floor; below it, the "no move" lane
  const sx = (v) => L + (xa.at(v) - xa.lo) / (xa.hi - xa.lo) * (W - L - R);
  const sy = (v) => bottom - (ya.at(v) - ya.lo) / (ya.hi - ya.lo) * (bottom - T);
  for (const [v, text] of ya.ticks) {
    const y = bottom - (v - ya.lo) / (ya.hi - ya.lo) * (bottom - T);
    svg.append(svgEl("line", {x1: L, y1: y, x2: W - R, y2: y, class: "chart-grid"}),
               svgEl("text", {x: L - 5, y: y + 4, class: "chart-text", "text-anchor": "end"}, text));
  }
  for (const [v, text] of xa.ticks) {
    const x = L + (v - xa.lo) / (xa.hi - xa.lo) * (W - L - R);
    svg.append(svgEl("line", {x1: x, y1: H - B, x2: x, y2: H - B + 4, class: "chart-axis"}),
               svgEl("text", {x, y: H - B + 16, class: "chart-text", "text-anchor": "middle"}, text));
  }
  svg.append(svgEl("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "chart-axis"}),
             svgEl("line", {x1: L, y1: T, x2: L, y2: H - B, class: "chart-axis"}),
             svgEl("text", {x: (L + W - R) / 2, y: H - 4, class: "chart-text", "text-anchor": "middle"}, opts.xlabel),
             svgEl("text", {x: 12, y: (T + bottom) / 2, class: "chart-text", "text-anchor": "middle",
                            transform: `rotate(-90 12 ${(T + bottom) / 2})`}, opts.ylabel));
  if (opts.zeroLane) {
    svg.append(svgEl("text", {x: L - 5, y: H - B - lane / 2 + 4, class: "chart-text", "text-anchor": "end"},
                     opts.zeroLane));
  }
  series.forEach((s, k) => {
    if (s.dots) {
      for (const [x, y] of s.points.filter(shown)) svg.append(marker(sx(x), sy(y), s, "dot"));
      return;
    }
    // A line through each run of points it can show. A point that cannot be shown (0 on a log axis)
    // breaks the line and is marked in the "no move" lane; a run of one point (a move between two
    // steps without one) would be a line of no length, so it gets the series' marker instead.
    let path = "", run = [];
    const endRun = () => {
      if (run.length === 1) svg.append(marker(run[0][0], run[0][1], s, "move"));
      else if (run.length > 1) path += "M" + run.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join("L");
      run = [];
    };
    for (const p of s.points) {
      if (shown(p)) { run.push([sx(p[0]), sy(p[1])]); continue; }
      endRun();
      if (opts.zeroLane) svg.append(marker(sx(p[0]), H - B - lane + 4 + 6 * k, s, "zero"));
    }
    endRun();
    if (path) {
      svg.append(svgEl("path", {d: path, fill: "none", class: `line ${s.mode}`, "stroke-dasharray": STYLE[s.name].dash,
                                "data-series": s.name}));
    }
  });
}

function legend(list, series) {
  if (!list) return;
  list.replaceChildren(...series.map((s) => {
    const swatch = svgEl("svg", {class: "swatch", width: 34, height: 10, viewBox: "0 0 34 10", "aria-hidden": "true"});
    if (!s.dots) {
      swatch.append(svgEl("line", {x1: 1, y1: 5, x2: 33, y2: 5, class: `line ${s.mode}`,
                                   "stroke-dasharray": STYLE[s.name].dash}));
    }
    swatch.append(marker(17, 5, s, "key"));
    return el("li", {}, swatch, s.name);
  }));
}

// ---- each chart's numbers as a table: its text alternative, built when opened ---------------------
function fillNumbers(figure) {
  const details = figure.querySelector("details"), box = details && details.querySelector(".table-box");
  if (!box || !details.open || !figure.numbers) return;
  const {series, opts} = figure.numbers;
  const n = (v) => (v === undefined ? "-" : Number.isInteger(v) ? String(v) : Number(v).toPrecision(4));
  let head, rows;
  if (series.some((s) => s.dots)) {
    head = ["model", opts.xlabel, opts.ylabel];
    rows = series.flatMap((s) => s.points.map(([x, y]) => [s.name, n(x), n(y)]));
  } else {  // the series share their x values (the steps)
    const columns = series.map((s) => new Map(s.points));
    const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    head = [opts.xlabel, ...series.map((s) => `${opts.ylabel}: ${s.name}`)];
    rows = xs.map((x) => [n(x), ...columns.map((c) => n(c.get(x)))]);
  }
  box.replaceChildren(el("table", {class: "numbers"},
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {scope: "col"}, h)))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((v) => el("td", {}, v)))))));
}

function optimizerChanged() {
  const defaults = {sgd: ["0.5", "0"], adam: ["0.01", "0"], adamw: ["0.01", "0.1"]}[$("optimizer").value];
  [$("lr").value, $("weight_decay").value] = defaults;
}

// ================================ page 3: check an answer ======================================
function answerBody() { return formValues($("answer-controls")); }

hideResults.answer = () => { $("verdict").hidden = true; };

async function refreshQuestion() {
  const tied = $("answer-mode").value === "tied";
  $("answer-table").disabled = tied;
  if (tied) $("answer-table").value = "emb.weight";
  $("verdict").hidden = true;
  const q = await api("/api/answer/question", answerBody(), "answer");
  const n = (x) => fmt(x, q.decimals);
  $("answer-what").textContent = `${q.what}, shape ${q.shape.join(" x ")}`;
  const matrix = (caption, rows, labels) => el("div", {class: "table-box"}, el("table", {class: "numbers"},
    el("caption", {}, caption),
    el("tbody", {}, ...rows.map((r, i) => el("tr", {}, el("th", {scope: "row"}, labels[i]), ...r.map((v) => el("td", {}, n(v))))))));
  const probabilities = el("div", {class: "table-box"}, el("table", {class: "numbers"},
    el("caption", {}, "p = softmax(z), y"),
    el("thead", {}, el("tr", {}, el("th", {scope: "col"}, "token"), el("th", {scope: "col"}, "p"), el("th", {scope: "col"}, "y"))),
    el("tbody", {}, ...q.vocab.map((w, i) => el("tr", {}, el("th", {scope: "row"}, w), el("td", {}, n(q.p[i])),
                                                 el("td", {}, String(q.y[i])))))));
  $("question").replaceChildren(
    el("p", {}, `Reads ${q.token}, target ${q.target}, ${q.mode}; loss ${n(q.loss)}; context ${q.context.join(", ")}.`),
    el("div", {class: "tables"}, matrix("emb.weight E", q.E, q.vocab),
      q.mode === "tied" ? "" : matrix("head.weight W", q.W, q.vocab),
      matrix("h = E[token] + context", [q.h], ["h"]), probabilities));
  $("answer-tolerance").textContent = `The numbers above are rounded to ${q.decimals} decimals. An answer ` +
    `passes when every number is within ${q.tolerance} of minigrad's gradient, which allows for that rounding.`;
}

async function checkAnswer(event) {
  event.preventDefault();
  const body = answerBody();
  body.answer = $("answer-text").value;
  $("verdict").hidden = true;
  const v = await api("/api/answer/check", body, "answer");
  const box = $("verdict");
  box.className = v.verdict;
  box.textContent = (v.verdict === "pass" ? "pass: " : "fail: ") + v.diagnosis;
  box.hidden = false;
  box.scrollIntoView({block: "nearest"});
}

async function initAnswer() {
  const setup = await api("/api/vocab", undefined, "answer");
  fillSelect($("answer-token"), setup.vocab, setup.token);
  fillSelect($("answer-target"), setup.vocab, setup.target);
  fillSelect($("answer-row"), [...setup.vocab, "(whole table)"], setup.target);
  await refreshQuestion();
}

// ---- wiring ---------------------------------------------------------------------------------
window.addEventListener("DOMContentLoaded", async () => {
  showPage();
  window.addEventListener("hashchange", showPage);
  let resizing = null;
  window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(drawCharts, 150); });
  $("audit-controls").addEventListener("change", (e) => controlsChanged(e).catch(() => {}));
  $("audit-controls").addEventListener("submit", (e) => e.preventDefault());
  $("predict-form").addEventListener("submit", (e) => commitPrediction(e).catch(() => {}));
  $("predict-form").addEventListener("change", () => hint("predict-hint", ""));
  $("reveal").addEventListener("click", () => reveal().catch(() => {}));
  $("steps-controls").addEventListener("submit", (e) => runSteps(e).catch(() => {}));
  $("steps-predict").addEventListener("change", () => hint("steps-hint", ""));
  $("stop").addEventListener("click", stopSteps);
  $("optimizer").addEventListener("change", optimizerChanged);
  for (const details of $("page-steps").querySelectorAll(".charts details")) {
    details.addEventListener("toggle", () => fillNumbers(details.closest("figure")));
  }
  $("answer-controls").addEventListener("change", () => refreshQuestion().catch(() => {}));
  $("answer-form").addEventListener("submit", (e) => checkAnswer(e).catch(() => {}));
  $("use-pieces").addEventListener("change", () => piecesSwitched().catch(() => {}));
  $("pieces-again").addEventListener("click", () => refreshPieces().catch(() => {}));
  try {
    await refreshPieces();
    await refreshVocabulary("init");
    showPredictionState();
    await initAnswer();
  } catch (err) { /* the message is on the page */ }
  document.body.dataset.ready = "true";
});
