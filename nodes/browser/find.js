// Runs in the page (Playwright evaluate): elements by text, accessible name or CSS selector, each given a
// data-rc-ref (as snapshot.js does) so the agent can act on what it found.
({query, limit}) => {
  const q = query.trim().toLowerCase();
  let candidates = [];
  const looksCss = /^[.#\[]|^[a-z]+[.#\[:]|^[a-z]+$/i.test(query.trim()) && !/\s{2,}/.test(query);
  if (looksCss) { try { candidates = [...document.querySelectorAll(query)]; } catch (e) { candidates = []; } }
  const byText = candidates.length === 0;
  if (byText) {
    const all = document.querySelectorAll("a,button,input,select,textarea,label,h1,h2,h3,h4,h5,h6,p,li,td,th,span,div,[role]");
    for (const el of all) {
      const text = (el.getAttribute("aria-label") || el.getAttribute("placeholder") || el.getAttribute("title") ||
        el.value || el.innerText || "").replace(/\s+/g, " ").trim();
      if (!text.toLowerCase().includes(q)) continue;
      // the innermost match only: a div holding the matching button is not a second result
      if ([...el.children].some((c) => (c.innerText || "").toLowerCase().includes(q))) continue;
      candidates.push(el);
    }
  }
  const out = [];
  for (const el of candidates) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    let ref = el.getAttribute("data-rc-ref");
    if (!ref) { ref = "e" + (window.__rcRefSeq = (window.__rcRefSeq || 0) + 1); el.setAttribute("data-rc-ref", ref); }
    out.push({ref, tag: el.tagName.toLowerCase(), role: el.getAttribute("role") || null,
      text: (el.innerText || el.value || el.getAttribute("aria-label") || "").replace(/\s+/g, " ").trim().slice(0, 200),
      box: {x: Math.round(box.x), y: Math.round(box.y), width: Math.round(box.width), height: Math.round(box.height)}});
    if (out.length >= limit) break;
  }
  return out;
}
