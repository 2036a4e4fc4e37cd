// The evaluation page (plugins/bitextflow_airflow/evaluation.py): every value is inserted with textContent,
// never as markup; the page's Content-Security-Policy requires Trusted Types, so no markup sink would work anyway.
"use strict";
(function () {
  const config = document.body.dataset;
  const $ = (id) => document.getElementById(id);
  let state = null;
  let index = 0;
  let queue = Promise.resolve();
  const KEYS = { g: "good", b: "bad", u: "unsure" };

  function cell(row, text, header) {
    const element = document.createElement(header ? "th" : "td");
    element.textContent = text;
    row.appendChild(element);
  }

  function table(element, headers, rows) {
    element.replaceChildren();
    const head = element.createTHead().insertRow();
    headers.forEach((h) => cell(head, h, true));
    const body = element.createTBody();
    rows.forEach((values) => {
      const row = body.insertRow();
      values.forEach((v) => cell(row, v, false));
    });
  }

  const share = (x) => (x === null || x === undefined ? "-" : x.toFixed(3));
  const interval = (e) =>
    e.precision === null ? "no pair judged yet" : `${share(e.precision)} (95% interval ${share(e.low)}-${share(e.high)})`;

  function labelledByMe() {
    return state.items.filter((item) => item.item in state.mine).length;
  }

  function showItem() {
    const item = state.items[index];
    if (!item) return;
    for (const side of ["a", "b"]) {
      $("text_" + side).textContent = item["text_" + side];
      const url = item["url_" + side];
      const holder = $("url_" + side);
      holder.replaceChildren();
      if (/^https?:\/\//i.test(url)) {
        const link = document.createElement("a");
        link.href = url;
        link.rel = "noopener noreferrer";
        link.target = "_blank";
        link.textContent = url;
        holder.appendChild(link);
      } else {
        holder.textContent = url;
      }
    }
    const mine = state.mine[item.item];
    $("meta").textContent =
      `pair ${index + 1} of ${state.items.length}; site ${item.site}, band ${item.band}` +
      (mine ? `; your label: ${mine}` : "; not labelled by you yet");
    table($("scores"), ["score", "value"], Object.entries(item.scores).map(([k, v]) => [k, share(v)]));
    $("comment").value = "";
  }

  function showState() {
    const done = labelledByMe();
    $("progress").textContent = `labelled ${done} of ${state.items.length} (by ${state.annotator}); ` +
      `${state.evaluation.labelled} labelled by anyone`;
    $("bar").max = state.items.length;
    $("bar").value = done;
    const e = state.evaluation;
    const o = e.overall;
    $("overall").textContent = `precision ${interval(o)}; good ${o.good}, bad ${o.bad}, not sure ${o.unsure}` +
      ` (${e.method}, ${e.release_pairs} pairs in the release)`;
    $("agreement").textContent = e.agreement === null
      ? `agreement: no pair labelled by two people yet (annotators: ${e.annotators.join(", ") || "none"})`
      : `agreement ${share(e.agreement)} on ${e.shared_items} pairs labelled by two or more (annotators: ${e.annotators.join(", ")})`;
    const rows = (group) => Object.entries(group).map(([k, v]) => [k, share(v.precision), share(v.low), share(v.high), v.good, v.bad, v.unsure]);
    const headers = ["", "precision", "low", "high", "good", "bad", "not sure"];
    table($("per_band"), headers, rows(e.per_band));
    table($("per_site"), headers, rows(e.per_site));
    table($("curve"), ["threshold", "kept pairs", "precision", "low", "high"],
      e.curve.map((p) => [share(p.threshold), p.kept_pairs, share(p.precision), share(p.low), share(p.high)]));
    const select = $("version");
    if (!select.options.length) {
      state.versions.slice().reverse().forEach((v) => {
        const option = document.createElement("option");
        option.value = String(v);
        option.textContent = "v" + v;
        option.selected = v === state.version;
        select.appendChild(option);
      });
    }
  }

  function fail(message) {
    $("status").textContent = message;
  }

  async function answer(response) {
    if (!response.ok) {
      let detail = response.statusText;
      try { detail = (await response.json()).detail; } catch (e) { /* not JSON */ }
      throw new Error(`${response.status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    }
    return response.json();
  }

  function nextUnlabelled(from) {
    for (let i = from; i < state.items.length; i++) if (!(state.items[i].item in state.mine)) return i;
    for (let i = 0; i < from; i++) if (!(state.items[i].item in state.mine)) return i;
    return Math.min(from, state.items.length - 1);
  }

  function label(value) {
    if (!state) return;
    const item = state.items[index];
    const comment = $("comment").value;
    state.mine[item.item] = value;
    showState();
    index = nextUnlabelled(index + 1);
    showItem();
    queue = queue.then(() =>
      fetch(`${config.api}/labels?${config.query}`, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": config.csrf },
        body: JSON.stringify({ item: item.item, label: value, comment: comment }),
      }).then(answer).then((fresh) => {
        state.evaluation = fresh.evaluation;
        state.labels = fresh.labels;
        Object.assign(state.mine, fresh.mine);
        fail("");
        showState();
        showItem();
      }).catch((error) => fail(`label not stored: ${error.message}`)));
  }

  function move(step) {
    if (!state) return;
    index = (index + step + state.items.length) % state.items.length;
    showItem();
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target === $("comment")) {
      if (event.key === "Escape") $("comment").blur();
      return;
    }
    if (KEYS[event.key]) { event.preventDefault(); label(KEYS[event.key]); }
    else if (event.key === "ArrowLeft") move(-1);
    else if (event.key === "ArrowRight") move(1);
  });
  $("good").addEventListener("click", () => label("good"));
  $("bad").addEventListener("click", () => label("bad"));
  $("unsure").addEventListener("click", () => label("unsure"));
  $("previous").addEventListener("click", () => move(-1));
  $("next").addEventListener("click", () => move(1));
  $("version").addEventListener("change", (event) => {
    const query = new URLSearchParams({ version: event.target.value, size: config.size, seed: config.seed });
    window.location.assign(`${config.page}?${query}`);
  });

  fetch(`${config.api}?${config.query}`, { credentials: "same-origin" }).then(answer).then((loaded) => {
    state = loaded;
    index = nextUnlabelled(0);
    showState();
    showItem();
    document.body.dataset.ready = "true";
  }).catch((error) => fail(`the sample did not load: ${error.message}`));
})();
