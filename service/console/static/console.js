/* flowserve console: models, graph, traffic and try-it views over the server's JSON API. */
(function () {
  "use strict";
  const $ = (sel) => document.querySelector(sel);
  const state = { models: [], view: null, graphView: null, graphKey: null, traffic: null, history: {} };

  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
      else if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  async function api(path, options) {
    const resp = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
    let body = null;
    try {
      body = await resp.json();
    } catch (e) {
      body = { error: `HTTP ${resp.status} with a body that is not JSON` };
    }
    return { status: resp.status, ok: resp.ok, body };
  }

  function setStatus(text) {
    $("#status").textContent = text;
  }

  const shapeText = (s) => (s === null ? "<any>" : "[" + s.map((d) => (d === null ? "?" : d)).join(", ") + "]");
  const fmtSeconds = (s) => (s === null || s === undefined ? "–" : s < 1 ? (s * 1000).toFixed(1) + " ms" : s.toFixed(2) + " s");

  /* -- models ------------------------------------------------------------------------- */
  async function loadModels() {
    const r = await api("/console/api/models");
    if (!r.ok) {
      setStatus(r.body.error || `models: HTTP ${r.status}`);
      return;
    }
    state.models = r.body.models;
    state.repositoryControl = r.body.repository_control;
    renderModels();
    fillTargets();
  }

  function sigTable(sig) {
    const rows = [];
    for (const kind of ["inputs", "outputs"]) {
      for (const alias in sig[kind]) {
        const t = sig[kind][alias];
        rows.push(h("tr", {}, h("td", {}, kind.slice(0, -1)), h("td", {}, alias), h("td", {}, t.name),
          h("td", {}, t.dtype), h("td", {}, shapeText(t.shape))));
      }
    }
    return h("table", { class: "sig" },
      h("tr", {}, ["", "alias", "tensor", "dtype", "shape"].map((x) => h("th", {}, x))), rows);
  }

  async function repositoryAction(model, action, button) {
    button.disabled = true;
    setStatus(`${action}ing ${model}...`);
    const r = await api(`/v2/repository/models/${encodeURIComponent(model)}/${action}`, { method: "POST" });
    setStatus(r.ok ? `${model}: ${action}ed` : `${model}: ${r.body.error || "HTTP " + r.status}`);
    await loadModels();
  }

  function renderModels() {
    const root = $("#models");
    const open = new Set(Array.from(root.querySelectorAll("details[open]")).map((e) => e.dataset.key));
    root.innerHTML = "";
    if (!state.models.length) root.appendChild(h("p", {}, "The model repository holds no models."));
    for (const m of state.models) {
      const rows = m.versions.map((v) => {
        const sigs = Object.keys(v.signatures).map((k) =>
          h("details", { "data-key": `${m.name}/${v.version}/${k}`, open: open.has(`${m.name}/${v.version}/${k}`) ? "" : null },
            h("summary", {}, k + (k === v.default_signature ? " (default)" : "")), sigTable(v.signatures[k])));
        const devices = v.devices.map((d) => `${d.device} ×${d.instances}`).join(", ");
        const links = v.state === "AVAILABLE" ? [
          h("a", { href: `#graph/${m.name}/${v.version}` }, "graph"), " ",
          h("a", { href: `#try/${m.name}/${v.version}` }, "try it"),
        ] : [];
        return h("tr", { "data-model": m.name, "data-version": v.version },
          h("td", {}, v.version || "–"),
          h("td", {}, h("span", { class: "state " + v.state }, v.state)),
          h("td", {}, devices || "–", v.device_note ? h("div", { class: "hint" }, v.device_note) : null),
          h("td", { class: "num" }, v.instances || "–"),
          h("td", { class: "num" }, fmtSeconds(v.load_seconds)),
          h("td", {}, v.error ? h("div", { class: "error" }, v.error) : "–"),
          h("td", {}, sigs),
          h("td", {}, links));
      });
      const load = h("button", { class: "secondary", onclick: (e) => repositoryAction(m.name, "load", e.target) }, "Load");
      const unload = h("button", { class: "secondary", onclick: (e) => repositoryAction(m.name, "unload", e.target) }, "Unload");
      root.appendChild(h("div", { class: "card model", "data-model": m.name },
        h("h2", {}, m.name, state.repositoryControl ? [load, unload] : null),
        h("table", {}, h("tr", {}, ["version", "state", "device", "instances", "load time", "last error", "signatures", ""].map((x) => h("th", {}, x))), rows)));
    }
  }

  function available() {
    const out = [];
    for (const m of state.models) for (const v of m.versions) if (v.state === "AVAILABLE") out.push([m.name, v]);
    return out;
  }

  function fillTargets() {
    for (const id of ["#graph-target", "#try-target"]) {
      const sel = $(id);
      const current = sel.value;
      sel.innerHTML = "";
      for (const [name, v] of available()) sel.appendChild(h("option", { value: `${name}/${v.version}` }, `${name} v${v.version}`));
      if (current) sel.value = current;
    }
  }

  /* -- graph -------------------------------------------------------------------------- */
  async function showGraph(key) {
    if (!key) return;
    $("#graph-target").value = key;
    if (state.graphKey === key && state.graphView) return;
    const [model, version] = key.split("/");
    $("#graph-info").textContent = "loading...";
    const r = await api(`/v1/models/${encodeURIComponent(model)}/versions/${encodeURIComponent(version)}/graph`);
    if (!r.ok) {
      $("#graph-info").textContent = r.body.error || `HTTP ${r.status}`;
      return;
    }
    state.graphKey = key;
    state.graphView = FlowGraph.create($("#graph"), r.body, {
      onRender: (view) => {
        $("#graph-info").textContent =
          `${r.body.op_count} ops, ${view.container.dataset.nodeCount} nodes drawn (layout ${view.container.dataset.layoutMs} ms)`;
      },
    });
  }

  /* -- traffic ------------------------------------------------------------------------ */
  function quantile(q, buckets) {
    // Prometheus' histogram_quantile over cumulative [[bound, count], ...] ending in +Inf.
    if (!buckets.length || buckets[buckets.length - 1][1] <= 0) return null;
    const rank = q * buckets[buckets.length - 1][1];
    let lo = 0, loCount = 0;
    for (const [b, c] of buckets) {
      if (c >= rank) {
        if (b === "+Inf") return lo;
        if (c === loCount) return b;
        return lo + ((b - lo) * (rank - loCount)) / (c - loCount);
      }
      lo = b; loCount = c;
    }
    return lo;
  }

  function delta(now, before) {
    if (!before) return null;
    const prev = new Map(before.buckets.map(([b, c]) => [String(b), c]));
    return now.buckets.map(([b, c]) => [b, c - (prev.get(String(b)) || 0)]);
  }

  function bars(hist) {
    let prev = 0;
    const counts = hist.buckets.map(([b, c]) => { const n = c - prev; prev = c; return [b, n]; });
    const max = Math.max(1, ...counts.map(([, n]) => n));
    return h("div", {},
      h("div", { class: "bars" }, counts.map(([b, n]) => h("div", { title: `≤ ${b} rows: ${n} batches`, style: `height:${(48 * n) / max}px` }))),
      h("div", { class: "bars-labels" }, counts.map(([b]) => h("span", {}, b === "+Inf" ? "∞" : String(b)))));
  }

  async function pollTraffic() {
    const r = await api("/console/api/traffic");
    if (!r.ok) {
      setStatus(r.body.error || `traffic: HTTP ${r.status}`);
      return;
    }
    const before = state.traffic;
    state.traffic = r.body;
    const prev = new Map((before ? before.models : []).map((m) => [m.model + "/" + m.version, m]));
    const dt = before ? r.body.time - before.time : 0;
    const rows = r.body.models.map((m) => {
      const p = prev.get(m.model + "/" + m.version);
      const rate = p && dt > 0 ? (m.requests - p.requests) / dt : null;
      const errRate = p && dt > 0 ? (m.errors - p.errors) / dt : null;
      const window = p ? delta(m.latency, p.latency) : null;
      const q = (x) => {
        const w = window ? quantile(x, window) : null;
        const life = m.latency.quantiles[String(x)];
        return `${fmtSeconds(w)} (${fmtSeconds(life)})`;
      };
      return h("tr", { "data-model": m.model, "data-version": m.version },
        h("td", {}, m.version ? `${m.model} v${m.version}` : `${m.model} (no version: status requests)`),
        h("td", { class: "num" }, rate === null ? "–" : rate.toFixed(2)),
        h("td", { class: "num" }, errRate === null ? "–" : errRate.toFixed(2)),
        h("td", { class: "num" }, String(m.requests), " / ", String(m.errors)),
        h("td", { class: "num" }, q(0.5)), h("td", { class: "num" }, q(0.9)), h("td", { class: "num" }, q(0.99)),
        h("td", { class: "num" }, String(m.queue_depth)),
        h("td", {}, m.batch_size.count ? bars(m.batch_size) : "no batches"));
    });
    const root = $("#traffic");
    root.innerHTML = "";
    root.appendChild(h("div", { class: "card" }, rows.length ? h("table", {},
      h("tr", {}, ["model", "req/s", "errors/s", "requests / errors", "p50", "p90", "p99", "queue", "batch sizes"].map((x) => h("th", {}, x))),
      rows) : h("p", {}, "No traffic yet.")));
  }

  /* -- try it ------------------------------------------------------------------------- */
  function exampleValue(spec) {
    const dims = spec.shape === null ? [1] : spec.shape.map((d) => (d === null ? 1 : d));
    const leaf = spec.dtype === "string" ? "" : spec.dtype === "bool" ? false : 0;
    const build = (i) => (i === dims.length ? leaf : Array.from({ length: dims[i] }, () => build(i + 1)));
    return JSON.stringify(build(0));
  }

  function currentVersion(key) {
    const [model, version] = (key || "").split("/");
    const m = state.models.find((x) => x.name === model);
    return m ? m.versions.find((v) => String(v.version) === version) : null;
  }

  function showTry(key) {
    if (key) $("#try-target").value = key;
    const v = currentVersion($("#try-target").value);
    const sigSel = $("#try-signature");
    const keep = sigSel.value;
    sigSel.innerHTML = "";
    if (!v) return;
    for (const k in v.signatures) sigSel.appendChild(h("option", { value: k }, k));
    sigSel.value = keep in v.signatures ? keep : v.default_signature;
    buildForm();
  }

  function buildForm() {
    const v = currentVersion($("#try-target").value);
    const form = $("#try-form");
    form.innerHTML = "";
    if (!v) return;
    const sig = v.signatures[$("#try-signature").value];
    for (const alias in sig.inputs) {
      const spec = sig.inputs[alias];
      form.appendChild(h("div", { class: "input" },
        h("label", {}, h("b", {}, alias), ` ${spec.dtype} ${shapeText(spec.shape)} (JSON)`),
        h("textarea", { name: alias, "data-input": alias }, exampleValue(spec))));
    }
    form.appendChild(h("button", { type: "submit", id: "try-submit" }, "Predict"));
  }

  async function predict(ev) {
    ev.preventDefault();
    const [model, version] = $("#try-target").value.split("/");
    const out = $("#try-result");
    const inputs = {};
    for (const ta of document.querySelectorAll("#try-form textarea")) {
      try {
        inputs[ta.name] = JSON.parse(ta.value);
      } catch (e) {
        out.innerHTML = "";
        out.appendChild(h("p", { class: "error" }, `input '${ta.name}' is not valid JSON: ${e.message}`));
        return;
      }
    }
    const body = JSON.stringify({ signature_name: $("#try-signature").value, inputs });
    const t0 = performance.now();
    const r = await api(`/v1/models/${encodeURIComponent(model)}/versions/${encodeURIComponent(version)}:predict`,
      { method: "POST", body, headers: { "Content-Type": "application/json" } });
    const ms = performance.now() - t0;
    out.innerHTML = "";
    out.appendChild(h("p", { id: "try-latency", "data-status": r.status },
      `HTTP ${r.status} in ${ms.toFixed(1)} ms (round trip from this browser)`));
    out.appendChild(h("pre", { id: "try-response", class: r.ok ? "" : "error" }, JSON.stringify(r.body, null, 2)));
  }

  /* -- navigation --------------------------------------------------------------------- */
  let trafficTimer = null;

  function route() {
    const [view, ...rest] = (location.hash.slice(1) || "models").split("/");
    const key = rest.length === 2 ? rest.join("/") : null;
    const name = ["models", "graph", "traffic", "try"].includes(view) ? view : "models";
    for (const s of document.querySelectorAll(".view")) s.classList.toggle("active", s.id === "view-" + name);
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === name);
    clearInterval(trafficTimer);
    trafficTimer = null;
    if (name === "graph") showGraph(key || $("#graph-target").value);
    if (name === "try") showTry(key);
    if (name === "traffic") {
      pollTraffic();
      trafficTimer = setInterval(pollTraffic, 2000);
    }
    if (name === "models") loadModels();
  }

  // While a version is changing state (loading, unloading), keep the models view current.
  const TRANSIENT = new Set(["START", "LOADING", "UNLOADING"]);
  setInterval(() => {
    const changing = state.models.some((m) => m.versions.some((v) => TRANSIENT.has(v.state)));
    if (changing && $("#view-models").classList.contains("active")) loadModels();
  }, 2000);

  $("#graph-target").addEventListener("change", (e) => { location.hash = "graph/" + e.target.value; });
  $("#try-target").addEventListener("change", (e) => { location.hash = "try/" + e.target.value; });
  $("#try-signature").addEventListener("change", buildForm);
  $("#try-form").addEventListener("submit", predict);
  window.addEventListener("hashchange", route);
  loadModels().then(route);
})();
