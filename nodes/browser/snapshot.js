// Runs in the page (Playwright evaluate). Builds an accessibility-style outline of the page with a ref on
// every element an agent may want to act on, and tags those elements with data-rc-ref so the node can find
// them again (refs stay stable while the element lives, which makes snapshot diffs meaningful).
// Returns {nodes: [{depth, role, name, ref, props, interactive}], refs: {ref: {role, name}}, truncated}.
(opts) => {
  const INTERACTIVE_ROLES = new Set(["link", "button", "textbox", "searchbox", "checkbox", "radio", "combobox",
    "listbox", "option", "slider", "spinbutton", "switch", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "treeitem"]);
  const SKIP_TAGS = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "META", "LINK", "HEAD", "SVG"]);
  const LANDMARKS = {NAV: "navigation", MAIN: "main", HEADER: "banner", FOOTER: "contentinfo", ASIDE: "complementary",
    FORM: "form", SECTION: "region", ARTICLE: "article", DIALOG: "dialog", UL: "list", OL: "list", LI: "listitem",
    TABLE: "table", TR: "row", TD: "cell", TH: "columnheader", P: "paragraph", IMG: "img", HR: "separator",
    FIELDSET: "group", LABEL: "label", PRE: "code", BLOCKQUOTE: "blockquote", FIGURE: "figure", OPTION: "option",
    SUMMARY: "button", DETAILS: "group", PROGRESS: "progressbar"};
  const seq = () => (window.__rcRefSeq = (window.__rcRefSeq || 0) + 1);
  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const squash = (s) => (s || "").replace(/\s+/g, " ").trim();

  function role(el) {
    const explicit = el.getAttribute("role");
    if (explicit) return explicit.split(" ")[0];
    const tag = el.tagName;
    if (tag === "A") return el.hasAttribute("href") ? "link" : "generic";
    if (tag === "BUTTON") return "button";
    if (/^H[1-6]$/.test(tag)) return "heading";
    if (tag === "SELECT") return el.multiple || el.size > 1 ? "listbox" : "combobox";
    if (tag === "TEXTAREA") return "textbox";
    if (tag === "INPUT") {
      const t = (el.getAttribute("type") || "text").toLowerCase();
      return {button: "button", submit: "button", reset: "button", image: "button", checkbox: "checkbox",
        radio: "radio", range: "slider", number: "spinbutton", search: "searchbox", hidden: null,
        email: "textbox", tel: "textbox", url: "textbox", text: "textbox", password: "textbox",
        date: "textbox", "datetime-local": "textbox", time: "textbox", month: "textbox", week: "textbox",
        color: "button", file: "button"}[t] ?? "textbox";
    }
    if (el.isContentEditable && el.getAttribute("contenteditable") !== null) return "textbox";
    return LANDMARKS[tag] || "generic";
  }

  function labelFor(el) {
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const text = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean)
        .map((n) => squash(n.textContent)).join(" ");
      if (text) return text;
    }
    const aria = el.getAttribute("aria-label");
    if (aria) return squash(aria);
    if (el.labels && el.labels.length) return squash([...el.labels].map((l) => l.textContent).join(" "));
    return "";
  }

  function name(el, r) {
    const label = labelFor(el);
    if (label) return label;
    if (el.tagName === "IMG") return squash(el.getAttribute("alt") || el.getAttribute("title") || "");
    if (el.tagName === "INPUT") {
      const t = (el.getAttribute("type") || "").toLowerCase();
      if (["button", "submit", "reset"].includes(t)) return squash(el.value || t);
      return squash(el.getAttribute("placeholder") || el.getAttribute("title") || "");
    }
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT") return squash(el.getAttribute("placeholder") || el.getAttribute("title") || "");
    if (["link", "button", "heading", "tab", "option", "menuitem", "cell", "columnheader", "listitem", "label",
      "paragraph", "treeitem", "code", "blockquote"].includes(r)) return squash(el.innerText || el.textContent);
    return squash(el.getAttribute("title") || "");
  }

  function visible(el) {
    if (el.getAttribute("aria-hidden") === "true" || el.hidden) return false;
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden" || style.visibility === "collapse") return false;
    if (el.tagName === "OPTION") return true;
    const box = el.getBoundingClientRect();
    return box.width > 0 || box.height > 0 || style.display === "contents";
  }

  function isInteractive(el, r) {
    if (INTERACTIVE_ROLES.has(r)) return true;
    if (el.hasAttribute("onclick")) return true;
    const tabindex = el.getAttribute("tabindex");
    if (tabindex !== null && Number(tabindex) >= 0 && r !== "generic") return true;
    return false;
  }

  function props(el, r) {
    const out = {};
    if (r === "heading") out.level = Number(el.getAttribute("aria-level") || el.tagName.slice(1)) || undefined;
    if (el.disabled || el.getAttribute("aria-disabled") === "true") out.disabled = true;
    if (r === "checkbox" || r === "radio" || r === "switch") {
      out.checked = el.tagName === "INPUT" ? el.checked : el.getAttribute("aria-checked") === "true";
    }
    if (r === "option" && el.selected) out.selected = true;
    if (["textbox", "searchbox", "spinbutton", "slider"].includes(r)) {
      const v = el.isContentEditable ? el.innerText : el.value;
      if (v) out.value = clip(String(v), 200);
    }
    if (r === "combobox" && el.tagName === "SELECT") {
      const chosen = el.selectedOptions && el.selectedOptions[0];
      if (chosen) out.value = clip(squash(chosen.textContent), 200);
    }
    if (el.getAttribute("aria-expanded")) out.expanded = el.getAttribute("aria-expanded") === "true";
    if (r === "link" && opts.urls) out.url = el.href;
    return out;
  }

  function refOf(el) {
    let ref = el.getAttribute("data-rc-ref");
    if (!ref) {
      ref = "e" + seq();
      el.setAttribute("data-rc-ref", ref);
    }
    return ref;
  }

  const nodes = [];
  const refs = {};
  const limit = opts.maxNodes || 2000;
  let truncated = false;

  function ownText(el) {
    let text = "";
    for (const child of el.childNodes) if (child.nodeType === 3) text += child.textContent;
    return squash(text);
  }

  function walk(el, depth) {
    if (nodes.length >= limit) { truncated = true; return; }
    if (SKIP_TAGS.has(el.tagName) || !visible(el)) return;
    const r = role(el);
    if (r === null) return;
    const interactive = isInteractive(el, r);
    const nm = name(el, r);
    const leafText = ["link", "button", "heading", "option", "paragraph", "listitem", "cell", "columnheader",
      "label", "tab", "code", "blockquote"].includes(r);
    let keep;
    if (opts.interactive) keep = interactive;
    else if (opts.compact) keep = r !== "generic" || interactive || (!!ownText(el) && !el.children.length);
    else keep = r !== "generic" || interactive || !!ownText(el);
    let next = depth;
    if (keep && (!opts.depth || depth < opts.depth)) {
      const ref = refOf(el);
      const text = r === "generic" ? ownText(el) : "";
      nodes.push({depth: opts.interactive ? 0 : depth, role: r, name: clip(nm || text, 300), ref,
        props: props(el, r), interactive});
      refs[ref] = {role: r, name: clip(nm || text, 100)};
      next = depth + 1;
      if (leafText && !el.querySelector("a,button,input,select,textarea,[role],[onclick],[tabindex]")) return;
    } else if (keep) {
      return;  // below the depth limit
    }
    for (const child of el.children) walk(child, next);
    if (el.shadowRoot) for (const child of el.shadowRoot.children) walk(child, next);
  }

  let root = document.body || document.documentElement;
  if (opts.selector) {
    root = document.querySelector(opts.selector);
    if (!root) return {error: `no element matches selector ${opts.selector}`};
  }
  walk(root, 0);
  return {nodes, refs, truncated, title: document.title};
}
