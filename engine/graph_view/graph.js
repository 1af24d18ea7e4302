/* flowserve graph view: draws a graph description (engine.graph_inspection.describe_graph)
 * with name scopes collapsed into boxes that expand on click, as TensorBoard's graph view
 * does. Layout by dagre (vendored); drawing, pan/zoom and hover details here.
 *
 *   const view = FlowGraph.create(containerElement, description, {maxNodes: 1500});
 *   view.expand("hidden"); view.collapse("hidden"); view.nodeCount();
 *
 * A scope is every name prefix ("a", "a/b") that other ops live under; an op whose name is
 * itself a scope ("normalized" beside "normalized/y") is drawn inside that scope. The
 * container gets data-node-count / data-edge-count / data-layout-ms after each drawing.
 */
(function (global) {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const NODE_H = 26;
  const CHAR_W = 7;

  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function srcOp(tensorName) {
    const i = tensorName.lastIndexOf(":");
    return i < 0 ? tensorName : tensorName.slice(0, i);
  }

  function shapeText(shape) {
    if (shape === null || shape === undefined) return "<unknown>";
    return "[" + shape.map((d) => (d === null ? "?" : d)).join(", ") + "]";
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    })[c]);
  }

  /* Scopes and, per op, the chain of scopes it sits in (outermost first). */
  function buildHierarchy(ops) {
    const scopes = new Map();
    const chains = new Map();
    for (const op of ops) {
      const parts = op.name.split("/");
      const chain = [];
      for (let i = 1; i < parts.length; i++) chain.push(parts.slice(0, i).join("/"));
      chains.set(op.name, chain);
      for (const p of chain) {
        if (!scopes.has(p)) scopes.set(p, { name: p, ops: 0, types: new Map() });
      }
    }
    for (const op of ops) {
      const chain = chains.get(op.name);
      if (scopes.has(op.name)) chain.push(op.name);
      for (const p of chain) {
        const s = scopes.get(p);
        s.ops += 1;
        s.types.set(op.type, (s.types.get(op.type) || 0) + 1);
      }
    }
    return { scopes, chains };
  }

  class GraphView {
    constructor(container, description, options) {
      this.container = container;
      this.ops = description.ops || [];
      this.byName = new Map(this.ops.map((op) => [op.name, op]));
      this.options = Object.assign({ maxNodes: 1500, rankdir: "TB" }, options || {});
      const h = buildHierarchy(this.ops);
      this.scopes = h.scopes;
      this.chains = h.chains;
      this.expanded = new Set();
      this.transform = null;
      container.classList.add("fg-container");
      container.innerHTML = "";
      this.message = document.createElement("div");
      this.message.className = "fg-message";
      container.appendChild(this.message);
      this.svg = el("svg", { class: "fg-svg", width: "100%", height: "100%" }, container);
      const defs = el("defs", {}, this.svg);
      const marker = el("marker", {
        id: "fg-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5",
        markerWidth: "8", markerHeight: "8", markerUnits: "userSpaceOnUse", orient: "auto",
      }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", class: "fg-arrowhead" }, marker);
      this.viewport = el("g", { class: "fg-viewport" }, this.svg);
      this.tooltip = document.createElement("div");
      this.tooltip.className = "fg-tooltip";
      this.tooltip.style.display = "none";
      container.appendChild(this.tooltip);
      this._bindPanZoom();
      this.render();
    }

    /* The visible node an op is drawn as: its outermost collapsed scope, or itself. */
    representative(name) {
      const chain = this.chains.get(name) || [];
      for (const p of chain) if (!this.expanded.has(p)) return "s:" + p;
      if (this.scopes.has(name) && !this.expanded.has(name)) return "s:" + name;
      return "o:" + name;
    }

    expand(scope) {
      if (!this.scopes.has(scope)) return false;
      // Expanding a scope expands the scopes around it too, so it becomes visible.
      const parts = scope.split("/");
      for (let i = 1; i <= parts.length; i++) this.expanded.add(parts.slice(0, i).join("/"));
      this.render();
      return true;
    }

    collapse(scope) {
      for (const s of Array.from(this.expanded)) {
        if (s === scope || s.startsWith(scope + "/")) this.expanded.delete(s);
      }
      this.render();
    }

    nodeCount() {
      return Number(this.container.dataset.nodeCount || 0);
    }

    _visible() {
      const nodes = new Map();
      const edges = new Map();
      for (const op of this.ops) {
        const id = this.representative(op.name);
        if (!nodes.has(id)) nodes.set(id, { id, ops: 0 });
        nodes.get(id).ops += 1;
        const add = (from, control, tensor) => {
          const src = this.representative(from);
          if (src === id || !this.byName.has(from)) return;
          const key = src + "\u0000" + id;
          const e = edges.get(key);
          if (e) {
            e.count += 1;
            e.control = e.control && control;
          } else {
            edges.set(key, { v: src, w: id, count: 1, control, tensor });
          }
        };
        for (const t of op.inputs) add(srcOp(t), false, t);
        for (const c of op.control_inputs) add(c, true, null);
      }
      return { nodes, edges };
    }

    /* The innermost expanded scope a visible node sits in (its cluster), or null. */
    _clusterOf(id) {
      const name = id.slice(2);
      let chain = this.chains.get(name);
      if (id.startsWith("s:")) {
        const parts = name.split("/");
        chain = [];
        for (let i = 1; i < parts.length; i++) chain.push(parts.slice(0, i).join("/"));
      } else if (this.scopes.has(name)) {
        chain = chain.concat([name]);
      }
      let found = null;
      for (const p of chain || []) if (this.expanded.has(p)) found = p;
      return found;
    }

    render() {
      const t0 = performance.now();
      this._hideTip();  // its element may be redrawn under the pointer, with no mouseleave
      const { nodes, edges } = this._visible();
      let notice = this._notice || "";
      this._notice = "";
      if (nodes.size > this.options.maxNodes) {
        if (this._lastExpanded) {
          // Undo the expansion that went over the limit and say why.
          this.expanded = this._lastExpanded;
          this._lastExpanded = null;
          this._notice =
            `Expanding that scope would draw ${nodes.size} nodes (the limit is ` +
            `${this.options.maxNodes}); collapse other scopes first.`;
          return this.render();
        }
        notice = `This graph has ${nodes.size} nodes outside name scopes; drawing may be slow.`;
      }
      this.message.textContent = notice;
      this.message.style.display = notice ? "block" : "none";
      this._lastExpanded = new Set(this.expanded);
      const g = new dagre.graphlib.Graph({ compound: true });
      g.setGraph({ rankdir: this.options.rankdir, nodesep: 18, ranksep: 28, marginx: 20, marginy: 20 });
      g.setDefaultEdgeLabel(() => ({}));
      const clusters = new Set();
      for (const [id, n] of nodes) {
        const label = this._label(id, n);
        g.setNode(id, { label, width: Math.max(60, label.length * CHAR_W + 20), height: NODE_H });
        let c = this._clusterOf(id);
        if (c) g.setParent(id, "c:" + c);
        while (c && !clusters.has(c)) {
          clusters.add(c);
          g.setNode("c:" + c, { label: c, clusterLabelPos: "top", paddingTop: 24 });
          const parts = c.split("/");
          let outer = null;
          for (let i = parts.length - 1; i >= 1 && !outer; i--) {
            const p = parts.slice(0, i).join("/");
            if (this.expanded.has(p)) outer = p;
          }
          if (outer) g.setParent("c:" + c, "c:" + outer);
          c = outer;
        }
      }
      for (const e of edges.values()) g.setEdge(e.v, e.w, e);
      dagre.layout(g);
      this._draw(g, nodes, clusters);
      const ms = performance.now() - t0;
      this.container.dataset.nodeCount = String(nodes.size);
      this.container.dataset.edgeCount = String(edges.size);
      this.container.dataset.layoutMs = ms.toFixed(1);
      if (this.options.onRender) this.options.onRender(this);
    }

    _label(id, n) {
      const name = id.slice(2);
      const short = name.slice(name.lastIndexOf("/") + 1);
      if (id.startsWith("s:")) return `${short} (${this.scopes.get(name).ops})`;
      return short;
    }

    _draw(g, nodes, clusters) {
      const vp = this.viewport;
      while (vp.firstChild) vp.removeChild(vp.firstChild);
      const clusterLayer = el("g", { class: "fg-clusters" }, vp);
      const edgeLayer = el("g", { class: "fg-edges" }, vp);
      const nodeLayer = el("g", { class: "fg-nodes" }, vp);
      const sortedClusters = Array.from(clusters).sort((a, b) => a.length - b.length);
      for (const c of sortedClusters) {
        const n = g.node("c:" + c);
        const grp = el("g", { class: "cluster", "data-scope": c }, clusterLayer);
        el("rect", {
          x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height,
          rx: 6, ry: 6,
        }, grp);
        const label = el("text", { x: n.x - n.width / 2 + 8, y: n.y - n.height / 2 + 15 }, grp);
        label.textContent = "\u2212 " + c.slice(c.lastIndexOf("/") + 1);
        label.addEventListener("click", (ev) => { ev.stopPropagation(); this.collapse(c); });
        grp.addEventListener("mousemove", (ev) => this._showScope(ev, c, true));
        grp.addEventListener("mouseleave", () => this._hideTip());
      }
      for (const e of g.edges()) {
        const info = g.edge(e);
        const pts = info.points || [];
        if (!pts.length) continue;
        const d = "M" + pts.map((p) => `${p.x},${p.y}`).join("L");
        const cls = "fg-edge" + (info.control ? " control" : "");
        const path = el("path", { d, class: cls, "marker-end": "url(#fg-arrow)" }, edgeLayer);
        path.style.strokeWidth = String(Math.min(1 + Math.log2(info.count || 1), 5));
      }
      for (const [id] of nodes) {
        const n = g.node(id);
        const isScope = id.startsWith("s:");
        const name = id.slice(2);
        const op = isScope ? null : this.byName.get(name);
        const grp = el("g", {
          class: "node " + (isScope ? "scope" : "op"),
          "data-name": name,
          transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})`,
        }, nodeLayer);
        if (op) grp.setAttribute("data-type", op.type);
        el("rect", { width: n.width, height: n.height, rx: isScope ? 4 : 12, ry: isScope ? 4 : 12 }, grp);
        const text = el("text", { x: n.width / 2, y: n.height / 2 + 4, "text-anchor": "middle" }, grp);
        text.textContent = n.label;
        if (isScope) {
          grp.addEventListener("click", (ev) => { ev.stopPropagation(); this._hideTip(); this.expand(name); });
          grp.addEventListener("mousemove", (ev) => this._showScope(ev, name, false));
        } else {
          grp.addEventListener("mousemove", (ev) => this._showOp(ev, op));
        }
        grp.addEventListener("mouseleave", () => this._hideTip());
      }
      this.size = { width: g.graph().width || 1, height: g.graph().height || 1 };
      if (!this.transform) this.fit();
      else this._apply();
    }

    fit() {
      const box = this.svg.getBoundingClientRect();
      const w = box.width || 800;
      const h = box.height || 600;
      const k = Math.min(w / this.size.width, h / this.size.height, 1.5);
      this.transform = {
        k, x: (w - this.size.width * k) / 2, y: Math.max(0, (h - this.size.height * k) / 2),
      };
      this._apply();
    }

    _apply() {
      const t = this.transform;
      this.viewport.setAttribute("transform", `translate(${t.x},${t.y}) scale(${t.k})`);
    }

    _bindPanZoom() {
      let drag = null;
      this.svg.addEventListener("wheel", (ev) => {
        ev.preventDefault();
        const box = this.svg.getBoundingClientRect();
        const mx = ev.clientX - box.left;
        const my = ev.clientY - box.top;
        const t = this.transform;
        const k = Math.min(Math.max(t.k * Math.exp(-ev.deltaY * 0.0015), 0.02), 8);
        t.x = mx - ((mx - t.x) * k) / t.k;
        t.y = my - ((my - t.y) * k) / t.k;
        t.k = k;
        this._apply();
      }, { passive: false });
      this.svg.addEventListener("mousedown", (ev) => {
        drag = { x: ev.clientX, y: ev.clientY, tx: this.transform.x, ty: this.transform.y };
        this.svg.classList.add("dragging");
      });
      global.addEventListener("mousemove", (ev) => {
        if (!drag) return;
        this.transform.x = drag.tx + ev.clientX - drag.x;
        this.transform.y = drag.ty + ev.clientY - drag.y;
        this._apply();
      });
      global.addEventListener("mouseup", () => {
        drag = null;
        this.svg.classList.remove("dragging");
      });
      this.svg.addEventListener("dblclick", () => this.fit());
    }

    _tip(ev, html) {
      const box = this.container.getBoundingClientRect();
      this.tooltip.innerHTML = html;
      this.tooltip.style.display = "block";
      const x = ev.clientX - box.left + 14;
      const y = ev.clientY - box.top + 14;
      this.tooltip.style.left = Math.min(x, box.width - this.tooltip.offsetWidth - 4) + "px";
      this.tooltip.style.top = Math.min(y, box.height - this.tooltip.offsetHeight - 4) + "px";
    }

    _hideTip() {
      this.tooltip.style.display = "none";
    }

    _showOp(ev, op) {
      const rows = [
        `<div class="fg-tip-title">${escapeHtml(op.name)}</div>`,
        `<div><b>type</b> ${escapeHtml(op.type)}</div>`,
        `<div><b>device</b> ${escapeHtml(op.device || "(any)")}</div>`,
      ];
      if (op.inputs.length) {
        rows.push(`<div><b>inputs</b> ${op.inputs.map(escapeHtml).join(", ")}</div>`);
      }
      if (op.control_inputs.length) {
        rows.push(`<div><b>control inputs</b> ${op.control_inputs.map(escapeHtml).join(", ")}</div>`);
      }
      op.outputs.forEach((o, i) => {
        rows.push(`<div><b>output ${i}</b> ${escapeHtml(o.dtype)} ${escapeHtml(shapeText(o.shape))}</div>`);
      });
      for (const k in op.attrs) {
        rows.push(`<div><b>${escapeHtml(k)}</b> ${escapeHtml(JSON.stringify(op.attrs[k]))}</div>`);
      }
      this._tip(ev, rows.join(""));
    }

    _showScope(ev, name, expanded) {
      const s = this.scopes.get(name);
      const types = Array.from(s.types.entries()).sort((a, b) => b[1] - a[1]).slice(0, 8);
      const rows = [
        `<div class="fg-tip-title">${escapeHtml(name)}</div>`,
        `<div>name scope, ${s.ops} ops (${expanded ? "click its title to collapse" : "click to expand"})</div>`,
      ];
      for (const [t, n] of types) rows.push(`<div><b>${escapeHtml(t)}</b> ${n}</div>`);
      this._tip(ev, rows.join(""));
    }
  }

  global.FlowGraph = {
    create: (container, description, options) => new GraphView(container, description, options),
    buildHierarchy,
  };
})(window);
