// pocketmq console: plain JavaScript over the console's JSON API (/api/...), no framework, no CDN.
"use strict";

const $ = (sel) => document.querySelector(sel);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const fmtTime = (ms) => (ms > 0 ? new Date(ms).toLocaleString() : "");
// to the millisecond: a client joining moves queues at several clients within the same second
const fmtTimeMs = (ms) => new Date(ms).toLocaleString(undefined, {year: "numeric", month: "numeric", day: "numeric",
  hour: "numeric", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3});
const fmtBytes = (n) => {
  for (const [u, s] of [["GiB", 1 << 30], ["MiB", 1 << 20], ["KiB", 1 << 10]]) if (n >= s) return (n / s).toFixed(1) + " " + u;
  return n + " B";
};
let info = {admin: false, storage: []};

async function api(path, body) {
  const opts = body === undefined ? {} : {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  const r = await fetch(path, opts);
  const data = await r.json().catch(() => { throw new Error(`${path}: the answer (HTTP ${r.status}) is not JSON`); });
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

function showError(e) {
  const el = $("#error");
  el.textContent = e ? String(e.message || e) : "";
  el.hidden = !e;
}

function table(el, headers, rows, onClick) {
  el.innerHTML = "<tr>" + headers.map((h) => `<th>${esc(h)}</th>`).join("") + "</tr>" +
    rows.map((r, i) => `<tr data-i="${i}" class="${onClick ? "clickable" : ""}">` + r.map((c) => `<td>${c}</td>`).join("") + "</tr>").join("");
  // onClick loads a detail: its failure (an answer that is no JSON, a 500) shows in #error, never silently
  if (onClick) el.querySelectorAll("tr[data-i]").forEach((tr) => tr.addEventListener("click", () => Promise.resolve(onClick(+tr.dataset.i)).catch(showError)));
}

// --- cluster ---
async function showCluster() {
  const c = await api("/api/cluster");
  $("#namesrvs").textContent = c.namesrv.join(", ");
  table($("#brokers"), ["cluster", "broker", "id", "address", "version", "disk used", "put TPS", "get TPS", "put today", "get today", "commit log", "dispatch behind", "uptime"],
    c.brokers.map((b) => b.error ? [esc(b.cluster), esc(b.broker), b.id, esc(b.addr), `<span class="error">${esc(b.error)}</span>`, "", "", "", "", "", "", "", ""] : [
      esc(b.cluster), esc(b.broker), b.id, esc(b.addr), esc(b.version),
      b.disk_ratio == null || b.disk_ratio < 0 ? "?" : (b.disk_ratio * 100).toFixed(1) + " %",
      b.put_tps.toFixed(2), b.get_tps.toFixed(2), b.put_today, b.get_today,
      fmtBytes(b.commitlog_max - b.commitlog_min), b.dispatch_behind, b.uptime_s == null ? "" : b.uptime_s + " s"]));
}

// --- topics ---
async function showTopics() {
  const t = await api("/api/topics");
  const sys = $("#show-system").checked;
  const rows = t.topics.filter((x) => sys || !x.system);
  table($("#topics"), ["topic", ""], rows.map((x) => [esc(x.topic), x.system ? "system" : ""]), (i) => showTopic(rows[i].topic));
}

async function showTopic(topic) {
  const d = await api("/api/topic?topic=" + encodeURIComponent(topic));
  const el = $("#topic-detail");
  el.innerHTML = `<h2>${esc(topic)}</h2><button id="refresh-topic">Refresh</button> ` +
    (info.admin ? `<button id="delete-topic">Delete topic</button>` : "") +
    `<h3>Queues</h3><table id="topic-queues"></table><h3>Route</h3><table id="topic-route"></table>` +
    `<p>Consumed by: ${d.groups.map(esc).join(", ") || "no group"}</p>`;
  table($("#topic-queues"), ["broker", "queue", "min offset", "max offset", "messages", "TPS since last view", "last update"],
    d.queues.map((q) => [esc(q.broker), q.queue_id, q.min_offset, q.max_offset, q.max_offset - q.min_offset, q.tps ?? "", fmtTime(q.last_update)]));
  table($("#topic-route"), ["broker", "read queues", "write queues", "perm", "addresses"],
    d.route.queue_datas.map((q) => {
      const b = d.route.broker_datas.find((x) => x.broker === q.brokerName);
      return [esc(q.brokerName), q.readQueueNums, q.writeQueueNums, q.perm, esc(b ? Object.values(b.addrs).join(", ") : "")];
    }));
  $("#refresh-topic").addEventListener("click", () => showTopic(topic).catch(showError));
  const del = $("#delete-topic");
  if (del) del.addEventListener("click", async () => {
    if (!confirm(`Delete ${topic} from every broker and name server?`)) return;
    try { await api("/api/topic/delete", {topic}); el.innerHTML = `<p>Deleted ${esc(topic)}.</p>`; await showTopics(); } catch (e) { showError(e); }
  });
}

// --- groups ---
async function showGroups() {
  const g = await api("/api/groups");
  const rows = g.groups.filter((x) => !x.system);
  table($("#groups"), ["group", "lag (messages)", "consume TPS"], rows.map((x) => [esc(x.group), x.lag ?? "", x.tps ?? ""]), (i) => showGroup(rows[i].group));
}

async function showGroup(group) {
  const d = await api("/api/group?group=" + encodeURIComponent(group));
  const el = $("#group-detail");
  const topics = [...new Set(d.queues.map((q) => q.topic))];
  el.innerHTML = `<h2>${esc(group)}</h2><p>Total lag: <b id="group-lag">${d.lag}</b>` +
    (d.strategy ? `; allocation strategy: ${esc(d.strategy)}` : "") + (d.message_model ? `; ${esc(d.message_model)}` : "") + "</p>" +
    `<h3>Clients</h3><table id="group-clients"></table><h3>Queues</h3><table id="group-queues"></table>` +
    `<h3>Rebalance history</h3><p class="explain">A rebalance is a client splitting a topic's queues anew when the ` +
    `group's clients change: each client sorts the same queue and client lists and takes its share by the allocation ` +
    `strategy, so queues move from client to client without a coordinator (newest first, as each client reports its rounds).</p>` +
    (d.rebalances && d.rebalances.length ? `<table id="group-rebalances"></table>` : `<p id="group-rebalances">No rebalance reported (no pocketmq client online).</p>`) +
    (info.admin && topics.length ? `<form id="reset"><b>Reset offsets</b> of <select name="topic">${topics.map((t) => `<option>${esc(t)}</option>`).join("")}</select>
       to the first message stored at or after <input name="time" type="datetime-local" step="1"> <button>Reset</button></form><p id="reset-result"></p>` : "");
  table($("#group-clients"), ["client id", "address", "language", "version"], d.clients.map((c) => [esc(c.client_id), esc(c.addr), esc(c.language), c.version]));
  table($("#group-queues"), ["topic", "broker", "queue", "broker offset", "consumer offset", "lag", "client", "last consumed"],
    d.queues.map((q) => [esc(q.topic), esc(q.broker), q.queue_id, q.broker_offset, q.consumer_offset, q.lag, esc(q.client), fmtTime(q.last_timestamp)]));
  if (d.rebalances && d.rebalances.length) {
    const members = (e) => [...e.joined.map((c) => "+" + c), ...e.left.map((c) => "−" + c)].map(esc).join("<br>");
    table($("#group-rebalances"), ["time", "client", "topic", "strategy", "clients joined (+) / left (−)", "queues gained", "queues lost", "holds", "clients in the split"],
      d.rebalances.map((e) => [fmtTimeMs(e.timestamp), esc(e.client), esc(e.topic), esc(e.strategy), members(e),
        e.gained.map(esc).join(", "), e.lost.map(esc).join(", "), e.held.length, e.clients.length]));
  }
  const form = $("#reset");
  if (form) form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const ts = f.get("time") ? new Date(f.get("time")).getTime() : 0;
    try {
      const r = await api("/api/group/reset", {group, topic: f.get("topic"), timestamp: ts});
      $("#reset-result").textContent = `Reset ${r.offsets.length} queues` + (r.online ? " (taken by the running consumers)." : " (stored offsets set: no consumer online).");
      await showGroup(group);
    } catch (e) { showError(e); }
  });
}

// --- messages ---
async function search(ev) {
  ev.preventDefault();
  const f = new FormData($("#search"));
  const p = new URLSearchParams();
  const by = f.get("by");
  if (f.get("topic")) p.set("topic", f.get("topic"));
  if (by === "time") {
    if (f.get("begin")) p.set("begin", new Date(f.get("begin")).getTime());
    if (f.get("end")) p.set("end", new Date(f.get("end")).getTime());
  } else p.set(by, f.get("value"));
  const r = await api("/api/messages?" + p);
  const rows = r.messages;
  table($("#results"), ["message id", "topic", "tags", "keys", "queue", "offset", "stored", "size"],
    rows.map((m) => [esc(m.msg_id), esc(m.topic), esc(m.tags), esc(m.keys.join(" ")), m.queue_id, m.queue_offset, fmtTime(m.store_timestamp), m.size]),
    (i) => showMessage(rows[i]));
  if (!rows.length) $("#results").innerHTML = "<tr><td>no message found</td></tr>";
}

async function showMessage(m) {
  const d = await api(`/api/message?msgId=${encodeURIComponent(m.offset_msg_id)}&topic=${encodeURIComponent(m.topic)}`);
  const el = $("#message-detail");
  el.innerHTML = `<h2>Message ${esc(d.msg_id)}</h2>
    <table>${[["topic", d.topic], ["offset message id", d.offset_msg_id], ["queue", `${d.queue_id} @ ${d.queue_offset}`],
      ["commit-log offset", d.commitlog_offset], ["born", `${fmtTime(d.born_timestamp)} from ${d.born_host}`],
      ["stored", `${fmtTime(d.store_timestamp)} at ${d.store_host}`], ["reconsume times", d.reconsume_times],
      ["retry of", d.retry_topic || ""], ["original message id", d.origin_msg_id || ""]].map(([k, v]) => `<tr><th>${k}</th><td>${esc(v)}</td></tr>`).join("")}</table>
    <h3>Retries and dead letters</h3>` +
    (d.history.length ? `<table id="history"><tr><th>group</th><th>as</th><th>topic</th><th>stored</th><th>reconsume times</th><th>offset message id</th></tr>${d.history.map((h) =>
      `<tr><td>${esc(h.group)}</td><td>${esc(h.kind)}</td><td>${esc(h.topic)}</td><td>${fmtTime(h.store_timestamp)}</td><td>${h.reconsume_times}</td><td>${esc(h.offset_msg_id)}</td></tr>`).join("")}</table>`
      : `<p id="history">No consumer sent it back.</p>`) + `
    <h3>Properties</h3><table>${Object.entries(d.properties).map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>
    <h3>Body (${d.body_size} bytes)</h3>
    <select id="body-as"><option value="text">text</option><option value="json" ${d.body_json == null ? "disabled" : ""}>JSON</option><option value="hex">hex</option></select>
    <pre id="body"></pre>` +
    (info.storage.length ? `<p><a href="#storage" id="to-storage">Where it sits in the store</a></p>` : "");
  const render = () => {
    const as = $("#body-as").value;
    $("#body").textContent = as === "json" ? JSON.stringify(d.body_json, null, 2) : as === "hex" ? d.body_hex.replace(/(..)/g, "$1 ").trim() : d.body_text;
  };
  $("#body-as").addEventListener("change", render);
  render();
  const link = $("#to-storage");
  if (link) link.addEventListener("click", () => { pending = d.commitlog_offset; });
}

// --- storage ---
let pending = null; // a record to open when the storage page shows
const PALETTE = ["#e6194b33", "#3cb44b33", "#ffe11944", "#4363d833", "#f5823133", "#911eb433", "#46f0f033", "#f032e633",
  "#bcf60c44", "#fabebe66", "#00808033", "#e6beff66", "#9a632433", "#fffac866", "#80000033", "#aaffc366", "#80800033", "#ffd8b166", "#00007533", "#80808033"];
const FIELD_ORDER = ["TOTALSIZE", "MAGICCODE", "BODYCRC", "QUEUEID", "FLAG", "QUEUEOFFSET", "PHYSICALOFFSET", "SYSFLAG", "BORNTIMESTAMP", "BORNHOST",
  "STORETIMESTAMP", "STOREHOSTADDRESS", "RECONSUMETIMES", "PREPAREDTRANSACTIONOFFSET", "BODYLENGTH", "BODY", "TOPICLENGTH", "TOPIC", "PROPERTIESLENGTH", "PROPERTIES"];
const colour = (name) => PALETTE[Math.max(0, FIELD_ORDER.indexOf(name)) % PALETTE.length];

async function showStorage() {
  const d = await api("/api/storage/files");
  const el = $("#files");
  el.innerHTML = `<p class="legend">Store: ${esc(d.store)}. Each commit-log file is drawn to scale (light blue: written; hatched:
    the blank record that ends a full file); the strip below it shows the written part, each record as wide as its bytes.</p>` +
    d.files.map((f) => {
      const written = Math.max(f.written, 1);
      const blank = f.end.kind === "blank" ? `<div class="blank" style="left:${(f.end.offset - f.base) / f.size * 100}%;right:0" title="blank record (MAGICCODE ${esc(f.end.magic)}): the rest of the file is unused"></div>` : "";
      // A file read only up to d.max_records records: its counts are lower bounds.
      const counted = f.more ? `the first ${f.record_count} records read (the page stops there), at least ${fmtBytes(f.written)} written`
        : `${f.record_count} records, ${fmtBytes(f.written)} written (${(f.written / f.size * 100).toFixed(3)} %); ends: ${esc(f.end.kind)}`;
      return `<div class="file"><div class="fieldname">commitlog/${esc(f.name)} — ${fmtBytes(f.size)}, ${counted}</div>
        <div class="bar"><div class="written" style="width:${f.written / f.size * 100}%"></div>${blank}</div>
        <div class="zoom">${f.records.map((r) => `<div class="rec clrec" data-offset="${r.offset}" style="flex:${r.size} 0 0" title="offset ${r.offset}: ${esc(r.topic)} queue ${r.queue_id} #${r.queue_offset}, ${r.size} bytes">${esc(r.topic)}</div>`).join("")}</div></div>`;
    }).join("") + (d.files.length ? "" : "<p>The commit log is empty: send a message.</p>") +
    `<h2>Consume queues</h2><p class="legend">One per topic and queue id: 20-byte entries (CommitLogOffset, MsgSize, TagsCode), entry n at byte n × 20.
      A consumer reads the entry at its offset, then the record it points at. Click an entry to open that record.</p>` +
    d.consume_queues.map((q) => `<div class="file cq"><div class="fieldname">consumequeue/${esc(q.topic)}/${q.queue_id} — ${q.more ? `the first ${q.entry_count} entries read (the page stops there)` : `${q.entry_count} ${q.entry_count === 1 ? "entry" : "entries"}`} in ${q.files.length} file(s) of ${fmtBytes(q.files[0] ? q.files[0].size : 0)}</div>
        <div class="zoom">${q.entries.map((e) => `<div class="rec cqe" data-offset="${e.commitlog_offset}" style="flex:0 0 40px" title="entry ${e.index} (byte ${e.position} of ${esc(e.file)}): offset ${e.commitlog_offset}, size ${e.size}, tags code ${e.tags_code}">${e.index}</div>`).join("")}</div></div>`).join("") +
    `<h2>Index files</h2><p class="legend">A 40-byte header, then hash slots of 4 bytes, then 20-byte entries (key hash, commit-log offset, time diff, previous entry).</p>` +
    d.index_files.map((f) => f.error ? `<p>index/${esc(f.name)}: ${esc(f.error)}</p>` : `<p class="fieldname">index/${esc(f.name)} — ${fmtBytes(f.size)}: ${f.header.index_count} entries (entry 0 is never used),
        ${f.header.hash_slot_count} slots in use; commit-log offsets ${f.header.begin_phy_offset} to ${f.header.end_phy_offset}; ${esc(f.header.begin_time)} to ${esc(f.header.end_time)}</p>`).join("") +
    timerHtml(d.timer);
  el.querySelectorAll(".rec").forEach((r) => r.addEventListener("click", () => showRecord(+r.dataset.offset).catch(showError)));
  if (pending != null) { const o = pending; pending = null; showRecord(o).catch(showError); }
  return d;
}

function timerHtml(t) {
  // RocketMQ 5's timer files (docs/storage.md, "Timer files"): a timer message waits in rmq_sys_wheel_timer; its
  // 52-byte unit in the timer log is linked into the wheel slot of its time.
  if (!t || (!t.checkpoint.present && !t.wheel.present && !t.log.files.length)) return "";
  const cp = t.checkpoint;
  const check = cp.present && !cp.error ? `<p class="fieldname" id="timer-checkpoint">config/timercheck: delivered up to ${esc(cp.last_read_time)};
    rmq_sys_wheel_timer enqueued up to offset ${cp.last_timer_queue_offset}; timer log flushed to ${cp.last_timer_log_flush_pos}</p>` : "";
  const wheel = t.wheel.present ? `<p class="fieldname" id="timer-wheel">timerwheel — ${fmtBytes(t.wheel.size)} (${fmtBytes(t.wheel.allocated)} allocated),
    ${t.wheel.slot_count} slots of 32 bytes (time / precision, first pos, last pos, num, magic), ${t.wheel.slots_in_use} in use:</p>
    <div class="zoom">${t.wheel.slots.map((s) => `<div class="rec-slot" style="flex:0 0 auto" title="slot ${s.index}: first unit ${s.first_pos}, last ${s.last_pos}">${esc(s.time)} × ${s.num}</div>`).join(" ")}</div>` : "";
  const mm = t.wheel.precision_mismatch; // (`pocketmq console --store` reads a wheel at 1,000 ms, whatever its store's)
  const mismatch = mm ? `<p class="fieldname" id="timer-precision">! ${mm.slots} of ${mm.checked} slot(s) ${mm.checked < t.wheel.slots_in_use ? `checked (the earliest of ${t.wheel.slots_in_use} in use)` : "in use"} disagree with the due times of the timer-log units they point at,
    read at ${t.wheel.precision_ms} ms precision: those units imply ${mm.implied_precision_ms} ms.</p>` : "";
  const logs = t.log.files.map((f) => `<div class="file cq"><div class="fieldname">timerlog/${esc(f.name)} — ${fmtBytes(f.size)}, ${f.unit_count} units of 52 bytes; ends: ${esc(f.end.kind)}</div>
    <div class="zoom">${f.units.map((u) => `<div class="rec tlu" data-offset="${u.commitlog_offset}" style="flex:0 0 52px" title="unit @${u.offset}: due ${esc(u.delayed_time)}${u.roll ? " (roll)" : ""}, previous unit ${u.prev_pos}, message at commit-log offset ${u.commitlog_offset}">${u.offset}</div>`).join("")}</div></div>`).join("");
  return `<h2>Timer files</h2><p class="legend">RocketMQ 5's timer messages: each waits in rmq_sys_wheel_timer; a 52-byte unit in the timer log
    (size, previous unit, magic, enqueue time, delay, commit-log offset, size, topic hash) is linked into the wheel slot of its time. Click a unit to open its message.</p>` +
    check + wheel + mismatch + logs;
}

function bytesHtml(fields, base) {
  // Top-level fields only (property pairs are listed in the table): each byte coloured by its field.
  return fields.filter((f) => !f.field.startsWith("  ")).map((f) =>
    `<span title="${esc(f.field)} @ ${base + f.pos}" style="background:${colour(f.field)}">${f.hex.replace(/(..)/g, "$1 ").trim()}</span>`).join(" ");
}

function cqMissing(cq, d) {
  // The entry at the record's QUEUEOFFSET is only its own when it points back at it (storage_view._cq_entry).
  if (!cq || cq.state === "pending") return "Not dispatched yet: dispatch has not reached this record, so its consume-queue entry is not written.";
  const other = cq.commitlog_offset !== undefined
    ? ` Entry ${cq.index} of ${esc(cq.path)} points at offset ${cq.commitlog_offset} (${cq.size} bytes), another record.` : "";
  const why = cq.reason === "transaction" ? "it is a transaction's prepared or rolled-back half, which is never dispatched"
    : cq.reason === "topic deleted" ? `its topic's consume queues (${esc(cq.path)}) were deleted after dispatch had passed it: the topic was deleted`
    : `its QUEUEOFFSET ${d.queue_offset} belongs to an older queue ${esc(d.topic)}/${d.queue_id} (the topic was deleted and re-created since), or it is a transaction's prepared or rolled-back half`;
  return `No consume-queue entry points at this record:${other} A consumer cannot reach it: ${why}.`;
}

async function showRecord(offset) {
  document.querySelectorAll(".rec").forEach((r) => r.classList.toggle("selected", +r.dataset.offset === offset));
  const d = await api("/api/storage/record?offset=" + offset);
  const cq = d.consume_queue;
  const idx = d.index;
  $("#record").innerHTML = `<h2>Record at commit-log offset ${d.offset}</h2>
    <p class="explain">File commitlog/${esc(d.file)}, byte ${d.position}: topic ${esc(d.topic)}, queue ${d.queue_id}, entry ${d.queue_offset} of its consume queue.
      Every integer is big-endian; the colours are the fields of docs/storage.md (section 2.1).</p>
    <div class="bytes" id="record-bytes">${bytesHtml(d.fields, 0)}</div>
    <table id="record-fields"><tr><th>pos</th><th>len</th><th>field</th><th>value</th></tr>${d.fields.map((f) =>
      `<tr><td class="num">${f.pos}</td><td class="num">${f.len}</td><td class="fieldname" style="background:${f.field.startsWith("  ") ? "" : colour(f.field)}">${esc(f.field)}</td><td>${esc(f.text)}</td></tr>`).join("")}</table>
    <h3>The consume-queue entry that points at it</h3>` +
    (cq && cq.dispatched ? `<p class="explain" id="cq-entry">Entry ${cq.index} of ${esc(cq.path)}, at byte ${cq.position} (= ${cq.index} × 20 − the file's start):
        CommitLogOffset <b>${cq.commitlog_offset}</b>, MsgSize ${cq.size}, TagsCode ${cq.tags_code}. A consumer reading queue ${d.queue_id} at offset ${cq.index} reads this entry, then the record.</p>
        <div class="bytes">${cq.fields.map((f, i) => `<span style="background:${PALETTE[i * 3]}" title="${f.field}">${cq.hex.slice(f.pos * 2, (f.pos + f.len) * 2).replace(/(..)/g, "$1 ").trim()}</span>`).join(" ")}</div>`
      : `<p id="cq-entry">${cqMissing(cq, d)}</p>`) +
    `<h3>The index slot that finds it by key</h3>` +
    (idx.length ? idx.map((k) => `<p class="explain index-key">Key <b>${esc(k.key)}</b> hashes to ${k.hash}; ${k.hash} mod ${k.hash_slots} = slot <b>${k.slot}</b>
        (byte ${k.slot_position} of index/${esc(k.file)}), which holds entry ${k.head}.
        ${k.chain.map((e) => `Entry ${e.entry} (byte ${e.position}): key hash ${e.key_hash}, phy offset ${e.phy_offset}, time diff ${e.time_diff} s, previous ${e.prev}`).join(" → ")}
        ${k.found ? `: found, entry ${k.found} points at this record.` : ": not indexed yet (or the chain was cut)."}</p>`).join("")
      : "<p>No key of this record is in an index file (it has no keys, or it is not indexed yet).</p>");
  return d;
}

async function sendAndWatch(ev) {
  ev.preventDefault();
  const f = Object.fromEntries(new FormData($("#send")));
  const steps = $("#steps");
  steps.innerHTML = "";
  const step = (text, done) => { const li = document.createElement("li"); li.textContent = text; if (done) li.className = "done"; steps.appendChild(li); return li; };
  const r = await api("/api/send", f);
  step(`Sent: the broker answered ${r.status} for message ${r.msg_id}, queue ${r.queue_id}, queue offset ${r.queue_offset}.`, true);
  const files = await showStorage();
  const file = files.files.find((x) => x.records.some((rec) => rec.offset === r.commitlog_offset));
  const rec = file && file.records.find((x) => x.offset === r.commitlog_offset);
  document.querySelectorAll(`.clrec[data-offset="${r.commitlog_offset}"]`).forEach((e) => e.classList.add("new"));
  step(`Appended: a ${rec ? rec.size : "?"}-byte record at commit-log offset ${r.commitlog_offset}` +
    (file ? `, byte ${r.commitlog_offset - file.base} of file ${file.name}.` : "."), true);
  let d;
  for (let i = 0; i < 50; i++) { // the dispatcher runs a moment after the append
    d = await showRecord(r.commitlog_offset);
    const state = d.consume_queue ? d.consume_queue.state : "pending";
    if (state === "none" || (state === "dispatched" && (!f.keys || d.index.some((k) => k.found)))) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  const cq = d.consume_queue;
  step(cq && cq.dispatched ? `Dispatched: entry ${cq.index} of ${cq.path} now points at offset ${cq.commitlog_offset} (${cq.size} bytes).`
    : cq && cq.state === "none" ? "No consume-queue entry points at this record." : "Not dispatched yet.", cq && cq.dispatched);
  for (const k of d.index) step(k.found ? `Indexed: key ${k.key} → slot ${k.slot} → entry ${k.found} → offset ${r.commitlog_offset}.` : `Key ${k.key} not indexed yet.`, !!k.found);
}

// --- navigation ---
const PAGES = {cluster: showCluster, topics: showTopics, groups: showGroups, messages: async () => {}, storage: showStorage};

async function route() {
  const page = (location.hash || "#cluster").slice(1);
  document.querySelectorAll(".page").forEach((p) => { p.hidden = p.id !== "page-" + page; });
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === page));
  showError(null);
  try { await (PAGES[page] || showCluster)(); document.body.dataset.loaded = page; } catch (e) { showError(e); document.body.dataset.loaded = page; }
}

async function start() {
  info = await api("/api/info");
  $("#mode").textContent = `name server ${info.namesrv} · ${info.admin ? "admin" : "read-only"}`;
  document.querySelectorAll(".admin-only").forEach((e) => { e.hidden = !info.admin; });
  $("#nav-storage").hidden = !info.storage.length;
  $("#show-system").addEventListener("change", () => showTopics().catch(showError));
  $("#search").addEventListener("submit", (ev) => search(ev).catch(showError));
  $("#send").addEventListener("submit", (ev) => sendAndWatch(ev).catch(showError));
  $("#create-topic").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    try { await api("/api/topic", {topic: f.get("topic"), queues: +f.get("queues")}); await showTopics(); } catch (e) { showError(e); }
  });
  window.addEventListener("hashchange", route);
  await route();
}

start().catch(showError);
