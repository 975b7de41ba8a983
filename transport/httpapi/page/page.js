"use strict";
// The live page of transport/httpapi: plain JavaScript, no dependencies.
// It begins with the server's history (history: empty unless the Handler
// runs), then follows the Handler's SSE stream (events); the JSON snapshot
// (campaigns), read once a second, adds what events do not carry: every
// registered candidate, renewed deadlines, sources registered after the
// stream began (the stream is then reopened to include them). Terms are
// kept for WINDOW_MS.
(() => {
  const WINDOW_MS = 5 * 60 * 1000; // terms older than this are forgotten
  let opened = Date.now(); // or the first event of the server's history
  const POLL_MS = 1000;
  const base = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";

  const sources = new Map(); // name|id -> snapshot, in registration order
  const terms = new Map();   // name|slot|token|holder -> term
  const observed = new Map(); // name|slot -> {holder, token} from leader-changed events
  let stream = null, streamKeys = new Set(), streamOpen = false, reachable = true;

  const $ = (sel) => document.querySelector(sel);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const ms = (t) => (t ? Date.parse(t) : null);
  const lockKey = (name, slot) => name + "|" + slot;
  const termKey = (name, slot, token, holder) => [name, slot, token, holder].join("|");
  const reasonText = (r) => (r || "").replace(/^events: /, "");
  const clock = (t) => {
    const d = new Date(t);
    return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
  };
  const span = (d) => (d < 1000 ? Math.round(d) + " ms" : d < 60000 ? (d / 1000).toFixed(1) + " s" : Math.round(d / 1000) + " s");
  const hue = (s) => {
    let h = 0;
    for (const c of s) h = (h * 31 + c.codePointAt(0)) % 360;
    return h;
  };

  // term returns the term of an event or snapshot, made on first sight.
  function term(name, slot, token, holder) {
    const k = termKey(name, slot, token, holder);
    let t = terms.get(k);
    if (!t) {
      t = { name, slot, token, holder, start: null, end: null, reason: "", deadline: null, longest: 0, seen: 0 };
      terms.set(k, t);
    }
    return t;
  }

  function setDeadline(t, deadline) {
    if (!deadline) return;
    t.deadline = deadline;
    t.longest = Math.max(t.longest, deadline - Date.now());
  }

  function onEvent(kind, e) {
    if (kind === "leader-changed") {
      observed.set(lockKey(e.name, e.slot), { holder: e.holder || "", token: e.token });
      return;
    }
    const t = term(e.name, e.slot, e.token, e.holder);
    t.seen = Date.now();
    if (kind === "elected") {
      if (t.start === null) t.start = ms(e.time);
      if (t.end === null) setDeadline(t, ms(e.deadline));
    } else if (kind === "revoked") {
      t.end = ms(e.time) || Date.now();
      t.reason = e.reason || "";
    }
    render();
  }

  // onSnapshot takes in a snapshot asked for at asked (this page's clock):
  // it opens the terms of leaders, moves deadlines on, and ends terms the
  // snapshot no longer shows, unless an event newer than the question
  // said otherwise.
  function onSnapshot(list, asked) {
    sources.clear();
    for (const s of list) {
      sources.set(s.name + "|" + s.id, s);
      const last = s.last_event;
      if (last && last.kind === "revoked") {
        const t = term(last.name, last.slot, last.token, last.holder || s.id);
        if (t.end === null) {
          t.end = ms(last.time);
          t.reason = last.reason || "";
        }
      }
      if (s.leader) {
        const t = term(s.name, s.slot, s.token, s.id);
        if (t.end === null) {
          if (t.start === null && last && last.kind === "elected" && last.token === s.token) t.start = ms(last.time);
          setDeadline(t, ms(s.deadline));
          t.seen = Math.max(t.seen, asked);
        }
      }
    }
    for (const t of terms.values()) {
      if (t.end !== null || t.seen >= asked) continue;
      const s = sources.get(t.name + "|" + t.holder);
      if (s && !(s.leader && s.slot === t.slot && s.token === t.token)) {
        t.end = Date.now();
        t.reason = "(ended between two looks)";
      }
    }
    render();
  }

  async function poll() {
    const asked = Date.now();
    try {
      const r = await fetch(base + "campaigns", { headers: { Accept: "application/json" }, cache: "no-store" });
      if (!r.ok) throw new Error("HTTP " + r.status);
      onSnapshot(await r.json(), asked);
      reachable = true;
      const fresh = [...sources.keys()].some((k) => !streamKeys.has(k));
      // With no source, a stream would end at once: nothing to follow yet.
      if (sources.size > 0 && (!stream || fresh || stream.readyState === EventSource.CLOSED)) openStream();
      status();
    } catch {
      reachable = false;
      status();
    }
  }

  function openStream() {
    if (stream) stream.close();
    streamOpen = false;
    streamKeys = new Set(sources.keys());
    stream = new EventSource(base + "events");
    stream.onopen = () => { streamOpen = true; status(); };
    stream.onerror = () => { streamOpen = false; status(); };
    for (const kind of ["elected", "revoked", "leader-changed"]) {
      stream.addEventListener(kind, (m) => onEvent(kind, JSON.parse(m.data)));
    }
    status();
  }

  function status() {
    const s = $("#status");
    const state = !reachable ? "unreachable" : streamOpen || sources.size === 0 ? "live" : "connecting";
    s.dataset.state = state;
    s.textContent = { live: "live", connecting: "connecting…", unreachable: "server unreachable: retrying" }[state];
  }

  // holderOf returns the open term of a lock or slot (the highest token),
  // or null.
  function holderOf(name, slot) {
    let best = null;
    for (const t of terms.values()) {
      if (t.name === name && t.slot === slot && t.end === null && (!best || t.token > best.token)) best = t;
    }
    return best;
  }

  // openTermOf returns the term a candidate holds on a lock, or null.
  function openTermOf(name, id) {
    for (const t of terms.values()) {
      if (t.name === name && t.holder === id && t.end === null) return t;
    }
    return null;
  }

  function locksByName() {
    // A name is a group's once a slot other than 0 is seen for it (groups
    // number their slots from 0; the JSON does not say how many there are).
    const names = new Map(); // name -> {slots: Set, group: bool}
    const add = (name, slot) => {
      if (!names.has(name)) names.set(name, { slots: new Set(), group: false });
      const n = names.get(name);
      n.slots.add(slot);
      if (slot > 0) n.group = true;
    };
    for (const s of sources.values()) add(s.name, s.slot);
    for (const t of terms.values()) add(t.name, t.slot);
    for (const k of observed.keys()) {
      const i = k.lastIndexOf("|");
      add(k.slice(0, i), Number(k.slice(i + 1)));
    }
    return names;
  }

  function renderLocks(now) {
    const box = $("#locks");
    const names = locksByName();
    if (names.size === 0) {
      box.replaceChildren(el("p", "empty", "No campaign registered yet."));
      return;
    }
    const cards = [];
    for (const [name, n] of names) {
      const card = el("div", "card");
      card.dataset.name = name;
      const h = el("h3", "", name);
      if (n.group) h.append(el("small", "", "group"));
      card.append(h);
      const slots = [...n.slots].sort((a, b) => a - b);
      for (const slot of slots) card.append(slotRow(name, slot, n.group, now));
      const chips = el("div", "chips");
      for (const s of sources.values()) {
        if (s.name !== name) continue;
        const t = openTermOf(s.name, s.id);
        const what = t ? (n.group ? "leads slot " + t.slot : "leads") : "waits";
        const chip = el("span", "chip" + (t ? " leading" : "") + (s.error ? " error" : ""), s.id + " · " + what);
        chip.dataset.id = s.id;
        chip.dataset.leads = t ? "yes" : "no";
        chip.title = (s.error ? "last backend error: " + s.error + "\n" : "") + "events dropped by its reader: " + s.dropped;
        chips.append(chip);
      }
      card.append(chips);
      cards.push(card);
    }
    box.replaceChildren(...cards);
  }

  function slotRow(name, slot, group, now) {
    const row = el("div", "slot");
    row.dataset.lock = lockKey(name, slot);
    row.append(el("span", "label", group ? "slot " + slot : "lock"));
    const t = holderOf(name, slot);
    const seen = observed.get(lockKey(name, slot));
    const holder = t ? t.holder : seen ? seen.holder : "";
    const token = t ? t.token : seen ? seen.token : 0;
    row.dataset.holder = holder;
    row.append(el("span", "holder" + (holder ? "" : " none"), holder || "no holder seen"));
    row.append(el("span", "token", token ? "#" + token : ""));
    const cd = el("span", "countdown" + (t && t.deadline ? "" : " idle"));
    if (t && t.deadline) {
      const left = t.deadline - now;
      const bar = el("i");
      bar.style.width = (t.longest > 0 ? Math.max(0, Math.min(1, left / t.longest)) * 100 : 0) + "%";
      cd.append(bar, el("b", "", left > 0 ? span(left) : "due"));
      cd.title = "the holder revokes itself by " + clock(t.deadline) + " unless a keep-alive moves its deadline on";
    }
    row.append(cd);
    return row;
  }

  // renderTimeline draws the terms since the page opened, on a scale that
  // grows with the time the page has been open, up to WINDOW_MS.
  function renderTimeline(now) {
    for (const [k, t] of terms) {
      if (t.end !== null && t.end < now - WINDOW_MS) terms.delete(k);
    }
    const scale = Math.min(WINDOW_MS, Math.max(20000, (now - opened) * 1.25));
    const from = now - scale;
    const lanes = new Map();
    for (const t of terms.values()) {
      const k = lockKey(t.name, t.slot);
      if (!lanes.has(k)) lanes.set(k, []);
      lanes.get(k).push(t);
    }
    const box = $("#timeline");
    const names = locksByName();
    const rows = [];
    for (const k of [...lanes.keys()].sort()) {
      const ts = lanes.get(k);
      const lane = el("div", "lane");
      const group = names.get(ts[0].name)?.group;
      lane.append(el("span", "name", group ? ts[0].name + " [" + ts[0].slot + "]" : ts[0].name));
      const track = el("div", "track");
      ts.sort((a, b) => a.token - b.token);
      let before = from; // terms of one lock or slot never overlap
      for (const t of ts) {
        // A term whose election the page never saw begins, as far as it
        // knows, where the one before it ended.
        const start = Math.max(t.start ?? before, from), end = t.end ?? now;
        before = Math.max(before, end);
        if (end < from) continue;
        const bar = el("span", "term" + (t.end !== null ? " ended" : "") + (t.start === null ? " unseen" : ""), t.holder + " #" + t.token);
        bar.style.left = ((start - from) / scale) * 100 + "%";
        bar.style.width = (Math.max(0, end - start) / scale) * 100 + "%";
        bar.style.background = "hsl(" + hue(t.holder) + " 55% 42%)";
        bar.title = t.holder + " #" + t.token + (t.end !== null ? ", ended: " + reasonText(t.reason) : ", holds");
        track.append(bar);
      }
      lane.append(track);
      rows.push(lane);
    }
    if (rows.length === 0) rows.push(el("p", "empty", "No term seen yet."));
    const axis = el("div", "axis");
    for (let i = 5; i >= 0; i--) {
      const ago = (scale * i) / 5;
      axis.append(el("span", "", i === 0 ? "now" : ago < 60000 ? "−" + Math.round(ago / 1000) + " s" : "−" + (ago / 60000).toFixed(1) + " min"));
    }
    box.replaceChildren(...rows, axis);
  }

  function renderTerms(now) {
    const list = [...terms.values()].sort((a, b) => (b.end ?? now) - (a.end ?? now) || b.token - a.token).slice(0, 50);
    const names = locksByName();
    const rows = list.map((t) => {
      const tr = el("tr", t.end === null ? "open" : "ended");
      Object.assign(tr.dataset, { name: t.name, slot: t.slot, holder: t.holder, token: t.token, reason: reasonText(t.reason) });
      tr.append(
        el("td", "mono", t.name),
        el("td", "", names.get(t.name)?.group ? String(t.slot) : ""),
        el("td", "", t.holder),
        el("td", "mono", "#" + t.token),
        el("td", "", t.start !== null ? clock(t.start) : "before this page"),
        el("td", "", t.end !== null ? clock(t.end) : ""),
        el("td", "", t.start !== null ? span((t.end ?? now) - t.start) : ""),
        el("td", "reason", t.end !== null ? reasonText(t.reason) : "holds"),
      );
      return tr;
    });
    $("#terms tbody").replaceChildren(...rows);
  }

  function render() {
    const now = Date.now();
    renderLocks(now);
    renderTimeline(now);
    renderTerms(now);
  }

  async function start() {
    try {
      const r = await fetch(base + "history", { headers: { Accept: "application/json" }, cache: "no-store" });
      if (r.ok) {
        for (const e of await r.json()) {
          opened = Math.min(opened, ms(e.time) ?? opened);
          onEvent(e.kind, e);
        }
      }
    } catch {
      // No history: the page shows what happens from now on.
    }
    $("#window").textContent = "· since " + clock(opened) + ", kept for 5 minutes";
    await poll();
    setInterval(poll, POLL_MS);
    setInterval(render, 250);
  }
  start();
})();
