// Filters, sorting and claim → evidence highlighting for the diageval HTML report.
// Plain JavaScript, no dependency: the page must work offline, from disk or a CI artifact.
(function () {
  "use strict";
  const table = document.getElementById("scenario-table");
  if (!table) { return; }
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const control = (id) => document.getElementById(id);
  const filters = ["filter-verdict", "filter-tag", "filter-failure", "filter-text", "filter-changed"]
    .map(control).filter(Boolean);

  function matches(row) {
    const verdict = control("filter-verdict").value;
    const tag = control("filter-tag").value;
    const failure = control("filter-failure").value;
    const text = control("filter-text").value.trim().toLowerCase();
    const changed = control("filter-changed");
    if (verdict && row.dataset.verdict !== verdict) { return false; }
    if (tag && !row.dataset.tags.split(" ").includes(tag)) { return false; }
    if (failure === "failing" && row.dataset.failing !== "1") { return false; }
    if (failure === "passing" && row.dataset.failing === "1") { return false; }
    if (changed && changed.checked && row.dataset.changed !== "1") { return false; }
    return !text || text.split(/\s+/).every((word) => row.dataset.text.includes(word));
  }

  function applyFilters() {
    let shown = 0;
    for (const row of rows) {
      const visible = matches(row);
      row.hidden = !visible;
      const section = document.getElementById(row.dataset.section);
      if (section) { section.hidden = !visible; }
      if (visible) { shown += 1; }
    }
    control("shown-count").textContent = shown + " of " + rows.length + " scenarios shown";
  }

  for (const element of filters) {
    element.addEventListener("input", applyFilters);
    element.addEventListener("change", applyFilters);
  }

  function sortBy(header) {
    const index = Array.from(header.parentElement.children).indexOf(header);
    const numeric = header.dataset.sort === "number";
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    for (const other of header.parentElement.children) { other.removeAttribute("aria-sort"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const key = (row) => {
      const value = row.cells[index].dataset.value;
      if (!numeric) { return value; }
      const number = parseFloat(value);
      return Number.isNaN(number) ? -Infinity : number;
    };
    rows.sort((a, b) => {
      const x = key(a);
      const y = key(b);
      const order = x < y ? -1 : (x > y ? 1 : 0);
      return ascending ? order : -order;
    });
    for (const row of rows) { body.appendChild(row); }
  }

  table.tHead.addEventListener("click", (event) => {
    const header = event.target.closest("th[data-sort]");
    if (header) { sortBy(header); }
  });

  // A claim (or recommended action) lists the ids of the evidence items it cites: clicking
  // it opens the tool calls that hold them, highlights them and scrolls to the first.
  function reveal(element) {
    for (let details = element.closest("details"); details; details = details.parentElement.closest("details")) {
      details.open = true;
    }
  }

  function showEvidence(claim) {
    for (const element of document.querySelectorAll(".evidence-item.focus, .claim.active")) {
      element.classList.remove("focus", "active");
    }
    claim.classList.add("active");
    let first = null;
    for (const id of claim.dataset.evidence.split(" ").filter(Boolean)) {
      const item = document.getElementById(id);
      if (!item) { continue; }
      reveal(item);
      item.classList.add("focus");
      first = first || item;
    }
    if (first) { first.scrollIntoView({ block: "center" }); }
  }

  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[href^='#']");
    if (link) {
      // A link into a closed tool call opens it first, so the browser can scroll there.
      const target = document.getElementById(decodeURIComponent(link.hash.slice(1)));
      if (target) { reveal(target); }
      return;
    }
    const claim = event.target.closest(".claim[data-evidence]");
    if (claim) { showEvidence(claim); }
  });
  document.addEventListener("keydown", (event) => {
    const claim = event.target.closest && event.target.closest(".claim[data-evidence]");
    if (claim && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      showEvidence(claim);
    }
  });

  applyFilters();
}());
