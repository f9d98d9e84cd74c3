"use strict";
// electd view: space-time diagrams of electd traces. Everything the page needs is in
// this file and the JSON above it; it never touches the network.
(function () {
  const panels = JSON.parse(document.getElementById("trace-data").textContent);
  // Calls an election / answers / announces the result: red / green / blue in every
  // algorithm, so the same role has the same colour across panels.
  const COLORS = {
    election: "#d62728", ring_election: "#d62728", lcr_election: "#d62728", request_vote: "#d62728",
    ok: "#2ca02c", vote: "#2ca02c", reply: "#17becf",
    coordinator: "#1f5fb4", ring_coordinator: "#1f5fb4", lcr_elected: "#1f5fb4", terminate: "#1f5fb4",
    you_are_coordinator: "#9467bd", probe: "#ff7f0e", resign: "#8c564b",
    pre_vote: "#e377c2", pre_vote_response: "#a8a81a",
    heartbeat: "#b4bac6", heartbeat_ack: "#d3d7df",
  };
  const FATE = ["delivered", "lost (random loss)", "cut by a partition", "receiver was down", "still in flight at the end"];
  const color = (t) => COLORS[t] || "#444";
  const isLiveness = (t) => t === "heartbeat" || t === "heartbeat_ack";

  const $ = (id) => document.getElementById(id);
  const scrub = $("scrub"), clock = $("clock"), playBtn = $("play");
  let tEnd = 1;
  for (const p of panels) tEnd = Math.max(tEnd, p.t_end);
  const st = { cursor: 0, v0: 0, v1: tEnd, playing: false, speed: 1, hb: true, last: 0 };

  function fmt(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    return (ns / 1e3).toFixed(1) + " µs";
  }
  function upper(arr, x) { // first index with arr[i] > x
    let lo = 0, hi = arr.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (arr[m] <= x) lo = m + 1; else hi = m; }
    return lo;
  }

  // ---- model -------------------------------------------------------------------
  const allTimes = [];
  const typeNames = new Set();
  const models = panels.map((p, pi) => {
    const m = p.msgs, n = m.t0.length;
    // Messages by send time (a demo's threads may record slightly out of order).
    const order = Array.from({ length: n }, (_, i) => i);
    let sorted = true;
    for (let i = 1; i < n; i++) if (m.t0[i] < m.t0[i - 1]) { sorted = false; break; }
    if (!sorted) order.sort((a, b) => m.t0[a] - m.t0[b]);
    const t0 = new Float64Array(n), t1 = new Float64Array(n);
    const from = new Uint16Array(n), to = new Uint16Array(n), ty = new Uint16Array(n);
    const re = new Uint8Array(n), fate = new Uint8Array(n);
    for (let k = 0; k < n; k++) {
      const i = order[k];
      t0[k] = m.t0[i]; t1[k] = Math.max(m.t1[i], m.t0[i]); from[k] = m.from[i]; to[k] = m.to[i];
      ty[k] = m.ty[i]; re[k] = m.re[i]; fate[k] = m.fate[i];
      allTimes.push(t0[k], t1[k]);
    }
    p.types.forEach((t) => typeNames.add(t));
    const lanes = p.nodes.length;
    const leaders = Array.from({ length: lanes }, () => ({ t: [], l: [], term: [] }));
    for (const [t, lane, l, term] of p.leaders) { leaders[lane].t.push(t); leaders[lane].l.push(l); leaders[lane].term.push(term); allTimes.push(t); }
    const states = Array.from({ length: lanes }, () => ({ t: [], s: [] }));
    for (const [t, lane, s] of p.states) { states[lane].t.push(t); states[lane].s.push(s); allTimes.push(t); }
    for (const [t] of p.timers) allTimes.push(t);
    for (const [, a, b] of p.down) allTimes.push(a, b);
    for (const [a, b] of p.cuts) allTimes.push(a, b);
    const live = Uint8Array.from(p.types, (t) => (isLiveness(t) ? 1 : 0));
    // Message indexes by (type, retransmission), ascending: one canvas path each.
    const lists = new Map(), dropList = [];
    for (let k = 0; k < n; k++) {
      const key = ty[k] * 2 + re[k];
      if (!lists.has(key)) lists.set(key, []);
      lists.get(key).push(k);
      if (fate[k] >= 1 && fate[k] <= 3) dropList.push(k);
    }
    const groups = new Map([...lists].map(([key, l]) => [key, Uint32Array.from(l)]));
    const drops = Uint32Array.from(dropList);
    return { p, pi, order, t0, t1, from, to, ty, re, fate, n, lanes, leaders, states, live, groups, drops, drawn: 0 };
  });
  allTimes.sort((a, b) => a - b);
  const times = [];
  for (const t of allTimes) if (!times.length || times[times.length - 1] !== t) times.push(t);

  // ---- layout ------------------------------------------------------------------
  const LEFT = 92, TOP = 18, RIGHT = 10;
  const host = $("panels");
  const total = models.reduce((s, m) => s + m.n, 0);
  const algs = [...new Set(panels.map((p) => p.alg))];
  $("summary").textContent = `${panels.length} diagram(s) · ${algs.join(", ")} · ${total} messages · ${fmt(tEnd)}`;
  for (const md of models) {
    const p = md.p;
    const sec = document.createElement("section");
    sec.className = "panel";
    sec.dataset.alg = p.alg;
    sec.dataset.arrows = String(md.n);
    sec.dataset.electionMessages = String(p.election_messages);
    if (p.end_leader != null) sec.dataset.endLeader = String(p.end_leader);
    const meta = [p.source, p.clock + " time", p.scenario, p.seed != null ? "seed " + p.seed : null, p.nodes.length + " nodes"]
      .filter(Boolean).join(" · ");
    sec.innerHTML = `<h2></h2><span class="meta"></span><div class="counts"></div>`;
    sec.querySelector("h2").textContent = p.title;
    sec.querySelector(".meta").textContent = meta;
    if (p.truncated > 0) {
      const w = document.createElement("div");
      w.className = "warn";
      w.textContent = `The recorder stopped early: ${p.truncated} later records are missing from this trace.`;
      sec.appendChild(w);
    }
    const cv = document.createElement("canvas");
    md.laneH = Math.max(5, Math.min(24, Math.floor(420 / Math.max(1, md.lanes))));
    md.h = TOP + md.lanes * md.laneH + 8;
    cv.style.height = md.h + "px";
    sec.appendChild(cv);
    host.appendChild(sec);
    md.sec = sec; md.cv = cv; md.counts = sec.querySelector(".counts");
    attachPointer(md);
  }
  const legend = $("legend");
  for (const t of typeNames) {
    const s = document.createElement("span");
    s.innerHTML = `<i style="background:${color(t)}"></i>`;
    s.appendChild(document.createTextNode(t));
    legend.appendChild(s);
  }

  // ---- drawing -----------------------------------------------------------------
  const xOf = (md, t) => LEFT + ((t - st.v0) / (st.v1 - st.v0)) * (md.w - LEFT - RIGHT);
  const yOf = (md, lane) => TOP + lane * md.laneH + md.laneH / 2;

  function leaderAt(md, lane, t) {
    const L = md.leaders[lane];
    const i = upper(L.t, t) - 1;
    return i >= 0 ? L.l[i] : 0;
  }
  function stateAt(md, lane, t) {
    const S = md.states[lane];
    const i = upper(S.t, t) - 1;
    return i >= 0 ? S.s[i] : "";
  }
  function isDown(md, lane, t) {
    for (const [l, a, b] of md.p.down) if (l === lane && a <= t && t < b) return true;
    return false;
  }

  // Geometry of message k as drawn at the cursor into SEG (x0, y0, x1, y1, arrived);
  // false if not visible. One shared buffer: no allocation per message and frame.
  const SEG = new Float64Array(5);
  function segment(md, k) {
    const a = md.t0[k], b = md.t1[k];
    if (a > st.cursor || a > st.v1 || b < st.v0) return false;
    if (!st.hb && md.live[md.ty[k]]) return false;
    const end = b < st.cursor ? b : st.cursor;
    const y0 = TOP + md.from[k] * md.laneH + md.laneH / 2, y1full = TOP + md.to[k] * md.laneH + md.laneH / 2;
    const scale = (md.w - LEFT - RIGHT) / (st.v1 - st.v0);
    const x0 = LEFT + (a - st.v0) * scale;
    // A message dropped when sent travels part of a lane towards its target.
    if (b === a && md.fate[k] !== 0) {
      SEG[0] = x0; SEG[1] = y0; SEG[2] = x0 + 4; SEG[3] = y0 + Math.sign(y1full - y0) * md.laneH * 0.6;
    } else {
      SEG[0] = x0; SEG[1] = y0; SEG[2] = LEFT + (end - st.v0) * scale;
      SEG[3] = y0 + (y1full - y0) * (b > a ? (end - a) / (b - a) : 1);
    }
    SEG[4] = b <= st.cursor ? 1 : 0;
    return true;
  }

  function draw(md) {
    const dpr = window.devicePixelRatio || 1;
    md.w = md.cv.clientWidth || 800;
    if (md.cv.width !== Math.round(md.w * dpr)) { md.cv.width = Math.round(md.w * dpr); md.cv.height = Math.round(md.h * dpr); }
    const c = md.cv.getContext("2d");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, md.w, md.h);
    const p = md.p, right = md.w - RIGHT;
    // Down intervals and cuts (shading), up to the cursor.
    c.fillStyle = "rgba(120,128,140,0.28)";
    for (const [l, a, b] of p.down) {
      if (a > st.cursor) continue;
      const x0 = Math.max(LEFT, xOf(md, a)), x1 = Math.min(right, xOf(md, Math.min(b, st.cursor)));
      if (x1 > x0) c.fillRect(x0, TOP + l * md.laneH, x1 - x0, md.laneH);
    }
    c.fillStyle = "rgba(255,150,40,0.16)";
    for (const [a, b] of p.cuts) {
      if (a > st.cursor) continue;
      const x0 = Math.max(LEFT, xOf(md, a)), x1 = Math.min(right, xOf(md, Math.min(b, st.cursor)));
      if (x1 > x0) c.fillRect(x0, TOP, x1 - x0, md.lanes * md.laneH);
    }
    // Lanes, labels: node id and the leader it believes in at the cursor.
    c.font = `${Math.min(12, md.laneH - 1)}px system-ui, sans-serif`;
    c.textBaseline = "middle";
    const every = md.laneH >= 10 ? 1 : Math.ceil(10 / md.laneH);
    const agreed = new Map();
    for (let l = 0; l < md.lanes; l++) {
      const y = yOf(md, l);
      const leader = leaderAt(md, l, st.cursor);
      const down = isDown(md, l, st.cursor);
      const self = leader === p.nodes[l] && !down;
      if (!down) agreed.set(leader, (agreed.get(leader) || 0) + 1);
      c.strokeStyle = self ? "#e0a000" : "#e3e6ec";
      c.lineWidth = self ? Math.min(4, md.laneH / 2) : 1;
      c.beginPath(); c.moveTo(LEFT, y); c.lineTo(right, y); c.stroke();
      if (l % every === 0 || self) {
        c.fillStyle = down ? "#9aa1ad" : "#1d2330";
        const lt = down ? "down" : leader ? "→ " + leader + (self ? " ★" : "") : "→ ?";
        c.fillText(`n${p.nodes[l]} ${lt}`, 4, y);
      }
    }
    // Time axis.
    c.fillStyle = "#5b6475"; c.textBaseline = "alphabetic"; c.font = "11px system-ui, sans-serif";
    for (let i = 0; i <= 5; i++) {
      const t = st.v0 + (st.v1 - st.v0) * i / 5, x = xOf(md, t);
      c.fillText(fmt(t), Math.min(x, right - 60), 12);
      c.fillRect(x, TOP - 3, 1, 3);
    }
    // Messages, batched by type into one path each; retransmissions dashed.
    const hi = upper(md.t0, Math.min(st.cursor, st.v1));
    let drawn = 0;
    for (const [key, idx] of md.groups) {
      const t = p.types[key >> 1];
      c.strokeStyle = color(t);
      c.lineWidth = md.live[key >> 1] ? 0.8 : 1.3;
      c.setLineDash(key & 1 ? [4, 3] : []);
      c.beginPath();
      for (let j = 0; j < idx.length; j++) {
        const k = idx[j];
        if (k >= hi) break;
        if (!segment(md, k)) continue;
        drawn++;
        c.moveTo(SEG[0], SEG[1]); c.lineTo(SEG[2], SEG[3]);
      }
      c.stroke();
    }
    md.drawn = drawn;
    c.setLineDash([]);
    // Arrow heads while they can be told apart.
    if (drawn <= 4000) {
      for (let k = 0; k < hi; k++) {
        if (md.fate[k] !== 0 || !segment(md, k) || !SEG[4]) continue;
        const x0 = SEG[0], y0 = SEG[1], x1 = SEG[2], y1 = SEG[3];
        const ang = Math.atan2(y1 - y0, x1 - x0), L = Math.min(7, md.laneH * 0.6);
        c.fillStyle = color(p.types[md.ty[k]]);
        c.beginPath(); c.moveTo(x1, y1);
        c.lineTo(x1 - L * Math.cos(ang - 0.4), y1 - L * Math.sin(ang - 0.4));
        c.lineTo(x1 - L * Math.cos(ang + 0.4), y1 - L * Math.sin(ang + 0.4));
        c.closePath(); c.fill();
      }
    }
    const crosses = [];
    for (let j = 0; j < md.drops.length; j++) {
      const k = md.drops[j];
      if (k >= hi) break;
      if (segment(md, k) && SEG[4]) crosses.push(SEG[2], SEG[3]);
    }
    c.strokeStyle = "#111"; c.lineWidth = 1.4;
    c.beginPath();
    for (let i = 0; i < crosses.length; i += 2) {
      const x = crosses[i], y = crosses[i + 1];
      c.moveTo(x - 3, y - 3); c.lineTo(x + 3, y + 3); c.moveTo(x + 3, y - 3); c.lineTo(x - 3, y + 3);
    }
    c.stroke();
    // Cursor.
    if (st.cursor >= st.v0 && st.cursor <= st.v1) {
      const x = xOf(md, st.cursor);
      c.strokeStyle = "rgba(29,35,48,0.55)"; c.lineWidth = 1;
      c.beginPath(); c.moveTo(x, TOP - 4); c.lineTo(x, md.h); c.stroke();
    }
    if (md.selected != null && segment(md, md.selected)) {
      c.strokeStyle = "#000"; c.lineWidth = 3; c.beginPath(); c.moveTo(SEG[0], SEG[1]); c.lineTo(SEG[2], SEG[3]); c.stroke();
    }
    // Counts per type up to the cursor, and the leader the live nodes agree on.
    const byType = new Float64Array(p.types.length);
    let retrans = 0, dropped = 0;
    const upto = upper(md.t0, st.cursor);
    for (let k = 0; k < upto; k++) {
      if (md.re[k]) retrans++; else byType[md.ty[k]]++;
      if (md.fate[k] >= 1 && md.fate[k] <= 3 && md.t1[k] <= st.cursor) dropped++;
    }
    const counts = new Map();
    let election = 0;
    p.types.forEach((t, i) => { counts.set(t, byType[i]); if (!md.live[i]) election += byType[i]; });
    let leaderNow = "none";
    if (agreed.size === 1) { const [l] = agreed.keys(); leaderNow = l ? String(l) : "none"; }
    else if (agreed.size > 1) leaderNow = "disagree";
    md.sec.dataset.leader = leaderNow;
    md.sec.dataset.arrowsDrawn = String(drawn);
    const parts = [`leader <b>${leaderNow}</b>`, `election messages <b>${election}</b>`];
    for (const t of p.types) if (counts.get(t)) parts.push(`<span style="color:${color(t)}">■</span> ${t} <b>${counts.get(t)}</b>`);
    parts.push(`retransmissions <b>${retrans}</b>`, `dropped <b>${dropped}</b>`);
    md.counts.innerHTML = parts.join(" · ");
  }

  function render() {
    const t = performance.now();
    for (const md of models) draw(md);
    scrub.value = String(Math.round((st.cursor / tEnd) * 1e6));
    clock.textContent = `${fmt(st.cursor)} / ${fmt(tEnd)}`;
    st.last = performance.now() - t;
    document.body.dataset.cursor = String(st.cursor);
    document.body.dataset.renderMs = st.last.toFixed(2);
  }

  // ---- interaction -------------------------------------------------------------
  function setCursor(t) { st.cursor = Math.max(0, Math.min(tEnd, t)); render(); }
  scrub.addEventListener("input", () => { st.cursor = (Number(scrub.value) / 1e6) * tEnd; if (Number(scrub.value) >= 1e6) st.cursor = tEnd; render(); });
  $("next").addEventListener("click", () => { const i = upper(times, st.cursor); setCursor(i < times.length ? times[i] : tEnd); });
  $("prev").addEventListener("click", () => { let i = upper(times, st.cursor) - 1; while (i >= 0 && times[i] >= st.cursor) i--; setCursor(i >= 0 ? times[i] : 0); });
  $("fit").addEventListener("click", () => { st.v0 = 0; st.v1 = tEnd; render(); });
  $("hb").addEventListener("change", (e) => { st.hb = e.target.checked; render(); });
  $("speed").addEventListener("change", (e) => { st.speed = Number(e.target.value); });
  function frame(prev) {
    return (now) => {
      if (!st.playing) return;
      // 1× plays the visible window in 10 s.
      const dt = ((now - prev) / 10000) * (st.v1 - st.v0) * st.speed;
      setCursor(st.cursor + dt);
      if (st.cursor >= tEnd) { toggle(); return; }
      requestAnimationFrame(frame(now));
    };
  }
  function toggle() {
    st.playing = !st.playing;
    playBtn.textContent = st.playing ? "❚❚ pause" : "▶ play";
    if (st.playing) { if (st.cursor >= tEnd) st.cursor = 0; requestAnimationFrame(frame(performance.now())); }
  }
  playBtn.addEventListener("click", toggle);
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" && e.target.type !== "range") return;
    if (e.key === " ") { e.preventDefault(); toggle(); }
    else if (e.key === "ArrowRight") { e.preventDefault(); $("next").click(); }
    else if (e.key === "ArrowLeft") { e.preventDefault(); $("prev").click(); }
  });

  function attachPointer(md) {
    let drag = null;
    md.cv.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = md.cv.getBoundingClientRect();
      const f = Math.max(0, Math.min(1, (e.clientX - r.left - LEFT) / (md.w - LEFT - RIGHT)));
      const at = st.v0 + f * (st.v1 - st.v0);
      const k = e.deltaY < 0 ? 0.8 : 1.25;
      const span = Math.max(1000, Math.min(tEnd, (st.v1 - st.v0) * k));
      st.v0 = Math.max(0, at - f * span); st.v1 = Math.min(tEnd, st.v0 + span); st.v0 = Math.max(0, st.v1 - span);
      render();
    }, { passive: false });
    md.cv.addEventListener("mousedown", (e) => { drag = { x: e.clientX, v0: st.v0, v1: st.v1, moved: false }; });
    window.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      const dt = (-dx / (md.w - LEFT - RIGHT)) * (drag.v1 - drag.v0);
      const span = drag.v1 - drag.v0;
      st.v0 = Math.max(0, Math.min(tEnd - span, drag.v0 + dt)); st.v1 = st.v0 + span;
      render();
    });
    window.addEventListener("mouseup", (e) => {
      if (drag && !drag.moved && e.target === md.cv) pick(md, e);
      drag = null;
    });
  }

  function pick(md, e) {
    const r = md.cv.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    let best = -1, bd = 36;
    const hi = upper(md.t0, Math.min(st.cursor, st.v1));
    for (let k = 0; k < hi; k++) {
      if (!segment(md, k)) continue;
      const dx = SEG[2] - SEG[0], dy = SEG[3] - SEG[1], L2 = dx * dx + dy * dy;
      const u = L2 > 0 ? Math.max(0, Math.min(1, ((x - SEG[0]) * dx + (y - SEG[1]) * dy) / L2)) : 0;
      const ex = SEG[0] + u * dx - x, ey = SEG[1] + u * dy - y, d = ex * ex + ey * ey;
      if (d < bd) { bd = d; best = k; }
    }
    for (const m of models) m.selected = null;
    if (best >= 0) { md.selected = best; showMessage(md, best); }
    render();
  }

  function showMessage(md, k) {
    const p = md.p, i = md.order[k], m = p.msgs;
    const rows = [
      ["algorithm", p.alg], ["type", p.types[md.ty[k]] + (md.re[k] ? " (retransmission)" : "")],
      ["from → to", `n${p.nodes[md.from[k]]} → n${p.nodes[md.to[k]]}`],
      ["sent", fmt(md.t0[k])], [md.fate[k] === 0 ? "delivered" : "ends", fmt(md.t1[k])],
      ["fate", FATE[md.fate[k]]], ["token", String(m.token[i])], ["link seq", String(m.seq[i])],
      ["fields", m.body[i]],
      ["sender state", stateAt(md, md.from[k], md.t0[k]) || "?"],
    ];
    const d = $("details");
    d.innerHTML = "<h3>Message</h3><table></table>";
    const tb = d.querySelector("table");
    for (const [a, b] of rows) {
      const tr = document.createElement("tr");
      const td1 = document.createElement("td"), td2 = document.createElement("td");
      td1.textContent = a; td2.textContent = b;
      tr.append(td1, td2); tb.appendChild(tr);
    }
    d.dataset.selected = `${p.alg}:${k}`;
    d.dataset.body = m.body[i];
  }

  window.addEventListener("resize", render);
  // #t=end, #t=<ns>: where the cursor starts (the browser test scrubs with it).
  // #bench: scrub through the whole run 40 times and record the mean time per frame.
  const hash = new URLSearchParams(location.hash.slice(1));
  render();
  if (hash.get("t") === "end") { scrub.value = "1000000"; scrub.dispatchEvent(new Event("input")); }
  else if (hash.get("t")) setCursor(Number(hash.get("t")));
  // #click=ALG:K: click (real mouse events, through the page's own hit test) the middle
  // of the K-th message of ALG's diagram; the browser test checks the fields shown.
  if (hash.get("click")) {
    const [alg, kk] = hash.get("click").split(":");
    const md = models.find((m) => m.p.alg === alg);
    if (md && segment(md, Number(kk))) {
      const r = md.cv.getBoundingClientRect();
      const x = r.left + (SEG[0] + SEG[2]) / 2, y = r.top + (SEG[1] + SEG[3]) / 2;
      const opts = { clientX: x, clientY: y, bubbles: true };
      md.cv.dispatchEvent(new MouseEvent("mousedown", opts));
      md.cv.dispatchEvent(new MouseEvent("mouseup", opts));
    }
  }
  if (hash.has("bench")) {
    const t = performance.now();
    const N = 40;
    for (let i = 1; i <= N; i++) { scrub.value = String(Math.round(i * 1e6 / N)); scrub.dispatchEvent(new Event("input")); }
    document.body.dataset.scrubMs = ((performance.now() - t) / N).toFixed(2);
  }
  document.body.dataset.totalMessages = String(total);
  document.body.dataset.ready = "1";
})();
