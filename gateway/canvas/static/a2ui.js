// The canvas host's A2UI renderer: A2UI v0.8 and v0.9 messages drawn with the standard catalog, no build
// step, no network. The node pushes checked messages with window.remoteclawA2UI.push(messages); a button
// press goes back through window.remoteclawA2UIAction (a binding the node installs), a DOM event
// ("a2uiaction") and window.__a2uiActions. Pushed text is only ever set as text, never parsed as HTML.
(() => {
  "use strict";
  const surfaces = new Map();
  const rootEl = document.getElementById("a2ui-root");
  const emptyEl = document.getElementById("a2ui-empty");
  window.__a2uiActions = [];

  // -- the data model ---------------------------------------------------------------------------------
  const segments = (path) => path.split("/").filter(Boolean).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  const absolute = (path, scope) => (path.startsWith("/") ? path : `${scope.replace(/\/$/, "")}/${path}`);

  function getPath(data, path) {
    let node = data;
    for (const key of segments(path)) {
      if (node === null || typeof node !== "object") return undefined;
      node = node[key];
    }
    return node;
  }

  function setPath(data, path, value) {
    const keys = segments(path);
    if (!keys.length) return value;
    let node = data;
    keys.slice(0, -1).forEach((key, i) => {
      if (node[key] === null || typeof node[key] !== "object") node[key] = /^\d+$/.test(keys[i + 1]) ? [] : {};
      node = node[key];
    });
    node[keys[keys.length - 1]] = value;
    return data;
  }

  function fromContents(contents) {  // v0.8 adjacency list -> plain object
    const out = {};
    for (const entry of contents || []) {
      if ("valueString" in entry) out[entry.key] = entry.valueString;
      else if ("valueNumber" in entry) out[entry.key] = entry.valueNumber;
      else if ("valueBoolean" in entry) out[entry.key] = entry.valueBoolean;
      else if ("valueMap" in entry) out[entry.key] = fromContents(entry.valueMap);
    }
    return out;
  }

  function merge(target, value) {
    if (value && typeof value === "object" && !Array.isArray(value) && target && typeof target === "object") {
      for (const [k, v] of Object.entries(value)) target[k] = merge(target[k], v);
      return target;
    }
    return value;
  }

  // A bound value: v0.8 {literalString|literalNumber|literalBoolean|literalArray, path}; v0.9 a literal or
  // {path}. A path that holds data wins; the literal is its initial value.
  function resolve(s, v, scope) {
    if (v === null || v === undefined) return undefined;
    if (typeof v !== "object") return typeof v === "string" && s.version === "v0.9" ? interpolate(s, v, scope) : v;
    if (Array.isArray(v)) return v;
    const literal = ["literalString", "literalNumber", "literalBoolean", "literalArray"].find((k) => k in v);
    if (v.path !== undefined) {
      const found = getPath(s.data, absolute(v.path, scope));
      if (found !== undefined) return found;
      if (literal) s.data = setPath(s.data, absolute(v.path, scope), v[literal]);
    }
    return literal ? v[literal] : undefined;
  }

  function interpolate(s, text, scope) {
    return text.replace(/\$\{([^}]+)\}/g, (_m, path) => {
      const found = getPath(s.data, absolute(path.trim(), scope));
      return found === undefined || found === null ? "" : String(found);
    });
  }

  const pathOf = (v, scope) => (v && typeof v === "object" && typeof v.path === "string" ? absolute(v.path, scope) : null);

  // -- messages ---------------------------------------------------------------------------------------
  function surface(id, version) {
    let s = surfaces.get(id);
    if (!s) {
      const el = document.createElement("section");
      el.className = "a2ui-surface";
      el.dataset.surfaceId = id;
      rootEl.appendChild(el);
      s = {id, version, components: new Map(), data: {}, root: null, ready: false, el};
      surfaces.set(id, s);
    }
    return s;
  }

  function normalize(raw, version) {
    if (version === "v0.9") {
      const {id, component, ...props} = raw;
      return {id, type: component, props};
    }
    const type = Object.keys(raw.component)[0];
    return {id: raw.id, type, props: raw.component[type] || {}};
  }

  function apply(message) {
    const version = message.version === "v0.9" ? "v0.9" : "v0.8";
    const key = Object.keys(message).find((k) => k !== "version");
    const body = message[key];
    if (key === "deleteSurface") {
      const s = surfaces.get(body.surfaceId);
      if (s) { s.el.remove(); surfaces.delete(body.surfaceId); }
      return null;
    }
    const s = surface(body.surfaceId, version);
    s.version = version;
    if (key === "surfaceUpdate" || key === "updateComponents") {
      for (const raw of body.components) { const c = normalize(raw, version); s.components.set(c.id, c); }
      if (version === "v0.9" && s.components.has("root")) { s.root = "root"; s.ready = s.ready || s.created; }
    } else if (key === "dataModelUpdate") {
      const value = fromContents(body.contents);
      const path = body.path || "/";
      s.data = path === "/" ? merge(s.data, value) : setPath(s.data, path, merge(getPath(s.data, path) || {}, value));
    } else if (key === "updateDataModel") {
      const path = body.path || "/";
      s.data = path === "/" ? (body.value === undefined ? {} : body.value) : setPath(s.data, path, body.value);
    } else if (key === "beginRendering") {
      s.root = body.root;
      s.ready = true;
    } else if (key === "createSurface") {
      s.created = true;
      s.catalogId = body.catalogId;
      if (s.components.has("root")) { s.root = "root"; s.ready = true; }
    }
    return s;
  }

  // -- components ---------------------------------------------------------------------------------------
  function el(tag, cls, c) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (c) { node.dataset.a2uiId = c.id; node.dataset.a2uiType = c.type; }
    return node;
  }

  function childIds(s, children, scope) {  // -> [[id, scope]]
    if (!children) return [];
    if (Array.isArray(children)) return children.map((id) => [id, scope]);
    if (children.explicitList) return children.explicitList.map((id) => [id, scope]);
    const template = children.template || (children.componentId ? children : null);
    if (!template) return [];
    const bound = absolute(template.dataBinding || template.path || "/", scope);
    const items = getPath(s.data, bound);
    if (!items || typeof items !== "object") return [];
    const keys = Array.isArray(items) ? items.map((_v, i) => String(i)) : Object.keys(items);
    return keys.map((k) => [template.componentId, `${bound.replace(/\/$/, "")}/${k}`]);
  }

  function field(labelText, input, c) {
    const wrap = el("label", "a2ui-field", c);
    if (labelText) { const span = document.createElement("span"); span.textContent = labelText; wrap.append(span); }
    wrap.append(input);
    return wrap;
  }

  function bindInput(s, input, bound, scope, read) {
    const path = pathOf(bound, scope);
    if (!path) return;
    const update = () => { s.data = setPath(s.data, path, read()); };
    input.addEventListener("input", update);
    input.addEventListener("change", update);
  }

  function fire(s, c, scope) {
    const a = c.props.action || {};
    const named = a.event && typeof a.event === "object" ? a.event : a;
    const context = {};
    const raw = named.context || [];
    if (Array.isArray(raw)) for (const entry of raw) context[entry.key] = resolve(s, entry.value, scope);
    else for (const [k, v] of Object.entries(raw)) context[k] = resolve(s, v, scope);
    const action = {name: named.name, surfaceId: s.id, sourceComponentId: c.id, timestamp: new Date().toISOString(),
      context};
    window.__a2uiActions.push(action);
    window.dispatchEvent(new CustomEvent("a2uiaction", {detail: action}));
    if (typeof window.remoteclawA2UIAction === "function") {
      try { Promise.resolve(window.remoteclawA2UIAction(action)).catch(() => {}); } catch (_e) { /* no node */ }
    }
  }

  const safeUrl = (u) => (typeof u === "string" && /^(https?:|data:image\/)/i.test(u) ? u : null);

  function build(s, id, scope, depth) {
    const c = s.components.get(id);
    if (!c || depth > 64) {
      const missing = el("span", "a2ui-missing");
      missing.textContent = c ? "(nested too deeply)" : `(missing component ${id})`;
      return missing;
    }
    const p = c.props;
    const kids = (children) => childIds(s, children, scope).map(([cid, sc]) => build(s, cid, sc, depth + 1));
    switch (c.type) {
      case "Text": {
        const hint = p.usageHint || p.variant || "body";
        const tag = /^h[1-5]$/.test(hint) ? hint : hint === "caption" ? "small" : "p";
        const node = el(tag, `a2ui-text${hint === "caption" ? " a2ui-caption" : ""}`, c);
        const value = resolve(s, p.text, scope);
        node.textContent = value === undefined || value === null ? "" : String(value);
        return node;
      }
      case "Image": {
        const node = el("img", "a2ui-image", c);
        const url = safeUrl(resolve(s, p.url, scope));
        if (url) node.src = url;
        node.alt = String(resolve(s, p.altText || p.description, scope) || "");
        if (p.fit) node.style.objectFit = p.fit;
        return node;
      }
      case "Icon": {
        const node = el("span", "a2ui-icon", c);
        node.textContent = String(resolve(s, p.name, scope) || "•");
        return node;
      }
      case "Video": case "AudioPlayer": {
        const node = el(c.type === "Video" ? "video" : "audio", "", c);
        const url = safeUrl(resolve(s, p.url, scope));
        if (url) node.src = url;
        node.controls = true;
        return node;
      }
      case "Row": case "Column": {
        const node = el("div", c.type === "Row" ? "a2ui-row" : "a2ui-column", c);
        const justify = {start: "flex-start", end: "flex-end", center: "center", spaceBetween: "space-between",
          spaceAround: "space-around", spaceEvenly: "space-evenly"}[p.distribution || p.justify];
        if (justify) node.style.justifyContent = justify;
        const align = {start: "flex-start", end: "flex-end", center: "center", stretch: "stretch"}[p.alignment || p.align];
        if (align) node.style.alignItems = align;
        node.append(...kids(p.children));
        return node;
      }
      case "List": {
        const node = el("ul", `a2ui-list${p.direction === "horizontal" ? " horizontal" : ""}`, c);
        for (const child of kids(p.children)) { const li = document.createElement("li"); li.append(child); node.append(li); }
        return node;
      }
      case "Card": {
        const node = el("div", "a2ui-card", c);
        node.append(build(s, p.child, scope, depth + 1));
        return node;
      }
      case "Divider": return el("hr", "a2ui-divider", c);
      case "Tabs": {
        const node = el("div", "a2ui-tabs", c);
        const bar = el("div", "a2ui-tabs-bar");
        const panel = el("div", "a2ui-tab-panel");
        const items = p.tabItems || p.tabs || [];
        const show = (i) => {
          [...bar.children].forEach((b, j) => b.classList.toggle("active", i === j));
          panel.replaceChildren(build(s, items[i].child, scope, depth + 1));
        };
        items.forEach((item, i) => {
          const tab = el("button", "a2ui-tab");
          tab.type = "button";
          tab.textContent = String(resolve(s, item.title, scope) || `Tab ${i + 1}`);
          tab.addEventListener("click", () => show(i));
          bar.append(tab);
        });
        node.append(bar, panel);
        if (items.length) show(0);
        return node;
      }
      case "Modal": {
        const node = el("div", "a2ui-modal", c);
        const content = el("div", "a2ui-card");
        content.hidden = true;
        content.append(build(s, p.contentChild, scope, depth + 1));
        const entry = build(s, p.entryPointChild, scope, depth + 1);
        entry.addEventListener("click", () => { content.hidden = !content.hidden; });
        node.append(entry, content);
        return node;
      }
      case "Button": {
        const node = el("button", `a2ui-button${p.primary || p.variant === "primary" ? " primary" : ""}`, c);
        node.type = "button";
        node.append(build(s, p.child, scope, depth + 1));
        node.addEventListener("click", () => fire(s, c, scope));
        return node;
      }
      case "CheckBox": {
        const wrap = el("label", "a2ui-check", c);
        const box = document.createElement("input");
        box.type = "checkbox";
        box.checked = Boolean(resolve(s, p.value, scope));
        bindInput(s, box, p.value, scope, () => box.checked);
        const text = document.createElement("span");
        text.textContent = String(resolve(s, p.label, scope) || "");
        wrap.append(box, text);
        return wrap;
      }
      case "TextField": {
        const bound = p.text !== undefined ? p.text : p.value;
        const type = p.textFieldType || p.variant || "shortText";
        const input = document.createElement(type === "longText" ? "textarea" : "input");
        if (input.tagName === "INPUT") {
          input.type = {number: "number", obscured: "password", date: "date"}[type] || "text";
        }
        const value = resolve(s, bound, scope);
        input.value = value === undefined || value === null ? "" : String(value);
        bindInput(s, input, bound, scope, () => (input.type === "number" ? Number(input.value) : input.value));
        return field(String(resolve(s, p.label, scope) || ""), input, c);
      }
      case "DateTimeInput": {
        const input = document.createElement("input");
        const date = p.enableDate !== false, time = Boolean(p.enableTime);
        input.type = date && time ? "datetime-local" : time ? "time" : "date";
        input.value = String(resolve(s, p.value, scope) || "");
        bindInput(s, input, p.value, scope, () => input.value);
        return field(String(resolve(s, p.label, scope) || ""), input, c);
      }
      case "MultipleChoice": case "ChoicePicker": {
        const node = el("fieldset", "a2ui-choices", c);
        const bound = p.selections !== undefined ? p.selections : p.value;
        const max = p.maxAllowedSelections || (p.variant === "mutuallyExclusive" ? 1 : undefined);
        const chosen = () => { const v = resolve(s, bound, scope); return Array.isArray(v) ? v.map(String) : v ? [String(v)] : []; };
        const path = pathOf(bound, scope);
        const group = `${s.id}-${c.id}-${scope}`;
        for (const option of p.options || []) {
          const value = String(resolve(s, option.value, scope));
          const row = el("label", "a2ui-check");
          const input = document.createElement("input");
          input.type = max === 1 ? "radio" : "checkbox";
          input.name = group;
          input.value = value;
          input.checked = chosen().includes(value);
          input.addEventListener("change", () => {
            let next = max === 1 ? [value] : chosen().filter((v) => v !== value);
            if (max !== 1 && input.checked) next.push(value);
            if (max && next.length > max) { input.checked = false; next = next.filter((v) => v !== value); }
            if (path) s.data = setPath(s.data, path, next);
          });
          const text = document.createElement("span");
          text.textContent = String(resolve(s, option.label, scope) || value);
          row.append(input, text);
          node.append(row);
        }
        return node;
      }
      case "Slider": {
        const input = document.createElement("input");
        input.type = "range";
        input.min = String(p.minValue !== undefined ? p.minValue : p.min !== undefined ? p.min : 0);
        input.max = String(p.maxValue !== undefined ? p.maxValue : p.max !== undefined ? p.max : 100);
        const value = resolve(s, p.value, scope);
        if (value !== undefined) input.value = String(value);
        bindInput(s, input, p.value, scope, () => Number(input.value));
        return field(String(resolve(s, p.label, scope) || ""), input, c);
      }
      default: {
        const node = el("span", "a2ui-missing", c);
        node.textContent = `(unsupported component ${c.type})`;
        return node;
      }
    }
  }

  function render(s) {
    if (!s.ready || !s.root) { s.el.replaceChildren(); return; }
    s.el.replaceChildren(build(s, s.root, "/", 0));
  }

  function refreshEmpty() { emptyEl.hidden = [...surfaces.values()].some((s) => s.ready); }

  window.remoteclawA2UI = {
    push(messages) {
      const touched = new Set();
      for (const message of messages) { const s = apply(message); if (s) touched.add(s); }
      touched.forEach(render);
      refreshEmpty();
      return {ok: true, surfaces: [...surfaces.keys()]};
    },
    reset() {
      surfaces.clear();
      rootEl.replaceChildren();
      window.__a2uiActions = [];
      refreshEmpty();
      return {ok: true};
    },
    state() {
      const out = {};
      for (const [id, s] of surfaces) out[id] = {root: s.root, ready: s.ready, dataModel: s.data, components: s.components.size};
      return {surfaces: out};
    },
  };
  refreshEmpty();
})();
