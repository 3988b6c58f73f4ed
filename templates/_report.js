/* The page's enhancements; without them it reads the same, every card in place. Sorting and filtering the kernel
   table (and the cards with it), opening a closed card a link leads to, and focusing the roofline on one kernel. */
(() => {
  const $ = (q, el = document) => el.querySelector(q), $$ = (q, el = document) => [...el.querySelectorAll(q)];
  const table = $("#kernel-table"), tools = $("#kernel-tools"), cardTools = $("#card-tools");
  const cards = $$("section.card");
  if (table && tools) {
    tools.hidden = false;
    const body = table.tBodies[0], rows = [...body.rows];
    const num = v => (v === "" || v === undefined ? NaN : parseFloat(v));
    // a row without a card (a big report's tail) carries no data-name: its name cell's text and tooltip stand in;
    // nor data-finding where its first finding's rule is the first of data-rules
    const nameOf = r => {
      if (r.dataset.name === undefined) {
        const cell = $("td.name", r);
        r.dataset.name = cell ? (cell.textContent + " " + cell.title).toLowerCase() : "";
      }
      return r.dataset.name;
    };
    const findingOf = r => r.dataset.finding ?? (r.dataset.rules || "").split(" ")[0];
    const keys = {index: r => num(r.dataset.index), time: r => num(r.dataset.time), headroom: r => num(r.dataset.headroom),
      name: nameOf, lang: r => r.dataset.lang, bound: r => r.dataset.bound, finding: findingOf};
    const numeric = new Set(["index", "time", "headroom"]);
    for (const th of $$("th[data-sort]", table)) {
      const b = document.createElement("button");
      b.type = "button";
      b.append(...th.childNodes);
      th.append(b);
      b.addEventListener("click", () => {
        const k = th.dataset.sort, was = th.getAttribute("aria-sort");
        const firstDown = k === "time" || k === "headroom";
        const dir = was ? (was === "ascending" ? -1 : 1) : (firstDown ? -1 : 1);
        $$("th[aria-sort]", table).forEach(t => t.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        const get = keys[k];
        const cmp = (a, b) => {
          const x = get(a), y = get(b);
          const xm = numeric.has(k) ? isNaN(x) : !x, ym = numeric.has(k) ? isNaN(y) : !y;
          if (xm || ym) return xm - ym;  // a row without the value goes last, either way
          return (numeric.has(k) ? x - y : String(x).localeCompare(String(y))) * dir || num(a.dataset.index) - num(b.dataset.index);
        };
        rows.sort(cmp).forEach(r => body.append(r));
      });
    }
    const q = $("#kq"), fb = $("#kf-bound"), fl = $("#kf-lang"), fr = $("#kf-rule"), count = $("#kcount");
    const match = row => {
      const el = row.matches("section.card") ? $("summary", row) : row;  // a card's summary carries its data
      const words = q.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
      const rules = (el.dataset.rules || "").split(" ").filter(Boolean);
      const name = el === row ? nameOf(row) : el.dataset.name || "";
      return words.every(w => name.includes(w))
        && (!fb.value || el.dataset.bound === fb.value)
        && (!fl || !fl.value || el.dataset.lang === fl.value)
        && (!fr.value || (fr.value === "-" ? rules.length === 0 : rules.includes(fr.value)));
    };
    const apply = () => {
      let shown = 0;
      for (const r of rows) { r.hidden = !match(r); shown += !r.hidden; }
      for (const c of cards) c.hidden = !match(c);
      count.textContent = shown === rows.length ? "" : `${shown} of ${rows.length} kernels`;
    };
    [q, fb, fl, fr].forEach(el => el && el.addEventListener("input", apply));
  }
  if (cardTools) {
    cardTools.hidden = false;
    cardTools.addEventListener("click", e => {
      const b = e.target.closest("button");
      if (b) cards.filter(c => !c.hidden).forEach(c => { $("details", c).open = b.dataset.open === "1"; });
    });
  }
  // a link to a closed card opens it
  const openTarget = id => {
    const el = id && document.getElementById(id);
    const card = el && el.closest("section.card");
    if (card) { card.hidden = false; $("details", card).open = true; }
  };
  addEventListener("hashchange", () => openTarget(decodeURIComponent(location.hash.slice(1))));
  document.addEventListener("click", e => {
    const a = e.target.closest && e.target.closest('a[href^="#"]');
    if (a && !a.closest("svg")) openTarget(decodeURIComponent(a.getAttribute("href").slice(1)));
  });
  openTarget(decodeURIComponent(location.hash.slice(1)));
  // print: the cards with a finding to act on print open, as they are shown again after
  let reopened = [];
  addEventListener("beforeprint", () => {
    reopened = cards.filter(c => $("summary", c).hasAttribute("data-act") && !$("details", c).open);
    reopened.forEach(c => { $("details", c).open = true; });
  });
  addEventListener("afterprint", () => { reopened.forEach(c => { $("details", c).open = false; }); reopened = []; });
  // the roofline: a click on a point shows that kernel's roofs alone; a second click opens its card
  for (const svg of $$("svg.roofline")) {
    const note = document.createElement("p");
    note.className = "focus-note";
    note.hidden = true;
    svg.after(note);
    let focused = null;
    const clear = () => {
      focused = null;
      svg.classList.remove("focused");
      $$(".dim, .focus", svg).forEach(el => el.classList.remove("dim", "focus"));
      note.hidden = true;
    };
    svg.addEventListener("click", e => {
      const a = e.target.closest("a[data-roofs]");
      if (!a) { if (focused) clear(); return; }
      if (focused === a) { openTarget(a.getAttribute("href").slice(1)); return; }  // the link goes to the card
      e.preventDefault();
      clear();
      focused = a;
      const roofs = new Set(a.dataset.roofs.split(" "));
      svg.classList.add("focused");
      a.classList.add("focus");
      $$("[data-roof]", svg).forEach(el => {
        if (!el.dataset.roof.split(" ").some(r => roofs.has(r))) el.classList.add("dim");
      });
      $$("a[data-roofs]", svg).forEach(p => { if (p !== a) p.classList.add("dim"); });
      $$(".headroom, .headroom-label", svg).forEach(el => el.classList.add("dim"));
      const href = a.getAttribute("href");  // its own L2 and L1 marks stay; the other kernels' dim
      $$(".level-join, circle.level", svg).forEach(el => { if (el.dataset.of !== href) el.classList.add("dim"); });
      note.textContent = "";
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = "show every roof";
      b.addEventListener("click", clear);
      note.append(`${a.dataset.label}: its roofs alone (${a.dataset.roofNames}); click the point again for its card · `, b);
      note.hidden = false;
    });
    svg.addEventListener("keydown", e => { if (e.key === "Escape") clear(); });
  }
})();
