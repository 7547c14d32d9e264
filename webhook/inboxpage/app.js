// The herald inbox page. It reads GET /api/v1/inbox on this origin with the
// person's inbox token. The token lives in this tab's sessionStorage only,
// never in a URL, a cookie or the browser's lasting storage, so closing the
// tab forgets it. Everything shown is built as DOM nodes with textContent,
// and only http(s) links are made clickable.
"use strict";

(function () {
  const API = "/api/v1/inbox";
  const KEY = "herald.inbox.token";
  const PAGE = 20;

  const $ = (id) => document.getElementById(id);

  let memory = ""; // the token when this browser refuses sessionStorage
  let next = ""; // next_before of the last page read; "" when there is no older page
  let generation = 0; // bumped on every fresh listing, so a late answer to an older query is dropped

  function getToken() {
    try {
      return sessionStorage.getItem(KEY) || "";
    } catch (e) {
      return memory;
    }
  }

  function setToken(tok) {
    memory = tok;
    try {
      if (tok) {
        sessionStorage.setItem(KEY, tok);
      } else {
        sessionStorage.removeItem(KEY);
      }
    } catch (e) {
      // Storage is off in this browser: keep the token in memory only.
    }
  }

  function node(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) {
      n.className = cls;
    }
    if (text !== undefined) {
      n.textContent = text;
    }
    return n;
  }

  function showError(msg) {
    const e = $("error");
    e.textContent = msg;
    e.hidden = msg === "";
  }

  // failed reports a failed read and keeps the controls in view, so Refresh
  // and Forget token stay at hand even when the first read failed.
  function failed(msg) {
    showError(msg);
    $("login").hidden = true;
    $("inbox").hidden = false;
  }

  // askToken shows the token form, with msg above it when there is one.
  function askToken(msg) {
    $("inbox").hidden = true;
    $("who").hidden = true;
    $("items").replaceChildren();
    showError(msg);
    $("login").hidden = false;
    $("token").value = "";
    $("token").focus();
  }

  // httpURL returns s as an absolute http(s) URL, or "" for anything else
  // (javascript:, data:, relative or malformed), which is never linked.
  function httpURL(s) {
    if (typeof s !== "string" || s === "") {
      return "";
    }
    let u;
    try {
      u = new URL(s);
    } catch (e) {
      return "";
    }
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : "";
  }

  function localTime(s) {
    const d = new Date(s);
    if (typeof s !== "string" || isNaN(d.getTime())) {
      return null;
    }
    const t = node("time", "", d.toLocaleString());
    t.dateTime = d.toISOString();
    return t;
  }

  function text(v) {
    return typeof v === "string" ? v : "";
  }

  // entry renders one item of a message: its title, linked when its URL is
  // http(s), and what happened to it.
  function entry(x) {
    const li = node("li");
    const title = text(x.title);
    const href = httpURL(x.url);
    if (href) {
      const a = node("a", "", title || href);
      a.href = href;
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      li.append(a);
    } else {
      li.append(node("span", "", title || text(x.url) || text(x.id)));
    }
    const change = text(x.change);
    if (change) {
      li.append(" ", node("span", "meta", change));
    }
    // A changed item says what it was called before, as chat does.
    const was = text(x.was_title);
    if (was && was !== title) {
      li.append(" ", node("span", "meta was", "(was: " + was + ")"));
    }
    const due = localTime(x.due);
    if (due) {
      li.append(" ", node("span", "meta", "due "), due);
    }
    // The item's summary and changed lines, under its title, as chat shows them.
    const summary = text(x.summary);
    if (summary) {
      li.append(node("div", "meta summary", summary));
    }
    const diff = x.diff !== null && typeof x.diff === "object" ? x.diff : {};
    for (const [sign, lines] of [["+ ", diff.added], ["- ", diff.removed]]) {
      if (Array.isArray(lines)) {
        for (const l of lines.slice(0, 5)) {
          li.append(node("div", "meta diff", sign + text(l)));
        }
      }
    }
    return li;
  }

  function itemNode(it) {
    const li = node("li", it.read ? "item" : "item unread");
    const head = node("div", "head");
    if (!it.read) {
      head.append(node("span", "mark", "unread"));
    }
    head.append(node("span", "title", text(it.title) || "(untitled)"));
    const when = localTime(it.created_at);
    if (when) {
      head.append(when);
    }
    li.append(head);
    const msg = it.message !== null && typeof it.message === "object" ? it.message : {};
    if (text(msg.text)) {
      li.append(node("p", "text", msg.text));
    }
    // A recipient's template laid the notice out: its text is the notice.
    const body = text(msg.body).split("\n").slice(1).join("\n").trim();
    if (body) {
      li.append(node("p", "text", body));
    }
    if (!text(msg.body) && Array.isArray(msg.items) && msg.items.length > 0) {
      const ul = node("ul", "entries");
      for (const x of msg.items) {
        if (x !== null && typeof x === "object") {
          ul.append(entry(x));
        }
      }
      if (typeof msg.more === "number" && msg.more > 0) {
        ul.append(node("li", "meta", "and " + msg.more + " more"));
      }
      li.append(ul);
    }
    return li;
  }

  function render(data, fresh) {
    const items = Array.isArray(data.items) ? data.items : [];
    const list = $("items");
    if (fresh) {
      list.replaceChildren();
    }
    for (const it of items) {
      if (it !== null && typeof it === "object") {
        list.append(itemNode(it));
      }
    }
    next = text(data.next_before);
    $("older").hidden = next === "";
    $("empty").hidden = list.childElementCount > 0;
    const who = $("who");
    const unread = typeof data.unread === "number" ? data.unread : 0;
    who.textContent = text(data.principal) + " · " + unread + " unread";
    who.hidden = false;
    $("login").hidden = true;
    $("inbox").hidden = false;
  }

  function setBusy(b) {
    for (const id of ["older", "refresh", "unread"]) {
      $(id).disabled = b;
    }
  }

  // load reads the newest page (fresh) or the page older than the last one.
  async function load(fresh) {
    const tok = getToken();
    if (!tok) {
      askToken("");
      return;
    }
    if (fresh) {
      generation++;
      next = "";
    }
    const gen = generation;
    const q = new URLSearchParams();
    q.set("limit", String(PAGE));
    if (!fresh && next) {
      q.set("before", next);
    }
    if ($("unread").checked) {
      q.set("unread", "1");
    }
    setBusy(true);
    let res;
    let data;
    try {
      res = await fetch(API + "?" + q.toString(), {
        headers: { Authorization: "Bearer " + tok },
        cache: "no-store",
        credentials: "omit",
        redirect: "error",
      });
      if (res.ok) {
        data = await res.json();
      }
    } catch (e) {
      if (gen === generation) {
        failed(res ? "herald sent an answer this page cannot read; try again." : "Could not reach herald. Check your connection and try again.");
      }
      return;
    } finally {
      setBusy(false);
    }
    if (gen !== generation) {
      return;
    }
    if (res.status === 401) {
      setToken("");
      askToken("That token was not accepted. Enter your inbox token again.");
      return;
    }
    if (!res.ok || data === null || typeof data !== "object") {
      failed("herald answered " + res.status + "; try again in a moment.");
      return;
    }
    showError("");
    render(data, fresh);
  }

  function start() {
    $("login").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const tok = $("token").value.trim();
      $("token").value = "";
      if (tok === "") {
        return;
      }
      setToken(tok);
      $("login").hidden = true;
      load(true);
    });
    $("forget").addEventListener("click", () => {
      setToken("");
      generation++;
      askToken("");
    });
    $("refresh").addEventListener("click", () => load(true));
    $("unread").addEventListener("change", () => load(true));
    $("older").addEventListener("click", () => load(false));
    if (getToken()) {
      load(true);
    } else {
      askToken("");
    }
  }

  start();
})();
