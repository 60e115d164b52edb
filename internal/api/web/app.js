// freshcrawl console: a single page over the coordinator's JSON API. Plain
// JavaScript, no build step, nothing loaded from elsewhere; charts are SVG
// drawn here. Every value from the API is put in the page as text, never
// as HTML.
"use strict";

// ---- DOM and formatting helpers ----

function el(tag, attrs, ...kids) {
  const svgTags = ["svg", "path", "line", "text", "g", "rect", "polyline", "circle"];
  const e = svgTags.includes(tag) ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") { for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn); continue; }
    if (k === "text") { e.textContent = v; continue; }
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function toast(msg, isError) {
  const t = document.getElementById("toast");
  t.textContent = msg;
  t.className = "toast" + (isError ? " error" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.className = "toast hidden"; }, 4000);
}

// ---- sign-in ----
//
// A coordinator started with --api-token or --api-read-token answers the
// API only with "Authorization: Bearer <token>". The page keeps the token
// in sessionStorage (this tab only, gone when it closes; never a cookie, so
// no other site can make the browser send it) and sends it as that header
// with every request, the live updates included (read with fetch, since an
// EventSource cannot send headers, and never in a URL, where it would end
// up in logs and history).

const TOKEN_KEY = "freshcrawl-token";
function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
function withToken(opts, tok) {
  opts = Object.assign({}, opts || {});
  const t = tok || token();
  if (t) opts.headers = Object.assign({}, opts.headers || {}, { Authorization: "Bearer " + t });
  return opts;
}

class AuthError extends Error {
  constructor(msg, status) { super(msg); this.status = status; }
}

async function api(path, opts, tok) {
  const r = await fetch(path, withToken(opts, tok));
  const text = await r.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text }; }
  if (r.status === 401) throw new AuthError((body && body.error) || "sign in with a token", 401);
  if (!r.ok) throw new Error((body && body.error) || r.statusText);
  return body;
}

// signIn replaces the page with a token form; a token that works is kept
// and the page reloads.
function signIn(msg) {
  const input = el("input", { type: "password", name: "token", autocomplete: "current-password", placeholder: "API token", size: 48 });
  const err = el("p", { class: "err", text: token() ? msg : "" });
  const form = el("form", { class: "signin", on: { submit: async ev => {
    ev.preventDefault();
    const tok = input.value.trim();
    if (!tok) { err.textContent = "enter a token"; return; }
    try {
      await api("/api/overview", {}, tok);
    } catch (e) {
      err.textContent = e.message;
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, tok);
    route();
  } } }, input, el("button", { type: "submit", text: "Sign in" }));
  main().replaceChildren(el("h1", { text: "Sign in" }),
    el("p", { class: "muted", text: "This coordinator requires a token: one of its --api-token (admin) or --api-read-token (read only) values. It is kept in this tab only." }),
    form, err);
  document.body.dataset.page = "signin";
  input.focus();
}

// The role of the token held: "admin", "read" or "open" (no tokens). The
// page offers only the actions the role may perform; the API refuses the
// others whatever the page shows, so this spares a read-only operator
// buttons that can only fail.
const role = { tok: null, name: "" };
async function loadRole() {
  const t = token();
  if (role.name && role.tok === t) return role.name;
  const r = await api("/api/whoami");
  role.tok = t;
  role.name = r.role;
  return role.name;
}
function mayChange() { return role.name !== "read"; }

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  role.name = "";
  if (live.source) { live.source.close(); live.source = null; }
  route();
}

// The raw body of a URL is the crawled site's own page or script, and
// this page runs in the console's origin, where the token is kept. It is
// therefore never drawn here: rawText reads it as text (shown with
// textContent, so none of it is markup), and saveRaw saves it as a
// download, typed as bytes so that no browser draws it. The API serves it
// as an attachment besides (see docs/api.md).
async function fetchRaw(path) {
  const r = await fetch(path, withToken());
  if (r.status === 401) throw new AuthError("sign in with a token", 401);
  if (!r.ok) throw new Error(r.status + " " + r.statusText);
  return r;
}

async function rawText(path) {
  return (await fetchRaw(path)).text();
}

async function saveRaw(path, name) {
  const b = await (await fetchRaw(path)).arrayBuffer();
  const url = URL.createObjectURL(new Blob([b], { type: "application/octet-stream" }));
  const a = el("a", { href: url, download: name || "raw" });
  document.body.append(a);
  a.click();
  a.remove();
  // The download has taken the bytes once the click has been handled.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

// eventStream reads a text/event-stream with the token: the subset of SSE
// the API writes ("event:" and "data:" lines, a blank line ends an event).
// It reconnects after a failure, like an EventSource.
function eventStream(path, handlers) {
  const ctl = new AbortController();
  const stream = { close: () => ctl.abort() };
  (async () => {
    while (!ctl.signal.aborted) {
      try {
        const r = await fetch(path, withToken({ signal: ctl.signal, headers: { Accept: "text/event-stream" } }));
        if (!r.ok) throw new Error(r.statusText);
        const rd = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await rd.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let ev = "message", data = [];
            for (const line of block.split("\n")) {
              if (line.startsWith("event:")) ev = line.slice(6).trim();
              else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
            }
            if (data.length && handlers[ev]) handlers[ev](data.join("\n"));
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      if (handlers.error) handlers.error();
      await new Promise(res => setTimeout(res, 3000));
    }
  })();
  return stream;
}

const NS = 1e9;
function fmtDur(ns) {
  if (!ns || ns <= 0) return "—";
  const s = ns / NS;
  if (s < 1) return (s * 1000).toFixed(0) + " ms";
  if (s < 90) return s.toFixed(s < 10 ? 1 : 0) + " s";
  if (s < 5400) return (s / 60).toFixed(1) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " d";
}
function isZeroTime(t) { return !t || t.startsWith("0001-"); }
function fmtTime(t) {
  if (isZeroTime(t)) return "—";
  const d = new Date(t), now = Date.now(), diff = (d.getTime() - now) / 1000;
  const abs = Math.abs(diff);
  let rel;
  if (abs < 1) rel = "now";
  else if (abs < 90) rel = Math.round(abs) + " s";
  else if (abs < 5400) rel = Math.round(abs / 60) + " min";
  else if (abs < 172800) rel = (abs / 3600).toFixed(1) + " h";
  else rel = (abs / 86400).toFixed(1) + " d";
  if (rel === "now") return rel;
  return diff > 0 ? "in " + rel : rel + " ago";
}
function fmtNum(v, digits) {
  if (v === null || v === undefined || !isFinite(v)) return "—";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100) return v.toFixed(0);
  return v.toPrecision(digits || 3).replace(/\.?0+$/, "").replace(/\.?0+e/, "e");
}
// fmtRate prints a rate per second in the unit that keeps it readable.
function fmtRate(perS) {
  if (perS === null || perS === undefined || !isFinite(perS)) return "—";
  if (perS === 0) return "0";
  if (perS >= 1) return fmtNum(perS) + "/s";
  if (perS * 60 >= 1) return fmtNum(perS * 60) + "/min";
  if (perS * 3600 >= 1) return fmtNum(perS * 3600) + "/h";
  return fmtNum(perS * 86400) + "/d";
}
function fmtFresh(v) { return isFinite(v) ? v.toFixed(3) : "—"; }
function stateBadge(s) { return el("span", { class: "state " + String(s).replace(/ /g, "-"), text: s }); }

function card(k, v, s) {
  return el("div", { class: "card", "data-card": k }, el("div", { class: "k", text: k }), el("div", { class: "v", text: v }), s ? el("div", { class: "s", text: s }) : null);
}

// table builds a table from columns {key, label, num, render} and rows;
// clicking a header sorts by that column in the page.
function table(cols, rows, opts) {
  opts = opts || {};
  let sortKey = opts.sortKey || null, asc = opts.asc !== false;
  const wrap = el("div");
  function draw() {
    const sorted = rows.slice();
    if (sortKey) {
      const c = cols.find(c => c.key === sortKey);
      const val = c.sortValue || (r => r[c.key]);
      sorted.sort((a, b) => {
        const x = val(a), y = val(b);
        const cmp = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return asc ? cmp : -cmp;
      });
    }
    const head = el("tr", {}, cols.map(c => el("th", {
      class: [c.num ? "num" : "", "sortable", sortKey === c.key ? "sorted" + (asc ? " asc" : "") : ""].join(" "),
      on: { click: () => { if (sortKey === c.key) asc = !asc; else { sortKey = c.key; asc = true; } draw(); } },
    }, c.label)));
    const body = sorted.map(r => el("tr", {}, cols.map(c => {
      const v = c.render ? c.render(r) : r[c.key];
      return el("td", { class: (c.num ? "num " : "") + (c.cls || "") }, v instanceof Node ? v : String(v === undefined || v === null ? "" : v));
    })));
    const t = el("table", { "data-table": opts.name || "" }, el("thead", {}, head), el("tbody", {}, body));
    if (!rows.length) t.append(el("tbody", {}, el("tr", {}, el("td", { colspan: cols.length, class: "muted", text: opts.empty || "nothing to show" }))));
    wrap.replaceChildren(t);
  }
  draw();
  return wrap;
}

// ---- charts ----

const PALETTE = ["#2460c9", "#1f8a4c", "#c2332b", "#b66a00", "#7a4cc2", "#0a8f9c", "#8a8f1f", "#c24c9c"];

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// rateUnit picks the unit that keeps rates up to v readable.
function rateUnit(v) {
  if (v >= 1) return [1, "/s"];
  if (v * 60 >= 1) return [60, "/min"];
  if (v * 3600 >= 1) return [3600, "/h"];
  return [86400, "/d"];
}

// fmtAgo labels a time axis tick s seconds before now.
function fmtAgo(s) {
  if (s < 0.5) return "now";
  if (s < 90) return `-${Math.round(s)} s`;
  return `-${Math.round(s / 60)} min`;
}

// lineChart draws series [{name, values: [[ms, v]...]}] over the samples
// kept (up to the last hour), with an optional band {lo: [[ms, v]], hi:
// [[ms, v]]} shaded behind. opts.rate formats values as rates.
function lineChart(title, series, opts) {
  opts = opts || {};
  const W = 600, H = 190, L = 52, R = 10, T = 8, B = 22;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const now = Date.now();
  let first = now;
  for (const s of series) if (s.values.length) first = Math.min(first, s.values[0][0]);
  const span = Math.min(3600e3, Math.max(10e3, now - first));
  const t0 = now - span;
  let ymax = opts.yMax;
  if (ymax === undefined) {
    let m = 0;
    for (const s of series) for (const [, v] of s.values) if (isFinite(v)) m = Math.max(m, v);
    if (opts.band) for (const [, v] of opts.band.hi) if (isFinite(v)) m = Math.max(m, v);
    ymax = opts.rate ? niceMax(m * rateUnit(m)[0]) / rateUnit(m)[0] : niceMax(m);
  }
  const unit = rateUnit(ymax);
  const fmt = opts.rate ? (v => isFinite(v) ? fmtNum(v * unit[0]) + unit[1] : "—") : (opts.fmt || fmtNum);
  const x = t => L + (W - L - R) * (t - t0) / span;
  const y = v => T + (H - T - B) * (1 - Math.min(v, ymax) / ymax);
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, yy = y(v);
    svg.append(el("line", { class: "grid", x1: L, x2: W - R, y1: yy, y2: yy }));
    svg.append(el("text", { x: L - 4, y: yy + 3, "text-anchor": "end", text: fmt(v) }));
  }
  for (let i = 4; i >= 0; i--) {
    const ago = span * i / 4;
    svg.append(el("text", { x: x(now - ago), y: H - 6, "text-anchor": i === 4 ? "start" : i === 0 ? "end" : "middle", text: fmtAgo(ago / 1000) }));
  }
  svg.append(el("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  svg.append(el("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  const visible = vs => vs.filter(([t, v]) => t >= t0 && isFinite(v));
  if (opts.band) {
    const lo = visible(opts.band.lo), hi = visible(opts.band.hi);
    if (lo.length > 1 && hi.length === lo.length) {
      const d = "M" + hi.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join("L") +
        "L" + lo.slice().reverse().map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join("L") + "Z";
      svg.append(el("path", { class: "band", d, fill: opts.band.color || PALETTE[0] }));
    }
  }
  let drawn = 0;
  series.forEach((s, i) => {
    const vs = visible(s.values);
    if (!vs.length) return;
    drawn++;
    const color = s.color || PALETTE[i % PALETTE.length];
    if (vs.length === 1) {
      svg.append(el("circle", { cx: x(vs[0][0]), cy: y(vs[0][1]), r: 2.5, fill: color }));
      return;
    }
    svg.append(el("polyline", { fill: "none", stroke: color, "stroke-width": 1.6, points: vs.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ") }));
  });
  if (!drawn) svg.append(el("text", { class: "empty", x: W / 2, y: H / 2, "text-anchor": "middle", text: opts.empty || "no samples yet" }));
  const legend = el("div", { class: "legend" }, series.map((s, i) => {
    const last = s.values.length ? s.values[s.values.length - 1][1] : NaN;
    const sw = el("i");
    sw.style.background = s.color || PALETTE[i % PALETTE.length];
    return el("span", {}, sw, `${s.name} ${opts.rate ? fmtRate(last) : fmt(last)}`);
  }));
  if (opts.band) {
    const lo = opts.band.lo, hi = opts.band.hi;
    if (lo.length && hi.length) legend.append(el("span", { text: `90% band ${fmt(lo[lo.length - 1][1])} – ${fmt(hi[hi.length - 1][1])}` }));
  }
  return el("div", { class: "chart", "data-chart": title }, el("div", { class: "title", text: title }), svg, legend);
}

// ---- live series ----

const live = { points: [], source: null, listeners: new Set() };

async function loadSeries() {
  const s = await api("/api/series");
  live.points = s.points || [];
  if (!live.source) {
    live.source = eventStream("/api/events", {
      point: data => {
        live.points.push(JSON.parse(data));
        const cut = Date.now() - 3600e3;
        while (live.points.length && new Date(live.points[0].t).getTime() < cut) live.points.shift();
        document.getElementById("live").classList.add("on");
        for (const fn of live.listeners) fn();
      },
      error: () => document.getElementById("live").classList.remove("on"),
    });
  }
}

// ---- pages ----

const main = () => document.getElementById("main");
let stopPage = () => {};

async function pageOverview() {
  await loadSeries();
  const root = el("div");
  main().replaceChildren(el("h1", { text: "Overview" }), root);
  async function draw() {
    const o = await api("/api/overview");
    const pts = live.points;
    const ser = (k) => pts.map(p => [new Date(p.t).getTime(), p[k]]);
    const kinds = new Set();
    for (const p of pts) for (const k of Object.keys(p.error_rates || {})) kinds.add(k);
    const errTotal = Object.values(o.errors || {}).reduce((a, b) => a + b, 0);
    const cards = el("div", { class: "cards" },
      card("URLs", fmtNum(o.urls), `${o.hosts} hosts, ${o.disallowed} disallowed, ${o.gone} gone, ${o.given_up} given up`),
      card("Workers seen", String((o.workers || []).length), (o.workers || []).join(", ") || "none in the last minute"),
      card("Queue", `${o.pending} / ${o.ack_pending}`, `pending / awaiting ack; ${o.redelivered} redelivered, ${o.unfolded} unfolded`),
      card("In flight", `${o.in_flight}`, `of at most ${o.max_in_flight}`),
      card("Fetches", fmtNum(o.fetches), `${fmtNum(o.changes)} changes, ${o.failed} failed tasks`),
      card("Errors", fmtNum(errTotal), Object.entries(o.errors || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "none"),
      card("Budget", `${fmtRate(o.budget_in_use_per_s)} of ${fmtRate(o.budget_per_s)}`, `unabsorbed ${fmtRate(o.budget_unabsorbed_per_s)}; policy ${o.policy}`),
      card("Model freshness", fmtFresh(o.model_freshness), `90%: ${fmtFresh(o.model_freshness_lo)} – ${fmtFresh(o.model_freshness_hi)}; age ${fmtDur(o.model_age_s * NS)}`),
    );
    const charts = el("div", { class: "charts" },
      lineChart("Queue depth", [
        { name: "pending", values: ser("pending") }, { name: "awaiting ack", values: ser("ack_pending") },
        { name: "redelivered", values: ser("redelivered") }, { name: "unfolded", values: ser("unfolded") },
        { name: "in flight", values: ser("in_flight") }]),
      lineChart("Fetch and change rate", [{ name: "fetches", values: ser("fetch_rate") }, { name: "changes", values: ser("change_rate") }], { rate: true }),
      lineChart("Budget", [{ name: "budget", values: ser("budget") }, { name: "in use", values: ser("in_use") }, { name: "unabsorbed", values: ser("unabsorbed") }], { rate: true }),
      lineChart("Model freshness (90% band)", [{ name: "freshness", values: ser("freshness") }],
        { yMax: 1, fmt: fmtFresh, band: { lo: ser("freshness_lo"), hi: ser("freshness_hi") } }),
      lineChart("Errors by kind", [...kinds].sort().map(k => ({ name: k, values: pts.map(p => [new Date(p.t).getTime(), (p.error_rates || {})[k] || 0]) })), { rate: true, empty: "no errors" }),
      lineChart("Workers seen", [{ name: "workers", values: ser("workers") }]),
    );
    root.replaceChildren(cards, charts, el("p", { class: "muted", text: `${pts.length} samples; updated ${new Date(o.time).toLocaleTimeString()}` }));
  }
  await draw();
  const fn = () => draw().catch(e => toast(e.message, true));
  live.listeners.add(fn);
  return () => live.listeners.delete(fn);
}

async function pageHosts() {
  const root = el("div");
  main().replaceChildren(el("h1", { text: "Hosts" }), root);
  async function draw() {
    const hosts = await api("/api/hosts");
    root.replaceChildren(table([
      { key: "host", label: "host", render: h => el("a", { href: "#/urls?host=" + encodeURIComponent(h.host), text: h.host }), sortValue: h => h.host },
      { key: "cap_per_s", label: "cap", num: true, render: h => fmtRate(h.cap_per_s) },
      { key: "planned_per_s", label: "planned", num: true, render: h => fmtRate(h.planned_per_s) },
      { key: "crawl_delay", label: "Crawl-delay", num: true, render: h => fmtDur(h.crawl_delay) },
      { key: "backoff_till", label: "paused until (Retry-After)", render: h => new Date(h.backoff_till) > new Date() ? fmtTime(h.backoff_till) : "—", sortValue: h => h.backoff_till || "" },
      { key: "robots", label: "robots", render: h => h.robots + (h.disallowed ? ` (${h.disallowed})` : "") },
      { key: "in_flight", label: "in flight", num: true },
      { key: "urls", label: "URLs", num: true },
      { key: "queued", label: "queued", num: true },
      { key: "paused", label: "paused", num: true },
      { key: "fetches", label: "fetches", num: true },
      { key: "errors", label: "errors", num: true },
      { key: "request_time", label: "request time", num: true, render: h => fmtDur(h.request_time) },
      { key: "last_fetch", label: "last fetch", render: h => fmtTime(h.last_fetch), sortValue: h => h.last_fetch || "" },
      { key: "slowdown", label: "rate halved", num: true, render: h => h.slowdown ? `×${h.slowdown} (gap ${fmtDur(h.gap)})` : "—" },
      { key: "gone", label: "gone", num: true },
    ], hosts, { name: "hosts", sortKey: "host", empty: "no hosts yet" }));
  }
  await draw();
  const timer = setInterval(() => draw().catch(e => toast(e.message, true)), 5000);
  return () => clearInterval(timer);
}

const SORTS = ["url", "host", "rate", "next_due", "changes", "last_change", "errors", "weight"];
const STATES = ["paused", "gone", "disallowed", "failed", "given up", "due", "scheduled"];

async function pageURLs(params) {
  const q = Object.fromEntries(params);
  const cursors = (q.cursors || "").split(",").filter(Boolean);
  delete q.cursors;
  const input = (name, label, attrs) => el("label", {}, label, el("input", Object.assign({ name, value: q[name] || "" }, attrs || {})));
  const select = (name, label, options) => el("label", {}, label, el("select", { name },
    el("option", { value: "", text: "any" }), options.map(o => el("option", { value: o, text: o, selected: q[name] === o }))));
  const form = el("form", { class: "filters", on: { submit: ev => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(ev.target)) if (v) p.set(k, v);
    location.hash = "#/urls?" + p.toString();
  } } },
    input("q", "search", { placeholder: "part of the URL", size: 24 }),
    input("host", "host", { size: 16 }),
    input("prefix", "prefix", { size: 20 }),
    select("mode", "mode", ["freshness", "capture"]),
    select("state", "state", STATES),
    el("label", {}, "sort", el("select", { name: "sort" }, SORTS.map(s => el("option", { value: s, text: s, selected: (q.sort || "url") === s })))),
    el("label", {}, "order", el("select", { name: "desc" }, el("option", { value: "", text: "ascending" }), el("option", { value: "1", text: "descending", selected: q.desc === "1" }))),
    el("label", {}, "per page", el("select", { name: "limit" }, ["25", "50", "100", "500"].map(n => el("option", { value: n, text: n, selected: (q.limit || "50") === n })))),
    el("button", { class: "primary", type: "submit", text: "Show" }));
  const p = new URLSearchParams(q);
  if (cursors.length) p.set("after", cursors[cursors.length - 1]);
  const page = await api("/api/urls?" + p.toString());
  const go = (cs) => {
    const h = new URLSearchParams(q);
    if (cs.length) h.set("cursors", cs.join(","));
    location.hash = "#/urls?" + h.toString();
  };
  const start = cursors.length * Number(q.limit || 50);
  const pager = el("div", { class: "pager" },
    el("button", { type: "button", disabled: !cursors.length, text: "← Previous", on: { click: () => go(cursors.slice(0, -1)) } }),
    el("span", { "data-count": "", text: page.urls.length ? `URLs ${start + 1}–${start + page.urls.length}` + (page.total >= 0 ? ` of ${page.total}` : "") : "no URLs match" }),
    el("button", { type: "button", disabled: !page.next, text: "Next →", on: { click: () => go(cursors.concat(page.next)) } }));
  const rows = table([
    { key: "url", label: "URL", cls: "url", render: r => el("a", { href: "#/url?u=" + encodeURIComponent(r.url), text: r.url }) },
    { key: "host", label: "host" },
    { key: "mode", label: "mode" },
    { key: "state", label: "state", render: r => stateBadge(r.state) },
    { key: "weight", label: "weight", num: true, render: r => fmtNum(r.weight) },
    { key: "rate_per_s", label: "change rate (90%)", num: true, render: r => `${fmtRate(r.rate_per_s)} (${fmtRate(r.rate_lo_per_s)}–${fmtRate(r.rate_hi_per_s)})` },
    { key: "interval", label: "interval", num: true, render: r => fmtDur(r.interval) },
    { key: "next_due", label: "next due", render: r => r.in_flight ? "fetching" : fmtTime(r.next_due), sortValue: r => r.next_due || "" },
    { key: "last_change", label: "last change", render: r => fmtTime(r.last_change), sortValue: r => r.last_change || "" },
    { key: "fetches", label: "fetches", num: true },
    { key: "changes", label: "changes", num: true },
    { key: "errors", label: "errors", num: true, render: r => r.errors + (r.last_err_kind ? ` (${r.last_err_kind})` : "") },
  ], page.urls, { name: "urls", empty: "no URLs match" });
  main().replaceChildren(el("h1", { text: "URLs" }), form, pager, rows);
  return () => {};
}

function kv(pairs) {
  return el("div", { class: "kv" }, pairs.flatMap(([k, v]) => [el("div", { class: "k", text: k }), el("div", { "data-field": k }, v instanceof Node ? v : String(v))]));
}

async function pageURL(params) {
  const u = params.get("u");
  const d = await api("/api/url/show?url=" + encodeURIComponent(u));
  const r = d.record, s = d.schedule;
  const post = async (op, body, query) => {
    try {
      const res = await api(`/api/url/${op}${query || ""}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(Object.assign({ urls: [r.url] }, body || {})) });
      toast(`${op}: ${res.changed} of ${res.selected} changed`);
      if (op === "delete") { location.hash = "#/urls"; return; }
      route();
    } catch (e) { toast(`${op}: ${e.message}`, true); }
  };
  const weight = el("input", { name: "weight", type: "number", step: "any", min: "0", value: r.weight, size: 6 });
  const mode = el("select", { name: "mode" }, ["freshness", "capture"].map(m => el("option", { value: m, text: m, selected: r.mode === m })));
  const confirmBox = el("span");
  const askDelete = (purge) => confirmBox.replaceChildren(
    el("span", { text: purge ? "Delete and purge its history? " : "Delete (history kept)? " }),
    el("button", { class: "danger", type: "button", "data-action": "confirm-delete", text: "Yes, delete", on: { click: () => post("delete", null, purge ? "?purge=1" : "") } }),
    el("button", { type: "button", text: "No", on: { click: () => confirmBox.replaceChildren() } }));
  const actions = d.deleted ? el("div", { class: "actions" }, el("span", { class: "muted", text: "This URL was deleted; its history is kept." }),
    mayChange() ? el("button", { class: "danger", type: "button", "data-action": "purge", text: "Purge history", on: { click: () => askDelete(true) } }) : null, confirmBox) :
    !mayChange() ? el("p", { class: "muted", "data-readonly": "", text: "Signed in with a read-only token: pausing, deleting and re-weighting need an admin token." }) : el("div", { class: "actions" },
      r.paused || r.gone ? el("button", { type: "button", "data-action": "resume", text: "Resume", on: { click: () => post("resume") } })
        : el("button", { type: "button", "data-action": "pause", text: "Pause", on: { click: () => post("pause") } }),
      el("button", { class: "danger", type: "button", "data-action": "delete", text: "Delete", on: { click: () => askDelete(false) } }),
      el("button", { type: "button", "data-action": "delete-purge", text: "Delete and purge", on: { click: () => askDelete(true) } }),
      el("span", {}, " weight ", weight, el("button", { type: "button", "data-action": "set-weight", text: "Re-weight", on: { click: () => post("set", { weight: Number(weight.value) }) } })),
      el("span", {}, " mode ", mode, el("button", { type: "button", "data-action": "set-mode", text: "Set mode", on: { click: () => post("set", { mode: mode.value }) } })),
      confirmBox);
  const rawPath = "/api/content?raw=1&url=" + encodeURIComponent(r.url);
  const rawBox = el("div", { "data-raw": "" });
  const rawName = (new URL(r.url).pathname.split("/").pop()) || "raw";
  const kept = d.copy.raw ? el("span", {}, `raw body kept (${fmtNum(d.copy.raw.size)} bytes${d.copy.raw.truncated ? ", truncated" : ""}) `,
    el("button", { type: "button", "data-action": "raw-view", text: "view as text", on: { click: async () => {
      try {
        const text = await rawText(rawPath);
        rawBox.replaceChildren(el("h2", { text: "Raw body (as text)" }), el("pre", { "data-raw-text": "", text: text || "(empty)" }));
      } catch (e) { toast(e.message, true); }
    } } }), " ",
    el("button", { type: "button", "data-action": "raw-download", text: "download", on: { click: () => saveRaw(rawPath, rawName).catch(e => toast(e.message, true)) } })) : "no raw body kept";
  const summary = kv([
    ["state", stateBadge(d.state)],
    ["host", el("a", { href: "#/urls?host=" + encodeURIComponent(r.host), text: r.host })],
    ["mode", r.mode], ["weight", fmtNum(r.weight)],
    ["change rate", `${fmtRate(r.rate)}  (90%: ${fmtRate(d.rate_lo_per_s)} – ${fmtRate(d.rate_hi_per_s)})`],
    ["interval", fmtDur(s ? s.interval : r.interval)],
    ["next due", s && s.in_flight ? "being fetched" : fmtTime(s ? s.next_due : r.next_due)],
    ["fetches", `${r.fetches} (${r.not_modified} not modified, ${r.errors} errors)`],
    ["changes", `${r.changes}, last ${fmtTime(r.last_change)}`],
    ["last fetch", `${fmtTime(r.last_fetch)}` + (r.last_status ? `, HTTP ${r.last_status}` : "") + (r.last_err_kind ? ` (${r.last_err_kind})` : "") + (r.last_err ? `: ${r.last_err}` : "")],
    ["failures", r.gone ? "gone: not fetched until seeded again or resumed" : r.err_streak ? `${r.err_streak} in a row; the next fetch is put off` + (r.not_found_since ? `; 404 since ${fmtTime(r.not_found_since)}` : "") : "none"],
    ["selector", r.selector || "whole visible text"],
    ["stored copy", r.no_archive ? "none: the page forbids a copy (noarchive, noindex or none); its hash and changes are kept" : `${d.copy.text_length} characters of text` + (r.truncated ? ", truncated: the page is longer than max-body" : "")],
    ["raw body", kept],
    ["added", fmtTime(r.added_at)],
  ]);
  const fetches = table([
    { key: "at", label: "at", render: f => fmtTime(f.at), sortValue: f => f.at },
    { key: "outcome", label: "outcome" },
    { key: "status", label: "HTTP", num: true },
    { key: "duration", label: "took", num: true, render: f => fmtDur(f.duration) },
    { key: "bytes", label: "bytes", num: true },
    { key: "err_kind", label: "error" },
  ], d.fetches.slice().reverse(), { name: "fetches", empty: "not fetched yet" });
  const changes = table([
    { key: "seq", label: "#", num: true },
    { key: "at", label: "at", render: c => fmtTime(c.at), sortValue: c => c.at },
    { key: "lines", label: "lines", num: true, render: c => `+${c.diff.lines_added} −${c.diff.lines_removed}` },
    { key: "magnitude", label: "magnitude", num: true, render: c => fmtNum(c.diff.magnitude) },
    { key: "preview", label: "diff", cls: "url", render: c => diffPre((c.diff.preview || "").split("\n").map(l => ({ op: l.slice(0, 1), text: l.slice(2) }))) },
  ], d.changes, { name: "changes", empty: "no change seen yet" });
  const copyPre = el("pre", { "data-copy": "" }, "…");
  api("/api/content?url=" + encodeURIComponent(r.url)).then(c => { copyPre.textContent = c.text || "(empty)"; }).catch(e => { copyPre.textContent = e.message; });
  const parts = [el("h1", { class: "url", text: r.url }), actions, summary,
    el("h2", { text: "Fetch history" }), fetches,
    el("h2", { text: "Change log" }), changes];
  if (d.versions && d.versions.length) {
    const diffBox = el("div", { "data-version-diff": "" });
    parts.push(el("h2", { text: "Versions" }), table([
      { key: "seq", label: "#", num: true },
      { key: "captured_at", label: "captured", render: v => fmtTime(v.captured_at), sortValue: v => v.captured_at },
      { key: "before", label: "appeared", render: v => v.exact ? `at ${fmtTime(v.before)} (Last-Modified)` : `${fmtTime(v.after)} … ${fmtTime(v.before)}` },
      { key: "hash", label: "hash", render: v => v.hash.slice(0, 12) },
      { key: "diff", label: "", render: v => el("button", { type: "button", text: "diff", on: { click: async () => {
        const df = await api(`/api/diff?url=${encodeURIComponent(r.url)}&seq=${v.seq}`);
        diffBox.replaceChildren(el("h2", { text: `Version ${v.seq} against ${df.prev || "nothing"}` }), diffPre(df.lines));
      } } }) },
    ], d.versions.slice().reverse(), { name: "versions" }), diffBox);
  }
  parts.push(el("h2", { text: "Stored copy (extracted text)" }), copyPre, rawBox);
  main().replaceChildren(...parts);
  return () => {};
}

function diffPre(lines) {
  return el("pre", { class: "diff" }, lines.filter(l => l.op || l.text).map(l =>
    el("div", { class: l.op === "+" ? "add" : l.op === "-" ? "del" : "", text: `${l.op || " "} ${l.text}` })));
}

async function pageCapture() {
  const caps = await api("/api/capture");
  main().replaceChildren(el("h1", { text: "Capture URLs" }),
    el("p", { class: "muted", text: "Each capture URL keeps every version; polls are placed where updates happen (Ashish, Kulkarni & Wang)." }),
    table([
      { key: "url", label: "URL", cls: "url", render: c => el("a", { href: "#/url?u=" + encodeURIComponent(c.url), text: c.url }) },
      { key: "period", label: "period", render: c => c.period ? c.period + (c.detected ? " (detected)" : " (configured)") : "unknown yet" },
      { key: "strength", label: "strength", num: true, render: c => fmtNum(c.strength) },
      { key: "polls_per_period", label: "polls/period", num: true },
      { key: "phases", label: "phases", render: c => (c.phases || []).join(", ") || (c.learning ? "learning" : "—") },
      { key: "expected_recall", label: "expected recall", num: true, render: c => fmtFresh(c.expected_recall) },
      { key: "replayed_recall", label: "replayed recall", num: true, render: c => fmtFresh(c.replayed_recall) },
      { key: "exact_updates", label: "exact updates", num: true },
    ], caps, { name: "capture", empty: "no capture URLs (seed with \"mode\": \"capture\")" }));
  return () => {};
}

async function pageSources() {
  const srcs = await api("/api/sources");
  main().replaceChildren(el("h1", { text: "Keyword-search sources" }),
    table([
      { key: "source", label: "source" },
      { key: "policy", label: "policy" },
      { key: "items", label: "items", num: true },
      { key: "rounds", label: "rounds", num: true },
      { key: "at", label: "last round", render: s => fmtTime(s.last_round.at), sortValue: s => s.last_round.at || "" },
      { key: "queries", label: "queries", num: true, render: s => s.last_round.queries },
      { key: "requests", label: "requests (by id)", num: true, render: s => `${s.last_round.requests} (${s.last_round.by_id})` },
      { key: "coverage", label: "coverage", num: true, render: s => fmtFresh(s.last_round.coverage_ratio) },
      { key: "speedup", label: "speedup", num: true, render: s => fmtNum(s.last_round.speedup_ratio) },
      { key: "freshness", label: "content freshness", num: true, render: s => fmtNum(s.last_round.content_freshness) },
      { key: "interval", label: "interval (units)", num: true, render: s => fmtNum(s.last_round.interval_units) },
    ], srcs, { name: "sources", empty: "no keyword-search sources (define them under sources: in the config file)" }));
  return () => {};
}

// pageWebhooks lists the webhooks, their queues and the dead-letter list:
// deliveries that failed every attempt, to retry or drop.
async function pageWebhooks() {
  const root = el("div");
  main().replaceChildren(el("h1", { text: "Webhooks" }), root);
  async function act(op, ids) {
    try {
      const res = await api(`/api/webhooks/${op}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(ids ? { ids } : { all: true }) });
      toast(`${op === "retry" ? "requeued" : "dropped"} ${res.n}`);
      await draw();
    } catch (e) { toast(e.message, true); }
  }
  async function draw() {
    const w = await api("/api/webhooks?limit=500");
    const queued = Object.entries(w.queued || {});
    root.replaceChildren(
      el("div", { class: "cards" },
        card("Delivered", fmtNum(w.delivered), "since the coordinator started"),
        card("Failed attempts", fmtNum(w.failed_attempts), "retried with backoff"),
        card("Queued", fmtNum(queued.reduce((a, [, n]) => a + n, 0)), queued.map(([u, n]) => `${u}: ${n}`).join(", ") || "nothing waiting"),
        card("Dead letters", fmtNum(w.dead), `${fmtNum(w.dead_lettered)} since the start`)),
      el("h2", { text: "Configured webhooks" }),
      table([
        { key: "name", label: "name" }, { key: "url", label: "URL" },
        { key: "hosts", label: "hosts", render: h => (h.hosts || []).join(", ") || "all" },
        { key: "prefixes", label: "URL prefixes", render: h => (h.prefixes || []).join(", ") || "all" },
        { key: "min_magnitude", label: "min magnitude", num: true, render: h => fmtNum(h.min_magnitude || 0) },
        { key: "signed", label: "signed", render: h => h.signed ? "yes" : "no" },
      ], w.webhooks || [], { name: "webhooks", empty: "none in the config file (seeds may still name their own)" }),
      el("h2", {}, "Dead letters ", mayChange() && [
        el("button", { type: "button", "data-action": "retry-all", text: "Retry all", disabled: !w.dead, on: { click: () => act("retry") } }), " ",
        el("button", { type: "button", class: "danger", "data-action": "drop-all", text: "Drop all", disabled: !w.dead, on: { click: () => act("drop") } })]),
      table([
        { key: "url", label: "webhook" },
        { key: "event_id", label: "event" },
        { key: "seq", label: "change", num: true },
        { key: "attempts", label: "attempts", num: true },
        { key: "last_err", label: "last error" },
        { key: "dead_at", label: "given up", render: d => fmtTime(d.dead_at), sortValue: d => d.dead_at || "" },
        { key: "id", label: "", render: d => mayChange() ? el("span", {},
          el("button", { type: "button", "data-action": "retry", text: "Retry", on: { click: () => act("retry", [d.id]) } }), " ",
          el("button", { type: "button", "data-action": "drop", text: "Drop", on: { click: () => act("drop", [d.id]) } })) : "" },
      ], w.dead_letters || [], { name: "dead-letters", empty: "no dead letters" }));
  }
  await draw();
  return () => {};
}

// ---- router ----

const pages = { "": pageOverview, "hosts": pageHosts, "urls": pageURLs, "url": pageURL, "capture": pageCapture, "sources": pageSources, "webhooks": pageWebhooks };

async function route() {
  stopPage();
  stopPage = () => {};
  const h = location.hash.replace(/^#\/?/, "");
  const [path, query] = h.split("?");
  const name = path || "";
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", (a.dataset.page === "overview" && name === "") || a.dataset.page === name || (name === "url" && a.dataset.page === "urls"));
  }
  const page = pages[name] || pageOverview;
  try {
    document.body.dataset.role = await loadRole();
    stopPage = (await page(new URLSearchParams(query || ""))) || (() => {});
    document.body.dataset.page = name || "overview";
  } catch (e) {
    if (e instanceof AuthError) signIn(e.message);
    else {
      main().replaceChildren(el("p", { class: "err", text: e.message }));
      document.body.dataset.page = "error";
    }
  }
  document.getElementById("signout").classList.toggle("hidden", !token());
  // Which route the page shows, for tests and bookmarks alike.
  document.body.dataset.route = location.hash || "#/";
}

window.addEventListener("hashchange", route);
document.getElementById("signout").addEventListener("click", ev => { ev.preventDefault(); signOut(); });
route();
