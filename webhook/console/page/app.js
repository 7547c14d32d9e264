// The herald admin console. It reads and acts through /console/api/ on
// this origin with the session cookie the sign-in set (HttpOnly: this
// script never sees it) and the CSRF token the session answers with,
// which it keeps in memory only. Everything shown is built as DOM nodes
// with textContent; charts are SVG nodes drawn here from the JSON.
"use strict";

(function () {
  const API = "/console/api/";
  const LANG_KEY = "herald.console.lang";
  const SVG = "http://www.w3.org/2000/svg";

  const T = {
    en: {
      title: "herald console", skip: "Skip to content", signout: "Sign out", signin: "Sign in",
      signin_hint: "Run herald console login on the server and open the link it prints, or paste its code here.",
      code: "Sign-in code", signin_button: "Sign in", views: "Views", attention: "Needs attention", tasks: "Tasks",
      delivery: "Delivery", refresh: "Refresh", pending: "Pending approvals", failing: "Failing watches",
      unknown: "Pushes with unknown outcome",
      unknown_hint: "herald stopped or lost the answer while the provider may have had these. Check the recipient first; redeliver only what did not arrive.",
      unreachable: "Unreachable recipients", f_state: "State", f_owner: "Owner", f_kind: "Kind", any: "any",
      none: "Nothing here.", last_runs: "Last 30 runs", r_start: "Start", r_outcome: "Outcome", r_items: "Items",
      r_changes: "New / changed / removed", r_duration: "Duration", window: "Window", reason: "Reason (optional)",
      cancel: "Cancel", approve: "Approve", reject: "Reject", redeliver: "Redeliver", details: "Details",
      signed_in_as: "Signed in as {0}", bad_code: "That sign-in code is wrong, used or expired. Run herald console login for a new one.",
      signed_out: "You are signed out. Run herald console login on the server for a new link.",
      unreachable_net: "Could not reach herald. Check your connection and try again.",
      failed_http: "herald answered {0}: {1}", approved: "Approved {0}.", rejected: "Rejected {0}.",
      redelivered: "{0} is queued again.", confirm_reject: "Reject request {0}?",
      confirm_reject_text: "{1} asked to watch {0}. The requester is told.",
      confirm_redeliver: "Send this push again?",
      confirm_redeliver_text: "{0} to {1}. It may already have arrived: herald could not learn whether it did. Check the recipient first.",
      requested_by: "requested by {0}", streak: "failed {0} times in a row", class: "class: {0}",
      next_held: "{0} asked herald to wait until then", next_backoff: "backing off after {0} failures in a row",
      attempts: "{0} attempts", to: "to", next_run: "Next run", schedule: "Schedule", scope: "Approved scope",
      recipients: "Recipients", source: "Source", owner: "Owner", state: "State", none_short: "—",
      kind: "Kind", requested: "Requested", decision: "Decision", remind: "Reminders before due",
      reply_to: "the requester's chat", owner_inbox: "the owner's inbox", inbox: "an inbox", chat: "a chat",
      nothing_pending: "No request waits for you.", nothing_failing: "Every watch checks fine.",
      nothing_unknown: "No push waits for a human.", nothing_unreachable: "Every recipient is reachable.",
      refused: "{0} attempts refused; {1} pushes wait to be tried again",
      run_now: "Check now", pause: "Pause", resume: "Resume", delete: "Delete",
      by_recipient: "By recipient", recipient: "Recipient", last_error: "Last error",
      confirm_delete: "Delete this task?", confirm_delete_text: "{0} stops being checked and leaves the task list.",
      checking: "Checking {0}…", checked: "{0} checked: {1}.", now_pause: "{0} is paused.", now_resume: "{0} is resumed.", now_delete: "{0} is deleted.",
      chart_runs: "{0} runs: bar height is items seen, colour is the outcome, the line is the duration.",
      chart_delivery: "{0} attempts over the last {1} hours by result.", attempts_total: "{0}: {1} attempts",
      states: "Ledger entries looked at: {0}", no_attempts: "No delivery attempts in this window.",
      completed: "completed", failed: "failed", retry: "retry", unknown_r: "unknown",
      st_pending_approval: "pending approval", st_active: "active", st_paused: "paused", st_error: "error",
      st_done: "done", st_rejected: "rejected", lang_other: "中文", by: "by {0}",
      recipient_states: "Recipients",
      recipient_states_hint: "A recipient that is gone, or failed for days without a success, is disabled: its pushes end failed unsent until you enable it.",
      rs_enabled: "enabled", rs_disabled: "disabled ({0})", last_success: "last success {0}", never: "never",
      failures: "{0} failures since", enable: "Enable", redeliver_range: "Redeliver failed",
      enabled_done: "{0} is enabled again.", nothing_recipients: "No recipient is declared or disabled.",
      confirm_range: "Send {0} failed pushes to {1} again?",
      confirm_range_text: "Each goes once, with its original id. Pushes that were completed are never sent again.",
      range_none: "No failed push of {0} to send again.", range_done: "{0} pushes queued again.",
    },
    zh: {
      title: "herald 控制台", skip: "跳到内容", signout: "退出登录", signin: "登录",
      signin_hint: "在服务器上运行 herald console login 并打开它给出的链接，或在此粘贴登录码。",
      code: "登录码", signin_button: "登录", views: "视图", attention: "待处理", tasks: "任务",
      delivery: "投递", refresh: "刷新", pending: "待批准的申请", failing: "检查失败的任务",
      unknown: "结果未知的推送",
      unknown_hint: "herald 在服务商可能已收到时停止或丢失了回应。请先确认接收方是否收到，只重新投递没有收到的。",
      unreachable: "无法送达的接收方", f_state: "状态", f_owner: "创建者", f_kind: "类型", any: "全部",
      none: "这里没有内容。", last_runs: "最近 30 次检查", r_start: "开始", r_outcome: "结果", r_items: "条目",
      r_changes: "新增 / 变更 / 移除", r_duration: "用时", window: "时间范围", reason: "理由（可不填）",
      cancel: "取消", approve: "批准", reject: "拒绝", redeliver: "重新投递", details: "详情",
      signed_in_as: "已登录：{0}", bad_code: "登录码不对、已用过或已过期。请运行 herald console login 获取新的。",
      signed_out: "你已退出登录。请在服务器上运行 herald console login 获取新链接。",
      unreachable_net: "无法连接 herald。请检查网络后重试。",
      failed_http: "herald 返回 {0}：{1}", approved: "已批准 {0}。", rejected: "已拒绝 {0}。",
      redelivered: "{0} 已重新排队。", confirm_reject: "拒绝申请 {0}？",
      confirm_reject_text: "{1} 申请关注 {0}。申请人会收到通知。",
      confirm_redeliver: "再次发送这条推送？",
      confirm_redeliver_text: "{0}，发往{1}。它可能已经送达：herald 无法确认。请先确认接收方。",
      requested_by: "申请人 {0}", streak: "连续失败 {0} 次", class: "类别：{0}",
      next_held: "{0} 要求在此之前不要访问", next_backoff: "已连续失败 {0} 次，检查间隔已拉长",
      attempts: "尝试 {0} 次", to: "发往", next_run: "下次检查", schedule: "计划", scope: "批准范围",
      recipients: "接收方", source: "来源", owner: "创建者", state: "状态", none_short: "—",
      kind: "类型", requested: "申请时间", decision: "决定", remind: "截止前提醒",
      reply_to: "申请人的聊天", owner_inbox: "创建者的收件箱", inbox: "一个收件箱", chat: "一个聊天",
      nothing_pending: "没有等待你处理的申请。", nothing_failing: "所有任务检查正常。",
      nothing_unknown: "没有需要人工处理的推送。", nothing_unreachable: "所有接收方都可送达。",
      refused: "{0} 次尝试被拒绝；{1} 条推送等待重试",
      run_now: "立即检查", pause: "暂停", resume: "恢复", delete: "删除",
      by_recipient: "按接收方", recipient: "接收方", last_error: "最近的错误",
      confirm_delete: "删除这个任务？", confirm_delete_text: "{0} 将不再检查，并从任务列表中移除。",
      checking: "正在检查 {0}…", checked: "{0} 已检查：{1}。", now_pause: "{0} 已暂停。", now_resume: "{0} 已恢复。", now_delete: "{0} 已删除。",
      chart_runs: "{0} 次检查：柱高为条目数，颜色为结果，折线为用时。",
      chart_delivery: "最近 {1} 小时共 {0} 次投递尝试，按结果分色。", attempts_total: "{0}：{1} 次尝试",
      states: "查看的账本记录：{0}", no_attempts: "这段时间没有投递尝试。",
      completed: "成功", failed: "失败", retry: "重试", unknown_r: "未知",
      st_pending_approval: "待批准", st_active: "运行中", st_paused: "已暂停", st_error: "出错",
      st_done: "已完成", st_rejected: "已拒绝", lang_other: "English", by: "由 {0}",
      recipient_states: "接收方",
      recipient_states_hint: "接收方已不存在，或连续数天没有一次成功时会被停用：发往它的推送不再发送，直接记为失败，直到你重新启用。",
      rs_enabled: "已启用", rs_disabled: "已停用（{0}）", last_success: "上次成功 {0}", never: "从未",
      failures: "此后失败 {0} 次", enable: "启用", redeliver_range: "补发失败的推送",
      enabled_done: "{0} 已重新启用。", nothing_recipients: "没有声明或被停用的接收方。",
      confirm_range: "向 {1} 补发 {0} 条失败的推送？",
      confirm_range_text: "每条只发一次，沿用原来的 id。已成功的推送不会再发。",
      range_none: "没有要向 {0} 补发的失败推送。", range_done: "已有 {0} 条推送重新排队。",
    },
  };

  const $ = (id) => document.getElementById(id);
  let lang = pickLang();
  let csrf = "";
  let view = "attention";
  let tasksData = null;
  let openTask = "";

  function pickLang() {
    try {
      const saved = localStorage.getItem(LANG_KEY);
      if (saved === "en" || saved === "zh") {
        return saved;
      }
    } catch (e) {
      // storage off: follow the browser
    }
    const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"];
    for (const l of langs) {
      const s = String(l).toLowerCase();
      if (s.startsWith("zh")) {
        return "zh";
      }
      if (s.startsWith("en")) {
        return "en";
      }
    }
    return "en";
  }

  function t(key, ...args) {
    let s = (T[lang] && T[lang][key]) || T.en[key] || key;
    args.forEach((a, i) => {
      s = s.split("{" + i + "}").join(String(a));
    });
    return s;
  }

  function applyLang() {
    document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
    document.title = t("title");
    for (const n of document.querySelectorAll("[data-i18n]")) {
      n.textContent = t(n.dataset.i18n);
    }
    for (const n of document.querySelectorAll("[data-i18n-label]")) {
      n.setAttribute("aria-label", t(n.dataset.i18nLabel));
    }
    const b = $("lang");
    b.textContent = t("lang_other");
    b.lang = lang === "zh" ? "en" : "zh";
  }

  function node(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) {
      n.className = cls;
    }
    if (text !== undefined && text !== null) {
      n.textContent = String(text);
    }
    return n;
  }

  function svg(tag, attrs) {
    const n = document.createElementNS(SVG, tag);
    for (const k in attrs) {
      n.setAttribute(k, String(attrs[k]));
    }
    return n;
  }

  function str(v) {
    return typeof v === "string" ? v : "";
  }

  function when(s) {
    const d = new Date(s);
    if (!s || isNaN(d.getTime()) || d.getFullYear() < 2000) {
      return null;
    }
    const n = node("time", "", d.toLocaleString(lang === "zh" ? "zh-CN" : undefined));
    n.dateTime = d.toISOString();
    return n;
  }

  function stateText(s) {
    const k = "st_" + s;
    return T.en[k] ? t(k) : s;
  }

  function recipientText(r) {
    if (!r || typeof r !== "object") {
      return "";
    }
    if (str(r.name)) {
      return r.name;
    }
    return t(str(r.role) || "chat") + " (" + str(r.kind) + ")";
  }

  function setStatus(msg) {
    const s = $("status");
    s.textContent = msg;
    s.hidden = msg === "";
  }

  function showError(msg) {
    const e = $("error");
    e.textContent = msg;
    e.hidden = msg === "";
  }

  function signedOut(msg) {
    csrf = "";
    $("app").hidden = true;
    $("who").hidden = true;
    $("signout").hidden = true;
    $("signin").hidden = false;
    showError(msg);
    $("code").focus();
  }

  // call fetches one API route; it answers the decoded body, or null after
  // showing what went wrong (a lost session shows the sign-in form).
  async function call(path, body) {
    const opts = { credentials: "same-origin", cache: "no-store", redirect: "error", headers: {} };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      if (csrf) {
        opts.headers["X-Herald-CSRF"] = csrf;
      }
      opts.body = JSON.stringify(body);
    }
    let res;
    let data = null;
    try {
      res = await fetch(API + path, opts);
      data = await res.json();
    } catch (e) {
      showError(res ? t("failed_http", res.status, "") : t("unreachable_net"));
      return null;
    }
    if (res.ok && data && data.ok) {
      return data;
    }
    const code = data && data.error ? str(data.error.code) : "";
    if (code === "signed_out" || code === "not_admin") {
      signedOut(code === "signed_out" ? t("signed_out") : str(data.error.message));
      return null;
    }
    if (code === "bad_code") {
      signedOut(t("bad_code"));
      return null;
    }
    showError(t("failed_http", res.status, data && data.error ? str(data.error.message) : ""));
    return null;
  }

  function signedIn(data) {
    csrf = str(data.csrf);
    $("signin").hidden = true;
    $("app").hidden = false;
    const who = $("who");
    who.dataset.p = str(data.principal);
    who.textContent = t("signed_in_as", str(data.principal));
    who.hidden = false;
    $("signout").hidden = false;
    showError("");
    show(view);
  }

  async function signIn(code) {
    if (!code) {
      return;
    }
    const data = await call("login", { code: code });
    if (data) {
      setStatus("");
      signedIn(data);
    }
  }

  // ---------------------------------------------------------------- views

  function show(v) {
    view = v;
    for (const name of ["attention", "tasks", "delivery"]) {
      const tab = $("tab-" + name);
      const on = name === v;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      $("view-" + name).hidden = !on;
    }
    load();
  }

  function load() {
    showError("");
    if (view === "attention") {
      loadAttention();
      loadRecipients();
    } else if (view === "tasks") {
      loadTasks();
    } else {
      loadDelivery();
    }
  }

  function empty(list, key) {
    if (list.childElementCount === 0) {
      list.append(node("li", "empty", t(key)));
    }
  }

  function card(title, lines, buttons) {
    const li = node("li", "card");
    li.append(node("div", "card-title", title));
    for (const l of lines) {
      if (l) {
        li.append(l);
      }
    }
    if (buttons.length) {
      const row = node("div", "row");
      row.append(...buttons);
      li.append(row);
    }
    return li;
  }

  function line(...parts) {
    const p = node("p", "meta");
    for (const x of parts) {
      if (x === null || x === undefined || x === "") {
        continue;
      }
      if (p.childNodes.length) {
        p.append(" · ");
      }
      p.append(typeof x === "string" ? x : x);
    }
    return p.childNodes.length ? p : null;
  }

  function button(label, cls, fn) {
    const b = node("button", cls, label);
    b.type = "button";
    b.addEventListener("click", fn);
    return b;
  }

  async function loadAttention() {
    const data = await call("attention");
    if (!data) {
      return;
    }
    const pending = $("pending");
    pending.replaceChildren();
    for (const p of data.pending || []) {
      const rid = str(p.request_id) || str(p.id);
      pending.append(card(rid + " · " + (str(p.name) || str(p.source)), [
        line(str(p.source), str(p.schedule), str(p.kind)),
        line(t("requested_by", str(p.requested_by)), when(p.requested_at)),
        line(t("recipients") + ": " + (p.recipients || []).map(recipientText).join(", ")),
      ], [
        button(t("approve"), "primary", () => decide("approve", rid)),
        button(t("reject"), "", () => rejectAsk(rid, p)),
      ]));
    }
    empty(pending, "nothing_pending");
    const failing = $("failing");
    failing.replaceChildren();
    for (const f of data.failing || []) {
      failing.append(card(str(f.name) || str(f.id), [
        line(str(f.id), stateText(str(f.state)), t("streak", f.streak), f.class ? t("class", f.class) : ""),
        f.last_error ? node("p", "err", f.last_error) : null,
        line(when(f.last_run)),
      ], [button(t("details"), "", () => openDetail(str(f.id)))]));
    }
    empty(failing, "nothing_failing");
    const unknown = $("unknown");
    unknown.replaceChildren();
    for (const u of data.unknown || []) {
      const to = recipientText(u.recipient);
      unknown.append(card(str(u.task_name) + " → " + to, [
        line(str(u.kind), t("attempts", u.attempts), when(u.updated_at)),
        u.error ? node("p", "err", u.error) : null,
        line(node("code", "key", str(u.key))),
      ], [button(t("redeliver"), "", () => redeliverAsk(u, to))]));
    }
    empty(unknown, "nothing_unknown");
    const unr = $("unreachable");
    unr.replaceChildren();
    for (const u of data.unreachable || []) {
      unr.append(card(str(u.task_name), [line(str(u.task), (u.recipients || []).map(recipientText).join(", "))],
        [button(t("details"), "", () => openDetail(str(u.task)))]));
    }
    for (const r of data.refusing || []) {
      unr.append(card(recipientText(r.recipient), [
        line(t("refused", r.attempts, r.pushes), when(r.updated_at)),
        r.last_error ? node("p", "err", r.last_error) : null,
      ], []));
    }
    empty(unr, "nothing_unreachable");
  }

  async function loadRecipients() {
    const data = await call("recipients");
    if (!data) {
      return;
    }
    const list = $("recipient-states");
    list.replaceChildren();
    for (const r of data.recipients || []) {
      const name = str(r.name);
      const id = str(r.id);
      const off = str(r.state) === "disabled";
      const buttons = [button(t("redeliver_range"), "", () => redeliverRangeAsk(id, name))];
      if (off) {
        buttons.unshift(button(t("enable"), "primary", () => enableRecipient(id, name)));
      }
      list.append(card(name, [
        line(str(r.kind), off ? t("rs_disabled", str(r.reason)) : t("rs_enabled"),
          t("last_success", r.last_success ? when(r.last_success) : t("never")),
          r.failures ? t("failures", r.failures) : ""),
        r.last_error ? node("p", "err", str(r.last_error)) : null,
      ], buttons));
    }
    empty(list, "nothing_recipients");
  }

  async function enableRecipient(id, name) {
    const data = await call("recipients/enable", { name: id });
    if (data) {
      setStatus(t("enabled_done", name));
      loadRecipients();
    }
  }

  // redeliverRangeAsk lists a recipient's failed pushes first (a dry run),
  // and queues them only once the count is confirmed.
  async function redeliverRangeAsk(id, name) {
    const dry = await call("recipients/redeliver", { name: id, state: "failed", dry_run: true });
    if (!dry) {
      return;
    }
    const n = (dry.result.effects || []).length;
    if (n === 0) {
      setStatus(t("range_none", name));
      return;
    }
    if (!(await ask(t("confirm_range", n, name), t("confirm_range_text"), t("redeliver"), false))) {
      return;
    }
    const data = await call("recipients/redeliver", { name: id, state: "failed" });
    if (data) {
      setStatus(t("range_done", data.result.queued));
      loadRecipients();
    }
  }

  async function decide(op, id, reason) {
    const data = await call(op, { id: id, reason: reason || "" });
    if (data) {
      setStatus(t(op === "approve" ? "approved" : "rejected", id));
      loadAttention();
    }
  }

  // ask opens the confirmation dialog; it resolves to true on confirm.
  function ask(title, text, okLabel, withReason) {
    const d = $("confirm");
    $("confirm-h").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = okLabel;
    $("reason-label").hidden = !withReason;
    $("reason").value = "";
    return new Promise((resolve) => {
      const done = (ok) => {
        $("confirm-ok").removeEventListener("click", yes);
        $("confirm-cancel").removeEventListener("click", no);
        d.removeEventListener("cancel", no);
        if (d.open) {
          d.close();
        }
        resolve(ok);
      };
      const yes = () => done(true);
      const no = () => done(false);
      $("confirm-ok").addEventListener("click", yes);
      $("confirm-cancel").addEventListener("click", no);
      d.addEventListener("cancel", no);
      d.showModal();
      (withReason ? $("reason") : $("confirm-cancel")).focus();
    });
  }

  async function rejectAsk(rid, p) {
    if (await ask(t("confirm_reject", rid), t("confirm_reject_text", str(p.source), str(p.requested_by)), t("reject"), true)) {
      decide("reject", rid, $("reason").value.trim());
    }
  }

  async function redeliverAsk(u, to) {
    if (!(await ask(t("confirm_redeliver"), t("confirm_redeliver_text", str(u.task_name), to), t("redeliver"), false))) {
      return;
    }
    const data = await call("redeliver", { key: str(u.key) });
    if (data) {
      setStatus(t("redelivered", str(u.key)));
      loadAttention();
    }
  }

  // ---------------------------------------------------------------- tasks

  // taskAct pauses, resumes, deletes (after asking) or checks a task now,
  // as chat and the CLI do, and shows the task as it then is.
  async function taskAct(op, tk) {
    const name = str(tk.name) || str(tk.id);
    if (op === "delete" && !(await ask(t("confirm_delete"), t("confirm_delete_text", name), t("delete"), false))) {
      return;
    }
    if (op === "run") {
      setStatus(t("checking", name));
    }
    const data = await call(op, { id: str(tk.id) });
    if (!data) {
      return;
    }
    setStatus(op === "run" ? t("checked", name, str((data.result || {}).outcome)) : t("now_" + op, name));
    if (op === "delete") {
      $("detail").hidden = true;
      openTask = "";
    }
    loadTasks();
  }

  function fillSelect(sel, values, label) {
    const cur = sel.value;
    sel.replaceChildren();
    const any = node("option", "", t("any"));
    any.value = "";
    sel.append(any);
    for (const v of values) {
      const o = node("option", "", label ? label(v) : v);
      o.value = v;
      sel.append(o);
    }
    sel.value = values.includes(cur) ? cur : "";
  }

  async function loadTasks() {
    const q = new URLSearchParams();
    for (const [k, id] of [["state", "f-state"], ["owner", "f-owner"], ["kind", "f-kind"]]) {
      if ($(id).value) {
        q.set(k, $(id).value);
      }
    }
    const data = await call("tasks?" + q.toString());
    if (!data) {
      return;
    }
    tasksData = data;
    fillSelect($("f-state"), ["pending_approval", "active", "paused", "error", "done", "rejected"], stateText);
    fillSelect($("f-owner"), data.owners || []);
    fillSelect($("f-kind"), data.kinds || []);
    const list = $("task-list");
    list.replaceChildren();
    for (const it of data.tasks || []) {
      const li = node("li", "task");
      const b = button(str(it.name) || str(it.id), "link", () => openDetail(str(it.id)));
      b.setAttribute("aria-controls", "detail");
      li.append(b, line(str(it.id), stateText(str(it.state)), str(it.owner), str(it.kind), str(it.schedule),
        it.next_run ? when(it.next_run) : "", str(it.last_outcome)), line(str(it.source)));
      if (it.last_error) {
        li.append(node("p", "err", str(it.last_error)));
      }
      list.append(li);
    }
    $("tasks-empty").hidden = list.childElementCount > 0;
    if (openTask) {
      openDetail(openTask, true);
    }
  }

  function fact(dl, key, value) {
    if (value === null || value === undefined || value === "") {
      return;
    }
    dl.append(node("dt", "", t(key)));
    const dd = node("dd");
    dd.append(typeof value === "string" ? value : value);
    dl.append(dd);
  }

  async function openDetail(id, quiet) {
    if (view !== "tasks") {
      openTask = id;
      show("tasks");
      return;
    }
    const data = await call("task?id=" + encodeURIComponent(id));
    if (!data) {
      return;
    }
    openTask = id;
    const tk = data.task || {};
    $("detail-h").textContent = (str(tk.name) || str(tk.id)) + " (" + str(tk.id) + ")";
    const dl = $("detail-facts");
    dl.replaceChildren();
    fact(dl, "state", stateText(str(tk.state)));
    fact(dl, "owner", str(tk.owner));
    fact(dl, "kind", str(tk.kind));
    fact(dl, "source", str(tk.source));
    fact(dl, "schedule", str(tk.schedule));
    const next = data.next_check;
    let nextText = tk.next_run ? when(tk.next_run) : t("none_short");
    if (next && next.at) {
      nextText = when(next.at);
      if (next.why === "retry_after") {
        nextText += " — " + t("next_held", str(next.host));
      } else if (next.why === "backoff") {
        nextText += " — " + t("next_backoff", String(next.failures));
      }
    }
    fact(dl, "next_run", nextText);
    fact(dl, "recipients", (data.recipients || []).map(recipientText).join(", "));
    if (data.remind_before && data.remind_before.length) {
      fact(dl, "remind", data.remind_before.join(", "));
    }
    if (data.scope) {
      const s = data.scope;
      fact(dl, "scope", (s.operations || []).join(", ") + " · " + str(s.host) + str(s.path_prefix) + " · " +
        (s.recipients || []).map(recipientText).join(", ") + " · " + str(s.basis) + " · " + t("by", str(s.by)));
    }
    fact(dl, "requested", t("requested_by", str(data.requested_by)));
    if (data.unreachable && data.unreachable.length) {
      fact(dl, "unreachable", data.unreachable.map(recipientText).join(", "));
    }
    const acts = $("detail-actions");
    acts.replaceChildren();
    const st = str(tk.state);
    if (st === "active" || st === "error") {
      acts.append(button(t("run_now"), "primary", () => taskAct("run", tk)));
    }
    if (st === "active") {
      acts.append(button(t("pause"), "", () => taskAct("pause", tk)));
    }
    if (st === "paused" || st === "error") {
      acts.append(button(t("resume"), "", () => taskAct("resume", tk)));
    }
    if (st !== "deleted" && st !== "pending_approval") {
      acts.append(button(t("delete"), "", () => taskAct("delete", tk)));
    }
    const runs = Array.isArray(data.runs) ? data.runs : [];
    drawRuns($("detail-chart"), runs);
    const body = $("detail-runs").tBodies[0];
    body.replaceChildren();
    for (const r of runs) {
      const tr = node("tr");
      const c0 = node("td");
      const w = when(r.start);
      if (w) {
        c0.append(w);
      }
      const outcome = node("td", "outcome o-" + outcomeClass(str(r.outcome)), str(r.outcome) + (r.class ? " (" + r.class + ")" : ""));
      if (r.error) {
        outcome.title = r.error;
      }
      tr.append(c0, outcome, node("td", "num", r.items), node("td", "num", r.new + " / " + r.changed + " / " + r.removed),
        node("td", "num", fmtMS(r.duration_ms)));
      body.append(tr);
    }
    const d = $("detail");
    d.hidden = false;
    if (!quiet) {
      d.focus();
    }
  }

  function fmtMS(ms) {
    return typeof ms !== "number" ? "" : ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s";
  }

  function outcomeClass(o) {
    if (o === "ok" || o === "baseline" || o === "unchanged") {
      return "ok";
    }
    if (o === "failed") {
      return "bad";
    }
    return "other";
  }

  // drawRuns draws the runs oldest to newest: bars for items seen
  // (coloured by outcome) and a line for each run's duration.
  function drawRuns(box, runs) {
    box.replaceChildren();
    const rs = runs.slice(0, 30).reverse();
    const W = 300;
    const H = 64;
    const n = Math.max(rs.length, 1);
    const bw = W / 30;
    const maxItems = Math.max(1, ...rs.map((r) => r.items || 0));
    const maxDur = Math.max(1, ...rs.map((r) => r.duration_ms || 0));
    const s = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", class: "runs" });
    const title = svg("title", {});
    title.textContent = t("chart_runs", rs.length);
    s.append(title);
    s.setAttribute("aria-label", t("chart_runs", rs.length));
    s.append(svg("line", { x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5, class: "axis" }));
    const pts = [];
    rs.forEach((r, i) => {
      const h = Math.max(2, ((r.items || 0) / maxItems) * (H - 8));
      const x = i * bw + 1;
      const bar = svg("rect", { x: x, y: H - h, width: bw - 2, height: h, class: "bar o-" + outcomeClass(str(r.outcome)) });
      const tip = svg("title", {});
      tip.textContent = new Date(r.start).toLocaleString() + " · " + str(r.outcome) + " · " + (r.items || 0) + " · " + fmtMS(r.duration_ms);
      bar.append(tip);
      s.append(bar);
      pts.push((x + (bw - 2) / 2).toFixed(1) + "," + (H - 2 - ((r.duration_ms || 0) / maxDur) * (H - 10)).toFixed(1));
    });
    if (pts.length > 1) {
      s.append(svg("polyline", { points: pts.join(" "), class: "dur" }));
    }
    box.append(s);
    if (n === 0) {
      box.append(node("p", "hint", t("none")));
    }
  }

  // ---------------------------------------------------------------- delivery

  async function loadDelivery() {
    const hours = Number($("hours").value) || 24;
    const data = await call("delivery?hours=" + hours);
    if (!data) {
      return;
    }
    const states = data.states || {};
    $("states").textContent = t("states", Object.keys(states).sort().map((k) => k + " " + states[k]).join(", ") || "0");
    const rbody = $("delivery-recipients").tBodies[0];
    rbody.replaceChildren();
    for (const row of data.recipients || []) {
      const tr = node("tr");
      const res = row.results || {};
      tr.append(node("td", "", recipientText(row.recipient)));
      for (const r of ["completed", "failed", "unknown", "retry"]) {
        tr.append(node("td", "num", res[r] || 0));
      }
      tr.append(node("td", "err", str(row.last_error)));
      rbody.append(tr);
    }
    const box = $("delivery-charts");
    box.replaceChildren();
    const kinds = Array.isArray(data.kinds) ? data.kinds : [];
    if (kinds.length === 0) {
      box.append(node("p", "hint", t("no_attempts")));
      return;
    }
    const results = Array.isArray(data.results) ? data.results : ["completed", "failed", "unknown", "retry"];
    for (const k of kinds) {
      const fig = node("figure", "kind");
      fig.append(node("figcaption", "", t("attempts_total", str(k.kind), k.total)));
      fig.append(drawStack(k.series || {}, results, data.hours || hours, data.from));
      const legend = node("ul", "legend");
      for (const r of results) {
        const sum = (k.series[r] || []).reduce((a, b) => a + b, 0);
        const li = node("li", "r-" + r);
        li.append(node("span", "swatch"), " " + t(r === "unknown" ? "unknown_r" : r) + " " + sum);
        legend.append(li);
      }
      fig.append(legend);
      box.append(fig);
    }
  }

  function drawStack(series, results, hours, from) {
    const W = 320;
    const H = 80;
    const bw = W / hours;
    let max = 1;
    for (let i = 0; i < hours; i++) {
      max = Math.max(max, results.reduce((a, r) => a + ((series[r] || [])[i] || 0), 0));
    }
    const total = results.reduce((a, r) => a + (series[r] || []).reduce((x, y) => x + y, 0), 0);
    const s = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", class: "stack" });
    s.setAttribute("aria-label", t("chart_delivery", total, hours));
    const title = svg("title", {});
    title.textContent = t("chart_delivery", total, hours);
    s.append(title);
    s.append(svg("line", { x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5, class: "axis" }));
    const start = new Date(from).getTime();
    for (let i = 0; i < hours; i++) {
      let y = H;
      for (const r of results) {
        const v = (series[r] || [])[i] || 0;
        if (!v) {
          continue;
        }
        const h = (v / max) * (H - 4);
        y -= h;
        const rect = svg("rect", { x: i * bw + 0.5, y: y, width: Math.max(bw - 1, 1), height: h, class: "bar r-" + r });
        const tip = svg("title", {});
        tip.textContent = (isNaN(start) ? "" : new Date(start + i * 3600e3).toLocaleString() + " · ") + t(r === "unknown" ? "unknown_r" : r) + " " + v;
        rect.append(tip);
        s.append(rect);
      }
    }
    return s;
  }

  // ---------------------------------------------------------------- start

  function tabKeys(ev) {
    const order = ["attention", "tasks", "delivery"];
    let i = order.indexOf(view);
    if (ev.key === "ArrowRight") {
      i = (i + 1) % order.length;
    } else if (ev.key === "ArrowLeft") {
      i = (i + order.length - 1) % order.length;
    } else if (ev.key === "Home") {
      i = 0;
    } else if (ev.key === "End") {
      i = order.length - 1;
    } else {
      return;
    }
    ev.preventDefault();
    show(order[i]);
    $("tab-" + order[i]).focus();
  }

  async function start() {
    applyLang();
    $("lang").hidden = false;
    $("lang").addEventListener("click", () => {
      lang = lang === "zh" ? "en" : "zh";
      try {
        localStorage.setItem(LANG_KEY, lang);
      } catch (e) {
        // storage off: the choice lasts for this page
      }
      applyLang();
      if (csrf) {
        $("who").textContent = t("signed_in_as", $("who").dataset.p || "");
        load();
      }
    });
    for (const name of ["attention", "tasks", "delivery"]) {
      $("tab-" + name).addEventListener("click", () => show(name));
    }
    $("tabs").addEventListener("keydown", tabKeys);
    $("refresh").addEventListener("click", load);
    for (const id of ["f-state", "f-owner", "f-kind"]) {
      $(id).addEventListener("change", () => {
        openTask = "";
        $("detail").hidden = true;
        loadTasks();
      });
    }
    for (const f of document.querySelectorAll("form.bar")) {
      f.addEventListener("submit", (ev) => ev.preventDefault());
    }
    $("hours").addEventListener("change", loadDelivery);
    $("signin-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const code = $("code").value.trim();
      $("code").value = "";
      signIn(code);
    });
    $("signout").addEventListener("click", async () => {
      await call("logout", {});
      signedOut("");
    });
    // A sign-in link carries its code after '#', which the browser never
    // sends anywhere; drop it from the address bar and history at once.
    const m = /(?:^#|&)code=([^&]+)/.exec(location.hash);
    if (m) {
      history.replaceState(null, "", location.pathname);
      await signIn(decodeURIComponent(m[1]));
      return;
    }
    const res = await fetch(API + "session", { credentials: "same-origin", cache: "no-store" }).catch(() => null);
    if (res && res.ok) {
      const data = await res.json().catch(() => null);
      if (data && data.ok) {
        signedIn(data);
        return;
      }
    }
    if (!res) {
      showError(t("unreachable_net"));
    }
    signedOut("");
  }

  start();
})();
