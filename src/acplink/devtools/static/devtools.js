// acplink devtools: plain JS, no build step, no external resources.
"use strict";
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  const post = (url, data) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(data || {}) }).then(r => r.json());

  // -- sessions list: reload the rows when the database changes ----------------------------------
  const sessions = $("#sessions");
  if (sessions) {
    const live = new EventSource(`/events?since=${encodeURIComponent(sessions.dataset.since || "")}`);
    live.addEventListener("change", () => {
      fetch(sessions.dataset.liveReload).then(r => r.text()).then(html => { $("tbody", sessions).innerHTML = html; });
    });
  }

  // -- timeline: detail panel, infinite scroll, live rows ------------------------------------------
  const timeline = $("#timeline");
  if (timeline) {
    const conn = timeline.dataset.conn;
    const filters = timeline.dataset.filters;
    const body = $("tbody", timeline);
    const detail = $("#detail");
    let loading = false;
    const lastSeq = () => { const rows = body.querySelectorAll("tr.msg"); return rows.length ? +rows[rows.length - 1].dataset.seq : 0; };
    const open = (row) => {
      body.querySelectorAll("tr.sel").forEach(r => r.classList.remove("sel"));
      row.classList.add("sel");
      detail.parentElement.classList.add("open");
      fetch(`/c/${conn}/m/${row.dataset.seq}`).then(r => r.text()).then(html => { detail.innerHTML = html; });
    };
    body.addEventListener("click", (ev) => { const row = ev.target.closest("tr.msg"); if (row) open(row); });
    detail.addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-copy]");
      if (!b) return;
      fetch(b.dataset.copy).then(r => r.text()).then(t => navigator.clipboard.writeText(t)).then(() => { b.textContent = "Copied"; }, () => { b.textContent = "Copy failed"; });
    });
    let again = false;  // a live change arrived while rows were being fetched: fetch again after
    const more = (after, mark) => {
      if (loading) { if (mark) again = true; return Promise.resolve(); }
      loading = true;
      return fetch(`/c/${conn}/rows?after=${after}&${filters}`).then(r => {
        timeline.dataset.last = r.headers.get("x-last") || "";
        return r.text();
      }).then(html => {
        const t = document.createElement("tbody"); t.innerHTML = html;
        Array.from(t.children).forEach(row => { if (mark) row.classList.add("new"); body.appendChild(row); });
      }).finally(() => {
        loading = false;
        if (again && !timeline.dataset.last) { again = false; more(lastSeq(), true); }
      });
    };
    const sentinel = $("#more");
    new IntersectionObserver((entries) => {
      if (entries.some(e => e.isIntersecting) && timeline.dataset.last) more(timeline.dataset.last, false);
    }, { root: $("#rows-box"), rootMargin: "400px" }).observe(sentinel);
    if (timeline.dataset.live === "1") {
      const live = new EventSource(`/events?since=${encodeURIComponent(timeline.dataset.since || "")}`);
      live.addEventListener("change", (ev) => {
        const data = JSON.parse(ev.data);
        if (data.conns.map(String).includes(conn) && !timeline.dataset.last) more(lastSeq(), true);
      });
    }
    const at = timeline.dataset.open;
    if (at) {
      const row = body.querySelector(`tr.msg[data-seq="${at}"]`);
      if (row) { open(row); row.scrollIntoView({ block: "center" }); }
    }
  }

  // -- connect: start an agent and chat with it -----------------------------------------------------
  const connectForm = $("#connect");
  if (connectForm) {
    const status = $("#chat-status");
    const log = $("#chat-log");
    const chatBox = $("#chat");
    const send = $("#send");
    const why = $("#send-why");
    const latest = $("#chat-latest");
    let chat = null, source = null, agentMsg = null, thought = null;
    const tools = {};
    const questions = {};  // permission question id → its box
    // the log follows new output while the user is at its end; one who scrolled up to read is
    // left there (a button says there is more below)
    let follow = true;
    const atEnd = () => log.scrollHeight - log.scrollTop - log.clientHeight < 24;
    log.addEventListener("scroll", () => { follow = atEnd(); if (follow) latest.hidden = true; });
    const toEnd = () => { log.scrollTop = log.scrollHeight; follow = true; latest.hidden = true; };
    latest.addEventListener("click", toEnd);
    // Send is off while a turn runs (one turn at a time), the reason beside it
    let running = false;  // a turn runs: from its prompt event to its stop (or error) event
    const busy = (reason) => {
      send.disabled = !!reason;
      why.textContent = reason || "";
    };
    const say = (cls, text, label) => { const d = el("div", cls); if (label) d.appendChild(el("span", "who", label)); d.appendChild(el("div", "", text)); log.appendChild(d); return d; };
    const renderTool = (u) => {
      let box = tools[u.toolCallId];
      if (!box) { box = tools[u.toolCallId] = el("div", "tool"); box.data = {}; log.appendChild(box); agentMsg = null; }
      Object.assign(box.data, Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined)));
      const d = box.data;
      box.innerHTML = "";
      const head = el("div", "toolhead");
      head.append(el("span", "kind", d.kind || "other"), " ", el("b", "", d.title || ""), " ", el("span", "status " + (d.status || "pending"), d.status || "pending"));
      box.appendChild(head);
      (d.content || []).forEach(c => {
        if (c.type === "diff") {
          const pre = el("pre", "diff");
          const lines = (t) => t.replace(/\n$/, "").split("\n");
          if (c.oldText) lines(c.oldText).forEach(l => pre.appendChild(el("span", "del", "-" + l)));
          lines(c.newText || "").forEach(l => pre.appendChild(el("span", "add", "+" + l)));
          box.append(el("div", "dim", c.path), pre);
        } else if (c.type === "content" && c.content && c.content.text !== undefined) {
          box.appendChild(el("pre", "out", c.content.text));
        }
      });
    };
    const renderPlan = (u) => {
      let box = $("#live-plan");
      // a plan is shown once and updated in place: an update does not split the agent's reply
      // that streams around it (only a new plan box, placed after that reply, starts a new one)
      if (!box) { box = el("div", "plan"); box.id = "live-plan"; log.appendChild(box); agentMsg = null; }
      box.innerHTML = "<b>Plan</b>";
      const ol = el("ol");
      (u.entries || []).forEach(e => { const li = el("li", e.status); li.append(el("span", "st", e.status), " " + e.content); ol.appendChild(li); });
      box.appendChild(ol);
    };
    // an answered question: its buttons off, the chosen one marked (also when the page is
    // reloaded: the chat's events, replayed, carry the answer)
    const answered = (box, option) => {
      if (!box || box.classList.contains("answered")) return;
      box.classList.add("answered");
      let chosen = null;
      box.querySelectorAll("button").forEach(b => {
        b.disabled = true;
        const on = option !== null && b.dataset.option === option;
        b.setAttribute("aria-pressed", on ? "true" : "false");
        if (on) { b.classList.add("chosen"); chosen = b.textContent; }
      });
      box.appendChild(el("b", "answer", " → " + (chosen || "cancelled")));
    };
    const failed = (message, stderr) => {
      status.innerHTML = "";
      const d = el("div", "error", message); d.id = "connect-error"; status.appendChild(d);
      if (stderr && stderr.length) { const pre = el("pre", "stderr", stderr.join("\n")); pre.id = "connect-stderr"; status.appendChild(pre); }
      busy("the agent did not start");
    };
    const RUNNING = "the agent is answering: Send is back when the turn ends (Cancel stops it)";
    const onEvent = (ev) => {
      const e = JSON.parse(ev.data);
      if (e.type === "starting") {
        status.textContent = `starting ${e.command}…`;
      } else if (e.type === "failed") {
        failed(e.message, e.stderr);
      } else if (e.type === "prompt") {
        say("user", e.text, "prompt"); agentMsg = null; thought = null;
        running = true; busy(RUNNING);
      } else if (e.type === "ready") {
        status.innerHTML = "";
        status.append(`Connected to ${e.agent}, session ${e.session}. `);
        const a = el("a", "", "Traffic of this connection"); a.href = `/c/${e.conn}`; a.target = "_blank"; status.appendChild(a);
      } else if (e.type === "update") {
        const u = e.update, kind = u.sessionUpdate;
        if (kind === "agent_message_chunk") {
          if (!agentMsg) { agentMsg = say("agent", "", "agent"); thought = null; }
          agentMsg.lastChild.textContent += (u.content && u.content.text) || "";
        } else if (kind === "agent_thought_chunk") {
          if (!thought) thought = say("thought", "", "thinking");
          thought.lastChild.textContent += (u.content && u.content.text) || "";
        } else if (kind === "tool_call" || kind === "tool_call_update") {
          renderTool(u);
        } else if (kind === "plan") {
          renderPlan(u);
        }
      } else if (e.type === "permission") {
        const box = questions[e.id] = say("permission", e.title, "permission");
        box.dataset.question = e.id;
        e.options.forEach(o => {
          const b = el("button", "", o.name); b.type = "button"; b.dataset.kind = o.kind; b.dataset.option = o.id;
          b.onclick = () => { post(`/connect/${chat}/answer`, { id: e.id, option: o.id }); answered(box, o.id); };
          box.appendChild(b);
        });
        agentMsg = null;
        busy("the agent waits for your answer to its permission question (or Cancel the turn)");
      } else if (e.type === "answered") {
        answered(questions[e.id], e.option);
        if (running) busy(RUNNING);  // (the turn goes on; its stop event ends it)
      } else if (e.type === "stop") {
        say("stop", "stop reason: " + e.reason); agentMsg = null; thought = null;
        running = false; busy(null);
      } else if (e.type === "error") {
        say("error", e.message);
        running = false; busy(null);
      }
    };
    // each event may add output: the log follows it (unless the user scrolled up)
    const onMessage = (ev) => {
      const stay = follow;
      onEvent(ev);
      if (stay) toEnd(); else if (atEnd()) follow = true; else latest.hidden = false;
    };
    // follow a chat's events (they are replayed from its start); the address names the chat
    const attach = (id) => {
      if (source) source.close();
      chat = id;
      source = new EventSource(`/connect/${id}/events`);
      source.onmessage = onMessage;
      if (location.pathname !== `/connect/${id}`) history.replaceState(null, "", `/connect/${id}`);
    };
    if (chatBox.dataset.chat) attach(+chatBox.dataset.chat);
    connectForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const f = new FormData(connectForm);
      if (source) { source.close(); source = null; }
      chat = null;
      status.textContent = "starting…"; chatBox.hidden = false; log.innerHTML = "";
      for (const k in tools) delete tools[k];
      for (const k in questions) delete questions[k];
      agentMsg = null; thought = null; running = false; busy(null); follow = true; latest.hidden = true;
      post("/connect/start", { command: f.get("command"), cwd: f.get("cwd"), fs: f.get("fs") === "on", terminal: f.get("terminal") === "on" }).then(r => {
        if (r.error) { failed(r.error, r.stderr); return; }
        attach(r.id);
      }, (err) => { status.textContent = "request failed: " + err; });
    });
    $("#prompt").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const input = $("#prompt-text");
      const text = input.value.trim();
      if (!text || chat === null || send.disabled) return;
      input.value = "";
      busy(RUNNING);  // (until the turn's stop event; the prompt event confirms it)
      toEnd();
      post(`/connect/${chat}/prompt`, { text }).then(r => {
        if (r.error) { say("error", r.error); busy(null); input.value = input.value || text; toEnd(); }
      });
    });
    $("#cancel").addEventListener("click", () => { if (chat !== null) post(`/connect/${chat}/cancel`); });
  }
})();
