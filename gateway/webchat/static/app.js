// remoteclaw web chat: a plain-JS client of the gateway WebSocket protocol (no build step).
// Model text is untrusted: everything is rendered with DOM APIs and textContent, never innerHTML.
(function () {
  'use strict';

  var TOKEN_KEY = 'remoteclaw.token';
  var SESSION_KEY = 'remoteclaw.sessionKey';
  var CLIENT_KEY = 'remoteclaw.clientId';
  var AGENT_KEY = 'remoteclaw.newChatAgent';
  var PROTOCOL_MIN = 3, PROTOCOL_MAX = 4;
  var REQUEST_TIMEOUT_MS = 30000;
  var CLOSE_POLICY = 1008;  // the gateway closes a revoked sign-in's pages with this code and 'signed out'
  var SIGNED_OUT = 'You signed out. Open a sign-in link, or paste the gateway token, to sign in again.';
  var REVOKED = 'You were signed out: this sign-in was revoked. Ask for a new sign-in link (send /login to ' +
    'the bot in a direct chat, or ask an admin).';

  var $ = function (id) { return document.getElementById(id); };
  var el = function (tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text != null) node.textContent = text;
    return node;
  };

  function randomId() {
    var bytes = new Uint8Array(16);
    (window.crypto || window.msCrypto).getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join('');
  }
  function store(key, value) {
    try { if (value == null) localStorage.removeItem(key); else localStorage.setItem(key, value); } catch (e) { /* private mode */ }
  }
  function load(key) { try { return localStorage.getItem(key); } catch (e) { return null; } }

  // -- the token arrives in the URL fragment once; keep it, then wipe it from the address bar ---------
  function takeFragment() {
    var hash = location.hash.replace(/^#/, '');
    if (!hash) return;
    var params = new URLSearchParams(hash);
    if (params.get('token')) store(TOKEN_KEY, params.get('token'));
    if (params.get('signin')) signingIn = redeemSignin(params.get('signin'));
    if (params.get('session')) {  // a link to one conversation (e.g. #token=…&session=agent:main:main)
      store(SESSION_KEY, params.get('session'));
      if (state) state.sessionKey = params.get('session');
    }
    history.replaceState(null, '', location.pathname + location.search);
  }

  // -- a person's one-time sign-in link (/login in a chat): exchanged once for a credential of their own ------
  var signingIn = null;
  function redeemSignin(code) {
    return fetch('/people/signin', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: code })
    }).then(function (res) {
      return res.json().then(function (body) {
        if (!res.ok || !body.token) throw new Error(body.error || 'sign-in failed');
        store(TOKEN_KEY, body.token); store(SESSION_KEY, null);
        if (state) state.sessionKey = null;
      });
    }).catch(function (e) { state.signinError = e.message || String(e); });
  }

  var clientId = load(CLIENT_KEY) || randomId().slice(0, 12);
  store(CLIENT_KEY, clientId);

  var state = {
    ws: null, ready: false, nextId: 1, pending: {}, backoffMs: 500, retryTimer: null, watchdog: null,
    tickMs: 30000, lastFrameAt: 0, sessionKey: load(SESSION_KEY), defaults: null, runs: {}, activeRun: null,
    authFailed: false, wasOnline: false, agents: [], sessions: [], listTimer: null,
    newAgent: load(AGENT_KEY), sentKeys: {}, unread: {}, unseen: 0, renaming: null,
    historySeq: 0, held: null
  };

  // -- markdown-lite: code fences, inline code, bold/italic, headings, lists, links ---------------
  function renderInline(parent, text) {
    var re = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\s][^*\n]*\*|_[^_\s][^_\n]*_)|(\[[^\]\n]+\]\((https?:\/\/[^)\s]+)\))|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;
    var last = 0, m;
    while ((m = re.exec(text))) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      var tok = m[0];
      if (m[1]) parent.appendChild(el('code', null, tok.slice(1, -1)));
      else if (m[2]) parent.appendChild(el('strong', null, tok.slice(2, -2)));
      else if (m[3]) parent.appendChild(el('em', null, tok.slice(1, -1)));
      else if (m[4] || m[6]) {
        var a = el('a', null, m[4] ? tok.slice(1, tok.indexOf('](')) : tok);
        a.href = m[4] ? m[5] : tok;
        a.target = '_blank'; a.rel = 'noopener noreferrer nofollow';
        parent.appendChild(a);
      }
      last = m.index + tok.length;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  // A Markdown table: a |-separated header row, a |---| rule, then rows (cells keep inline formatting).
  var TABLE_ROW = /^\s*\|.*\|\s*$/, TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;
  function cells(line) {
    return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map(function (c) { return c.trim(); });
  }
  function renderTable(parent, rows) {
    var wrap = el('div', 'table-wrap'), table = el('table'), head = el('thead'), body = el('tbody');
    var tr = el('tr');
    cells(rows[0]).forEach(function (c) { var th = el('th'); renderInline(th, c); tr.appendChild(th); });
    head.appendChild(tr);
    rows.slice(2).forEach(function (row) {
      var r = el('tr');
      cells(row).forEach(function (c) { var td = el('td'); renderInline(td, c); r.appendChild(td); });
      body.appendChild(r);
    });
    table.appendChild(head); table.appendChild(body); wrap.appendChild(table); parent.appendChild(wrap);
  }

  function renderBlocks(parent, text) {
    var lines = text.split('\n'), para = null, list = null, quote = null;
    function close() { para = null; list = null; quote = null; }
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      var head = /^(#{1,3})\s+(.*)$/.exec(line);
      var item = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
      var cite = /^\s*>\s?(.*)$/.exec(line);
      if (!line.trim()) { close(); continue; }
      if (TABLE_ROW.test(line) && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        close();
        var rows = [line, lines[i + 1]];
        for (i += 2; i < lines.length && TABLE_ROW.test(lines[i]); i++) rows.push(lines[i]);
        i -= 1;
        renderTable(parent, rows);
        continue;
      }
      if (head) { close(); var h = el('h' + head[1].length); renderInline(h, head[2]); parent.appendChild(h); continue; }
      if (cite) {
        if (!quote) { close(); quote = el('blockquote'); parent.appendChild(quote); }
        else quote.appendChild(el('br'));
        renderInline(quote, cite[1]);
        continue;
      }
      quote = null;
      if (item) {
        var kind = item[1] ? 'ol' : 'ul';
        if (!list || list.tagName.toLowerCase() !== kind) { para = null; list = el(kind); parent.appendChild(list); }
        var li = el('li'); renderInline(li, item[2]); list.appendChild(li);
        continue;
      }
      list = null;
      if (!para) { para = el('p'); parent.appendChild(para); }
      else para.appendChild(el('br'));
      renderInline(para, line);
    }
  }

  function renderMarkdown(parent, text) {
    parent.textContent = '';
    var fence = /```([\w+-]*)[^\n]*\n([\s\S]*?)(?:\n```|$)/g, last = 0, m;
    while ((m = fence.exec(text))) {
      if (m.index > last) renderBlocks(parent, text.slice(last, m.index));
      var pre = el('pre'), code = el('code', null, m[2]);
      if (m[1]) code.dataset.lang = m[1];
      pre.appendChild(code); pre.appendChild(copyButton(code)); parent.appendChild(pre);
      last = fence.lastIndex;
      if (m[0].length === 0) break;
    }
    if (last < text.length) renderBlocks(parent, text.slice(last));
  }

  // Copy: the Clipboard API where the page is a secure context (https, localhost), else a hidden selection.
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = el('textarea'); area.value = text; area.setAttribute('readonly', '');
      area.style.position = 'fixed'; area.style.opacity = '0';
      document.body.appendChild(area); area.select();
      var ok = false;
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error('copy refused'));
    });
  }
  function copyButton(code) {
    var button = el('button', 'copy', 'Copy');
    button.type = 'button'; button.setAttribute('aria-label', 'Copy the code');
    button.addEventListener('click', function () {
      copyText(code.textContent).then(function () { button.textContent = 'Copied'; },
                                      function () { button.textContent = 'Copy failed'; });
      setTimeout(function () { button.textContent = 'Copy'; }, 1500);
    });
    return button;
  }

  // -- the message list --------------------------------------------------------------------------
  var messages = $('messages'), scroller = $('scroller');

  function nearBottom() { return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120; }
  // Stay at the bottom while reading there; when scrolled up, new content shows a "New messages" button.
  // (Growing content fires no scroll event, so "at the bottom" is what the last scroll left.)
  var atBottom = true;
  function scrollDown(force) {
    if (force || atBottom) { scroller.scrollTop = scroller.scrollHeight; $('jump').hidden = true; }
    else $('jump').hidden = false;
  }
  scroller.addEventListener('scroll', function () { atBottom = nearBottom(); if (atBottom) $('jump').hidden = true; });
  $('jump').addEventListener('click', function () { scrollDown(true); });
  function refreshEmpty() {
    $('empty').hidden = messages.children.length > 0 || !state.ready;
    placeMissing();
  }
  // The card saying how to install a missing agent CLI: in the empty state of a new chat, and below the
  // messages once there are some (a failed message must not take the way to fix it away).
  function placeMissing() {
    var card = $('empty-missing');
    var home = messages.children.length > 0 ? scroller : $('empty');
    if (card.parentNode !== home) {
      if (home === scroller) scroller.appendChild(card);
      else $('empty').insertBefore(card, $('empty').querySelector('.keys'));
    }
  }

  // A message's node by its id in the session (the transcript entry's number).
  function byId(id) {
    var clean = String(id == null ? '' : id).replace(/[^0-9]/g, '');
    return clean ? messages.querySelector('[data-id="' + clean + '"]') : null;
  }
  function humanSize(n) {
    if (!n && n !== 0) return '';
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(n < 10240 ? 1 : 0) + ' KB';
    return (n / 1024 / 1024).toFixed(1) + ' MB';
  }

  // What surrounds a message: the message it answers, its files, the agent's reaction, pinned, deleted.
  function decorate(node, facts) {
    node.dataset.id = facts.id != null ? String(facts.id) : (facts.messageId || node.dataset.id || '');
    node.title = new Date(facts.ts || Date.now()).toLocaleString();  // when it was written, on hover
    if (facts.deleted) { setDeleted(node); return; }
    if (facts.replyTo) {
      var target = byId(facts.replyTo);
      var excerpt = !target ? 'message ' + facts.replyTo
        : target.classList.contains('deleted') ? 'message deleted' : (target.plainText || target.textContent || '');
      var quote = el('button', 'quote', (facts.thread ? '↳ in thread: ' : '↩ ') + excerpt.slice(0, 140));
      quote.type = 'button'; quote.dataset.replyTo = String(facts.replyTo);
      quote.addEventListener('click', function () {
        var t = byId(quote.dataset.replyTo);
        if (!t) return;
        t.scrollIntoView({ block: 'center', behavior: 'smooth' });
        t.classList.remove('flash'); void t.offsetWidth; t.classList.add('flash');
      });
      node.insertBefore(quote, node.firstChild);
    }
    (facts.attachments || []).forEach(function (a) {
      var link = el('a', a.inline && !a.external ? 'attachment' : 'file');
      link.href = a.external ? a.url : '#'; link.rel = 'noopener noreferrer nofollow';
      if (!a.external) {  // the gateway serves a stored file only to a credential that may read its conversation
        storedFile(a.url).then(function (blobUrl) {
          link.href = blobUrl;
          if (img) img.src = blobUrl;
        }, function () { link.classList.add('unavailable'); });
      }
      var img = null;
      if (a.inline && !a.external) {
        link.target = '_blank';
        img = el('img'); img.alt = a.name || 'image';
        img.addEventListener('load', function () { scrollDown(); });
        link.appendChild(img);
      } else {
        if (a.external) link.target = '_blank'; else link.setAttribute('download', a.name || 'file');
        link.textContent = '📄 ' + (a.name || 'file') + (a.size != null ? ' · ' + humanSize(a.size) : '');
      }
      node.appendChild(link);
    });
    if (facts.buttons && facts.buttons.length) {  // an approval or a question: a press sends its text
      var row = el('div', 'choices');
      facts.buttons.forEach(function (b) {
        var btn = el('button', 'choice', b.label);
        btn.type = 'button';
        btn.addEventListener('click', function () {
          row.querySelectorAll('button').forEach(function (x) { x.disabled = true; });
          btn.classList.add('chosen');
          request('chat.send', { sessionKey: state.sessionKey, message: b.send,
                                 idempotencyKey: 'choice-' + Date.now() + '-' + Math.random().toString(36).slice(2) })
            .catch(function () { row.querySelectorAll('button').forEach(function (x) { x.disabled = false; }); });
        });
        row.appendChild(btn);
      });
      node.appendChild(row);
    }
    setReaction(node, facts.reaction);
    setPinned(node, facts.pinned);
  }
  function setReaction(node, emoji) {
    var old = node.querySelector(':scope > .reaction');
    if (old) old.remove();
    node.classList.toggle('reacted', !!emoji);
    if (emoji) { var r = el('span', 'reaction', emoji); r.title = 'the agent reacted'; node.appendChild(r); }
  }
  function setPinned(node, pinned) {
    var old = node.querySelector(':scope > .pin-label');
    if (old) old.remove();
    node.classList.toggle('pinned', !!pinned);
    if (pinned) node.insertBefore(el('span', 'pin-label', 'pinned'), node.firstChild);
  }
  function setDeleted(node) {
    node.textContent = ''; node.plainText = '';
    node.className = node.className.replace(/\b(streaming|pinned|reacted)\b/g, '').trim() + ' deleted';
    node.appendChild(document.createTextNode('message deleted'));
  }

  // A stored file, fetched with this page's credential (its address alone gets nothing): a blob: URL to show.
  function storedFile(url) {
    var token = load(TOKEN_KEY);
    return fetch(url, { headers: token ? { Authorization: 'Bearer ' + token } : {}, credentials: 'omit' })
      .then(function (res) {
        if (!res.ok) throw new Error('file: ' + res.status);
        return res.blob();
      })
      .then(function (blob) { return URL.createObjectURL(blob); });
  }

  // The "[attachment: … attachments/…]" lines are for the agent; the page shows the files themselves.
  function shownText(text) {
    return String(text || '').split('\n').filter(function (line) {
      return !/^\[attachment: (image|file) attachments\/[^\]]+\]$/.test(line.trim());
    }).join('\n').trim();
  }

  function addUser(text, facts) {
    var stick = nearBottom();
    var node = el('div', 'msg user');
    text = shownText(text);
    node.appendChild(el('span', 'body', text));
    node.plainText = text;
    messages.appendChild(node);
    if (facts) decorate(node, facts);
    refreshEmpty(); scrollDown(stick);
    return node;
  }

  function pretty(value) {
    if (value == null) return '';
    if (typeof value === 'string') {
      try { return JSON.stringify(JSON.parse(value), null, 2); } catch (e) { return value; }
    }
    try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
  }

  function toolCard(tool) {
    var card = el('details', 'tool');
    var summary = el('summary');
    summary.appendChild(el('span', 'tname', tool.name || 'tool'));
    var st = el('span', 'tstate');
    summary.appendChild(st);
    card.appendChild(summary);
    var body = el('div', 'tbody');
    body.appendChild(el('div', 'tlabel', 'Input'));
    var input = el('pre', 'tinput', pretty(tool.input));
    body.appendChild(input);
    var outLabel = el('div', 'tlabel', 'Result'), output = el('pre', 'toutput');
    body.appendChild(outLabel); body.appendChild(output);
    card.appendChild(body);
    card.setResult = function (out, isError) {
      output.textContent = pretty(out);
      card.dataset.state = isError ? 'error' : 'done';
      st.textContent = isError ? 'error' : 'done';
    };
    card.setInput = function (value) { if (value != null) input.textContent = pretty(value); };
    card.dataset.state = 'running'; st.textContent = 'running…';
    if (tool.output !== undefined && tool.output !== null) card.setResult(tool.output, tool.isError);
    return card;
  }

  var RUNTIMES = { claude: 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI', opencode: 'OpenCode' };
  // " · 1,234 tokens · $0.0123": what the turn used, as its final chat event (or the transcript) says.
  function usageText(u) {
    if (!u) return '';
    var tokens = (u.input || 0) + (u.output || 0) + (u.cacheRead || 0) + (u.cacheWrite || 0);
    var text = ' · ' + tokens.toLocaleString('en-US') + ' tokens';
    if (typeof u.costUsd === 'number') text += ' · $' + u.costUsd.toFixed(u.costUsd < 1 ? 4 : 2);  // a turn costs cents
    return text;
  }

  // "main · Claude Code (claude) · sonnet": which agent and which CLI answered a turn.
  function answeredLine(facts) {
    if (!facts || !facts.agentId) return null;
    var runtime = RUNTIMES[facts.runtime] || facts.runtime || '';
    var text = facts.agentId + ' · ' + runtime + (facts.cli ? ' (' + facts.cli + ')' : '') +
      (facts.model ? ' · ' + facts.model : '') + usageText(facts.usage);
    var line = el('div', 'answered', text);
    line.title = 'answered by agent ' + facts.agentId + ' with ' + (facts.cli || runtime);
    return line;
  }

  // What a turn changed in its git project (the entry's diff): collapsed under the summary, each line
  // coloured by its first character. textContent only: the diff is the agent's output, never markup.
  function diffBlock(diff) {
    if (!diff || !diff.text) return null;
    var box = el('details', 'diff');
    box.appendChild(el('summary', null, '\uD83D\uDCDD ' + (diff.summary || 'changes') + (diff.name ? ' · ' + diff.name : '')));
    var pre = el('pre');
    diff.text.split('\n').forEach(function (line) {
      var c = line.charAt(0);
      var kind = /^(\+\+\+|---|diff |index )/.test(line) ? 'dh' : c === '+' ? 'da' : c === '-' ? 'dr' : c === '@' ? 'dc' : null;
      pre.appendChild(el('span', kind, line + '\n'));
    });
    box.appendChild(pre);
    return box;
  }

  // One assistant turn: text segments interleaved with tool cards, as the run produced them.
  function Turn(runId) {
    this.runId = runId;
    this.node = el('div', 'turn');
    this.node.dataset.runId = runId || '';
    this.text = ''; this.offset = 0; this.segment = null; this.tools = {}; this.done = false;
    messages.appendChild(this.node); refreshEmpty();
  }
  Turn.prototype.setText = function (text, streaming) {
    var stick = nearBottom();
    this.text = text || '';
    var part = this.text.slice(this.offset);
    if (!this.segment && part.trim()) { this.segment = el('div', 'msg assistant'); this.node.appendChild(this.segment); }
    if (this.segment) {
      renderMarkdown(this.segment, part);
      this.segment.plainText = part;
      this.segment.classList.toggle('streaming', !!streaming);
    }
    scrollDown(stick);
  };
  // A finished message of its own (from the history, or posted by a message tool): one bubble.
  Turn.prototype.bubble = function (text, facts) {
    if (this.segment) this.segment.classList.remove('streaming');
    var node = el('div', 'msg assistant');
    if (text) renderMarkdown(node, text);
    node.plainText = text || '';
    this.node.appendChild(node);
    this.segment = null; this.offset = this.text.length;
    decorate(node, facts || {});
    return node;
  };
  // The final text is the reply itself (what follows the last tool call, cleaned), not everything streamed.
  Turn.prototype.setFinal = function (reply, facts) {
    var text = this.text;
    if (!reply.trim() && text.slice(this.offset).trim() === 'NO_REPLY' && this.segment) {
      this.segment.remove(); this.segment = null;  // the agent chose to stay silent
    } else if (!reply.trim() || text.slice(this.offset).trim() === reply.trim()) this.setText(text, false);
    else this.setText(text.slice(0, this.offset) + reply, false);
    if (this.segment && facts && facts.messageId) decorate(this.segment, facts);
    this.answered(facts);
  };
  Turn.prototype.answered = function (facts) {
    var old = this.node.querySelector(':scope > .answered');
    if (old) old.remove();
    var oldDiff = this.node.querySelector(':scope > .diff');
    if (oldDiff) oldDiff.remove();
    var diff = diffBlock(facts && facts.diff);
    if (diff) this.node.appendChild(diff);
    var line = answeredLine(facts);
    if (line) this.node.appendChild(line);
    if (facts && facts.project) showProject();  // a turn in a project may have made its worktree (branch)
  };
  Turn.prototype.tool = function (data) {
    var stick = nearBottom();
    var card = this.tools[data.id];
    if (!card) {
      if (this.segment) this.segment.classList.remove('streaming');
      this.offset = this.text.length; this.segment = null;  // text after the tool goes below it
      card = toolCard(data);
      this.tools[data.id || ('t' + Object.keys(this.tools).length)] = card;
      this.node.appendChild(card);
    }
    if (data.phase === 'result' || data.output !== undefined) card.setResult(data.output, data.isError);
    else card.setInput(data.input);
    scrollDown(stick);
  };
  Turn.prototype.finish = function (kind, message, facts) {
    if (this.segment) this.segment.classList.remove('streaming');
    if (this.done && kind !== 'final') return;  // already shown (e.g. from the history)
    this.done = true;
    var node = null;
    if (kind === 'error') node = el('div', 'msg error', message || 'the run failed');
    else if (kind === 'aborted') node = el('div', 'note', 'stopped');
    if (node) {
      if (facts && (facts.messageId || facts.id)) node.dataset.id = String(facts.messageId || facts.id);
      this.node.appendChild(node);
      this.answered(facts);
    }
    Object.keys(this.tools).forEach(function (k) {
      var c = this.tools[k];
      if (c.dataset.state === 'running') { c.dataset.state = 'done'; c.querySelector('.tstate').textContent = ''; }
    }, this);
    scrollDown();
  };

  function turnFor(runId) {
    if (!state.runs[runId]) state.runs[runId] = new Turn(runId);
    return state.runs[runId];
  }

  function renderHistory(list) {
    // Messages sent from this page that the answer does not hold yet (it was read before they were stored).
    var local = Array.prototype.slice.call(messages.querySelectorAll('.msg.user.local'));
    messages.textContent = ''; state.runs = {};
    var turn = null;
    list.forEach(function (m) {
      if (m.role === 'user') { addUser(m.text || '', m); turn = null; return; }
      var key = m.runId || ('h' + Math.random());
      if (!turn || turn.runId !== key) { turn = new Turn(key); if (m.runId) state.runs[m.runId] = turn; }
      if (m.role === 'tool') {
        var t = m.tool || {};
        turn.tool({ phase: 'result', id: m.id, name: t.name, input: t.input, output: t.output == null ? '' : t.output, isError: t.isError });
      } else if (m.error || m.aborted) {
        turn.done = false; turn.finish(m.error ? 'error' : 'aborted', m.text, m);
      } else {
        turn.bubble(m.text || '', m);
        turn.answered(m);
      }
    });
    Object.keys(state.runs).forEach(function (k) { state.runs[k].done = true; });
    local.forEach(function (node) { if (!node.dataset.id || !byId(node.dataset.id)) messages.appendChild(node); });
    refreshEmpty(); scrollDown(true);
  }

  // A message a tool posted (message_send, message_reply, a file ...): a turn of one bubble.
  function showPosted(p) {
    if (byId(p.messageId)) return;
    var stick = nearBottom();
    var turn = turnFor(p.runId);
    turn.bubble(p.text || '', p);
    turn.done = true;
    scrollDown(stick);
  }

  function applyChange(p) {
    var node = byId(p.messageId);
    if (!node) return;
    if (p.deleted) { setDeleted(node); return; }
    setReaction(node, p.reaction);
    setPinned(node, p.pinned);
  }

  // -- the protocol ----------------------------------------------------------------------------
  function setStatus(kind, label) {
    $('status').dataset.state = kind;
    $('status-label').textContent = label;
  }

  // A link is a socket with its requests in flight ({ws, pending, nextId}): the chat's own (state), and the
  // People page's (admin, below).
  function requestOn(link, method, params) {
    return new Promise(function (resolve, reject) {
      if (!link.ws || link.ws.readyState !== 1) { reject(new Error('not connected')); return; }
      var id = 'w' + (link.nextId++);
      var timer = setTimeout(function () { delete link.pending[id]; reject(new Error(method + ' timed out')); }, REQUEST_TIMEOUT_MS);
      link.pending[id] = { resolve: resolve, reject: reject, timer: timer };
      link.ws.send(JSON.stringify({ type: 'req', id: id, method: method, params: params || {} }));
    });
  }
  function request(method, params) { return requestOn(state, method, params); }

  function errorOf(frame) {
    var err = new Error((frame.error && frame.error.message) || 'request failed');
    err.code = frame.error && frame.error.code; err.details = frame.error && frame.error.details;
    return err;
  }
  function settleOn(link, frame) {
    var p = link.pending[frame.id];
    if (!p) return;
    delete link.pending[frame.id]; clearTimeout(p.timer);
    if (frame.ok) p.resolve(frame.payload);
    else p.reject(errorOf(frame));
  }
  function settle(frame) { settleOn(state, frame); }
  function failPending(link) {
    Object.keys(link.pending).forEach(function (id) {
      clearTimeout(link.pending[id].timer); link.pending[id].reject(new Error('connection lost'));
    });
    link.pending = {};
  }

  function socketUrl() { return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/'; }
  function connectFrame(scopes, displayName) {
    return {
      type: 'req', id: 'connect', method: 'connect',
      params: {
        minProtocol: PROTOCOL_MIN, maxProtocol: PROTOCOL_MAX, role: 'operator', scopes: scopes,
        client: { id: 'webchat-ui', version: '1', platform: 'web', mode: 'webchat', instanceId: clientId,
          displayName: displayName },
        auth: { token: load(TOKEN_KEY) || undefined },
        userAgent: navigator.userAgent, locale: navigator.language
      }
    };
  }
  function sendConnect() {
    state.ws.send(JSON.stringify(connectFrame(['operator.read', 'operator.write'], 'web chat')));
  }

  function onHello(hello) {
    state.ready = true; state.backoffMs = 500; state.authFailed = false;
    state.tickMs = (hello.policy && hello.policy.tickIntervalMs) || 30000;
    state.defaults = (hello.snapshot && hello.snapshot.sessionDefaults) || {};
    if (!state.sessionKey) state.sessionKey = state.defaults.mainSessionKey || 'agent:main:main';
    $('token-form').hidden = true; $('composer').hidden = false;
    state.wasOnline = true; $('banner').hidden = true;
    setStatus('online', 'connected');
    showSession();
    loadHistory();
    loadAgents();
    loadSessions();
    loadMe();
  }

  function showSession() {
    if (state.peopleOpen) {
      $('session-title').textContent = 'People'; $('session-label').textContent = 'who may use this gateway';
      document.title = 'People · remoteclaw';
      return;
    }
    $('session-label').textContent = state.sessionKey || '';
    var title = sessionTitle(findSession(state.sessionKey) || { key: state.sessionKey || '' });
    $('session-title').textContent = title;
    document.title = (state.unseen ? '(' + state.unseen + ') ' : '') + title + ' · remoteclaw';
    showAgent();
    showProject();
  }

  // The session's project and branch under its title (status {sessionKey}); hidden without a project. The
  // picker beside "New" lists the agent's projects (the chat's /project); hidden when it has none, or before
  // the conversation's first message (the session does not exist yet).
  function showProject() {
    var key = state.sessionKey, line = $('session-project'), pick = $('project-pick');
    if (!key) { line.hidden = true; pick.hidden = true; return; }
    request('status', { sessionKey: key }).then(function (st) {
      if (key !== state.sessionKey) return;
      line.hidden = !st.project;
      line.textContent = st.project ? '\uD83D\uDCC1 ' + st.project + (st.branch ? ' \u00B7 ' + st.branch : '') : '';
      line.title = st.projectPath || '';
      var names = st.projects || [];
      pick.hidden = !names.length;
      pick.textContent = '';
      [''].concat(names).forEach(function (name) {
        var opt = el('option', null, name ? '\uD83D\uDCC1 ' + name : 'no project');
        opt.value = name;
        pick.appendChild(opt);
      });
      pick.value = st.project || '';
    }, function () { if (key === state.sessionKey) { line.hidden = true; pick.hidden = true; } });
  }

  function pickProject() {
    var key = state.sessionKey, name = $('project-pick').value || null;
    request('sessions.project', { sessionKey: key, project: name }).then(showProject, function (err) {
      showError('could not switch the project: ' + err.message);
      showProject();
    });
  }

  // The transcript of the session on screen. Events for it that arrive while the request is out are held and
  // applied after it (they may be newer than the answer); an answer for a session left meanwhile is dropped.
  function loadHistory() {
    var key = state.sessionKey, seq = ++state.historySeq;
    state.held = [];
    return request('chat.history', { sessionKey: key, limit: 200 }).then(function (res) {
      if (seq !== state.historySeq || key !== state.sessionKey) return;
      if (res.sessionKey) state.sessionKey = res.sessionKey;
      showSession();
      renderHistory(res.messages || []);
      var held = state.held;
      state.held = null;
      held.forEach(function (ev) { onEvent(ev[0], ev[1]); });
    }).catch(function (err) {
      if (seq !== state.historySeq) return;
      state.held = null;
      showError('could not load history: ' + err.message);
    });
  }

  function showError(text) {
    messages.appendChild(el('div', 'msg error', text)); refreshEmpty(); scrollDown(true);
  }

  // Chat and agent events come in OpenClaw's closed shapes: a chat event's reply text and who wrote it ride in
  // its ``message``, an agent event's session key in its ``data``. Lift them up for the code below (once:
  // held events come through here again).
  function lift(name, p) {
    if (name === 'chat' && p.message) {
      var out = Object.assign({}, p.message, p, { text: p.message.text || '' });
      delete out.message;
      return out;
    }
    if (name === 'agent' && p.data && p.data.sessionKey && !p.sessionKey) {
      return Object.assign({ sessionKey: p.data.sessionKey }, p);
    }
    return p;
  }

  function onEvent(name, p) {
    if (!p) return;
    p = lift(name, p);
    if (name === 'tick') return;
    if (name === 'shutdown') { setStatus('connecting', 'gateway restarting…'); return; }
    if (name === 'chat' && p.state !== 'delta') {  // a turn ended, or a message was posted, somewhere
      refreshSessionsSoon();
      if (p.sessionKey && p.sessionKey !== state.sessionKey) state.unread[p.sessionKey] = true;
      else if (document.hidden) { state.unseen += 1; showSession(); }
    }
    if (p.sessionKey && p.sessionKey !== state.sessionKey) return;
    if (state.held) { state.held.push([name, p]); return; }
    var known = p.runId && state.runs[p.runId];
    if (name === 'chat' && known && known.done && (p.state === 'delta' || p.state === 'final')) return;  // in history
    if (name === 'chat' && p.runId && /^msg-/.test(p.runId) && p.state === 'final') showPosted(p);
    else if (name === 'chat' && p.runId) {
      var turn = turnFor(p.runId);
      if (p.state === 'delta') { turn.setText(p.text || '', true); setActive(p.runId); }
      else if (p.state === 'final') { turn.setFinal(p.text || '', p); turn.finish('final'); setActive(null, p.runId); }
      else if (p.state === 'error') {
        turn.finish('error', p.errorMessage || p.text, p); setActive(null, p.runId);
        loadAgents();  // is the agent's CLI (still) missing? then the card says how to install it
      }
      else if (p.state === 'aborted') { turn.finish('aborted', null, p); setActive(null, p.runId); }
    } else if (name === 'chat.message' && p.messageId) {
      applyChange(p);
    } else if (name === 'chat.user' && p.messageId) {  // sent from another page (or a client) into this session
      if (!state.sentKeys[p.idempotencyKey] && !byId(p.messageId)) {
        addUser(p.text || '', { id: p.messageId, attachments: p.attachments });
      }
    } else if (name === 'chat.audio' && p.runId && p.base64) {
      var clip = el('audio', 'clip');
      clip.controls = true;
      clip.src = 'data:' + (p.mimeType || 'audio/ogg') + ';base64,' + p.base64;
      turnFor(p.runId).node.appendChild(clip);
      scrollDown();
    } else if (name === 'agent' && p.runId) {
      var data = p.data || {};
      if (p.stream === 'tool') turnFor(p.runId).tool(data);
      else if (p.stream === 'lifecycle') {
        if (data.phase === 'start') { turnFor(p.runId); setActive(p.runId); }
        else if (data.phase === 'end' || data.phase === 'error') setActive(null, p.runId);
      }
    }
  }

  function setActive(runId, finished) {
    if (runId) state.activeRun = runId;
    else if (!finished || state.activeRun === finished) state.activeRun = null;
    $('abort').hidden = !state.activeRun;
    $('send').hidden = !!state.activeRun;
  }

  function onFrame(frame) {
    state.lastFrameAt = Date.now();
    if (frame.type === 'event') {
      if (frame.event === 'connect.challenge') sendConnect();
      else onEvent(frame.event, frame.payload);
    } else if (frame.type === 'res' && frame.id === 'connect') {
      if (frame.ok) onHello(frame.payload);
      else onAuthError(frame.error || {});
    } else if (frame.type === 'res') settle(frame);
  }

  function onAuthError(error) {
    var code = error.details && error.details.code;
    if (code === 'AUTH_TOKEN_MISMATCH' || code === 'AUTH_REQUIRED' || code === 'AUTH_RATE_LIMITED' || !load(TOKEN_KEY)) {
      state.authFailed = code !== 'AUTH_RATE_LIMITED';
      if (state.authFailed) store(TOKEN_KEY, null);
      setStatus('auth', 'not signed in');
      $('token-form').hidden = false; $('composer').hidden = true;
      $('token-error').textContent = error.message || '';
      $('you').hidden = true; closePeople();
    } else {
      setStatus('offline', error.message || 'refused');
    }
  }

  function connect() {
    clearTimeout(state.retryTimer);
    if (!load(TOKEN_KEY)) { onAuthError({ message: '' }); return; }
    setStatus('connecting', 'connecting…');
    var ws = new WebSocket(socketUrl());
    state.ws = ws;
    ws.onmessage = function (ev) {
      var frame;
      try { frame = JSON.parse(ev.data); } catch (e) { return; }
      onFrame(frame);
    };
    ws.onclose = function (ev) {
      if (state.ws !== ws) return;
      state.ready = false; state.ws = null;
      failPending(state);
      if (ev.code === CLOSE_POLICY && ev.reason === 'signed out') {  // this sign-in was revoked, or its person removed
        signedOut(state.signingOut ? SIGNED_OUT : REVOKED);
        return;
      }
      if (state.authFailed) return;
      var wait = state.backoffMs;
      state.backoffMs = Math.min(state.backoffMs * 2, 10000);
      setStatus('offline', 'offline, retrying in ' + Math.ceil(wait / 1000) + 's');
      if (state.wasOnline) {  // it worked before: say so where the reader looks, not only in the corner
        $('banner-text').textContent = 'Connection to the gateway lost. Reconnecting in ' + Math.ceil(wait / 1000) +
          ' s… (messages you send now are not delivered)';
        $('banner').hidden = false;
      }
      if (state.activeRun) setActive(null);
      state.retryTimer = setTimeout(connect, wait);
    };
  }

  // Two missed ticks mean a dead link even if the socket has not noticed yet.
  state.watchdog = setInterval(function () {
    if (state.ready && state.ws && Date.now() - state.lastFrameAt > state.tickMs * 2.5) state.ws.close();
  }, 5000);

  // -- the composer ----------------------------------------------------------------------------
  var input = $('input');
  function grow() { input.style.height = 'auto'; input.style.height = Math.min(input.scrollHeight, window.innerHeight * 0.4) + 'px'; }
  input.addEventListener('input', grow);
  // The placeholder whole, or a shorter one where the field is too narrow to show it (a phone): never cut.
  var PLACEHOLDERS = [input.getAttribute('placeholder') || 'Message your agent\u2026', 'Message\u2026'];
  function fitPlaceholder() {
    var cs = getComputedStyle(input), ctx = document.createElement('canvas').getContext('2d');
    if (!ctx) return;
    ctx.font = cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily;
    var room = input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    var pick = PLACEHOLDERS.filter(function (p) { return ctx.measureText(p).width <= room; })[0];
    input.placeholder = pick || '';
  }
  fitPlaceholder();
  window.addEventListener('resize', fitPlaceholder);
  input.addEventListener('keydown', function (ev) {
    var touch = window.matchMedia && window.matchMedia('(pointer: coarse)').matches;
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing && !touch) { ev.preventDefault(); submit(); }
  });
  $('composer').addEventListener('submit', function (ev) { ev.preventDefault(); submit(); });

  function submit() {
    var text = input.value.trim();
    var files = pendingFiles;
    if ((!text && !files.length) || !state.ready) return;
    input.value = ''; grow();
    pendingFiles = []; renderPending();
    var bubble = addUser(text);
    bubble.classList.add('local');
    if (files.length) {
      bubble.appendChild(el('span', 'uploading', 'sending ' + files.map(function (f) { return f.name; }).join(', ') + '…'));
    }
    var key = randomId();
    state.sentKeys[key] = true;
    Promise.all(files.map(readUpload))
      .then(function (uploads) {
        var params = { sessionKey: state.sessionKey, message: text, idempotencyKey: key };
        if (uploads.length) params.attachments = uploads;
        return request('chat.send', params);
      })
      .then(function (res) {
        var note = bubble.querySelector('.uploading');
        if (note) note.remove();
        if (res.sessionKey && res.sessionKey !== state.sessionKey) { state.sessionKey = res.sessionKey; showSession(); }
        if (res.messageId) bubble.dataset.id = res.messageId;
        if (res.attachments) decorate(bubble, { messageId: res.messageId, attachments: res.attachments });
        if (res.runId && !turnFor(res.runId).done) setActive(res.runId);  // it may have ended already
        refreshSessionsSoon();
      })
      .catch(function (err) { bubble.classList.add('failed'); showError('not sent: ' + err.message); });
  }

  // Files to send with the next message: picked with the paperclip, pasted, or dropped on the chat.
  var MAX_FILES = 5, MAX_FILE_BYTES = 10 * 1024 * 1024;
  var pendingFiles = [];
  function readUpload(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () {
        resolve({ name: file.name || 'pasted', mimeType: file.type || 'application/octet-stream',
                  base64: String(reader.result).split(',')[1] || '' });
      };
      reader.onerror = function () { reject(new Error('could not read ' + file.name)); };
      reader.readAsDataURL(file);
    });
  }
  function addFiles(list) {
    Array.prototype.forEach.call(list || [], function (file) {
      if (pendingFiles.length >= MAX_FILES) { showError('at most ' + MAX_FILES + ' files in one message'); return; }
      if (file.size > MAX_FILE_BYTES) { showError(file.name + ' is larger than 10 MB'); return; }
      pendingFiles.push(file);
    });
    renderPending();
  }
  function renderPending() {
    var box = $('pending');
    box.textContent = '';
    pendingFiles.forEach(function (file, i) {
      var chip = el('span', 'chip');
      chip.appendChild(el('span', 'cname', file.name || 'pasted'));
      chip.appendChild(el('span', 'csize', humanSize(file.size)));
      var remove = el('button', null, '✕');
      remove.type = 'button'; remove.setAttribute('aria-label', 'Remove ' + (file.name || 'file'));
      remove.addEventListener('click', function () { pendingFiles.splice(i, 1); renderPending(); });
      chip.appendChild(remove);
      box.appendChild(chip);
    });
    box.hidden = pendingFiles.length === 0;
  }
  $('attach').addEventListener('click', function () { $('file-input').click(); });
  $('file-input').addEventListener('change', function () { addFiles(this.files); this.value = ''; });
  input.addEventListener('paste', function (ev) {
    var files = ev.clipboardData && ev.clipboardData.files;
    if (files && files.length) { ev.preventDefault(); addFiles(files); }
  });
  var app = $('app');
  app.addEventListener('dragover', function (ev) {
    if (ev.dataTransfer && Array.prototype.indexOf.call(ev.dataTransfer.types, 'Files') >= 0) {
      ev.preventDefault(); app.classList.add('dropping');
    }
  });
  app.addEventListener('dragleave', function (ev) { if (ev.target === app || !app.contains(ev.relatedTarget)) app.classList.remove('dropping'); });
  app.addEventListener('drop', function (ev) {
    app.classList.remove('dropping');
    if (ev.dataTransfer && ev.dataTransfer.files.length) { ev.preventDefault(); addFiles(ev.dataTransfer.files); }
  });

  // Voice messages: the microphone button records (MediaRecorder, Opus) until pressed again; the gateway
  // transcribes the clip before the agent sees it, and a spoken reply comes back as a chat.audio event.
  var recorder = null;
  function recordingMime() {
    var kinds = ['audio/webm;codecs=opus', 'audio/ogg;codecs=opus', 'audio/webm', 'audio/mp4'];
    for (var i = 0; i < kinds.length; i++) { if (window.MediaRecorder && MediaRecorder.isTypeSupported(kinds[i])) return kinds[i]; }
    return '';
  }
  function sendClip(blob, mime) {
    var reader = new FileReader();
    reader.onload = function () {
      var b64 = String(reader.result).split(',')[1] || '';
      var bubble = addUser('Voice message');
      bubble.classList.add('local');
      var key = randomId();
      state.sentKeys[key] = true;
      request('chat.send', { sessionKey: state.sessionKey, message: input.value.trim(), idempotencyKey: key,
                             audio: { base64: b64, mimeType: mime.split(';')[0] } })
        .then(function (res) {
          input.value = ''; grow();
          if (res.messageId) bubble.dataset.id = res.messageId;
          if (res.transcript) bubble.appendChild(el('div', 'transcript', res.transcript.replace(/^\[|\]$/g, '')));
          if (res.transcriptError) showError('could not transcribe: ' + res.transcriptError);
          if (res.runId && !turnFor(res.runId).done) setActive(res.runId);  // it may have ended already
        })
        .catch(function (err) { bubble.classList.add('failed'); showError('not sent: ' + err.message); });
    };
    reader.readAsDataURL(blob);
  }
  $('record').addEventListener('click', function () {
    var button = $('record');
    if (recorder) { recorder.stop(); return; }
    if (!navigator.mediaDevices || !window.MediaRecorder) { showError('this browser cannot record audio'); return; }
    navigator.mediaDevices.getUserMedia({ audio: true }).then(function (stream) {
      var mime = recordingMime();
      var chunks = [];
      recorder = mime ? new MediaRecorder(stream, { mimeType: mime }) : new MediaRecorder(stream);
      recorder.ondataavailable = function (ev) { if (ev.data && ev.data.size) chunks.push(ev.data); };
      recorder.onstop = function () {
        stream.getTracks().forEach(function (t) { t.stop(); });
        button.classList.remove('recording'); button.setAttribute('aria-pressed', 'false');
        var type = recorder.mimeType || mime || 'audio/webm';
        recorder = null;
        if (chunks.length) sendClip(new Blob(chunks, { type: type }), type);
      };
      recorder.start();
      button.classList.add('recording'); button.setAttribute('aria-pressed', 'true');
    }).catch(function (err) { showError('no microphone: ' + err.message); });
  });

  $('abort').addEventListener('click', function () {
    request('chat.abort', { sessionKey: state.sessionKey, runId: state.activeRun || undefined })
      .catch(function (err) { showError('could not stop: ' + err.message); });
  });

  // -- conversations: the list beside the chat (a drawer on a phone) -------------------------------
  function mainKey() { return (state.defaults && state.defaults.mainSessionKey) || 'agent:main:main'; }
  function agentOf(key) { var parts = String(key || '').split(':'); return parts[0] === 'agent' ? parts[1] : null; }
  function findSession(key) {
    for (var i = 0; i < state.sessions.length; i++) { if (state.sessions[i].key === key) return state.sessions[i]; }
    return null;
  }
  function findAgent(id) {
    for (var i = 0; i < state.agents.length; i++) { if (state.agents[i].id === id) return state.agents[i]; }
    return null;
  }
  function sessionTitle(s) {
    if (s.label) return s.label;
    var parts = String(s.key || '').split(':');
    if (parts[2] === 'person' && s.key === mainKey()) return 'Main session';  // a signed-in person's own
    if (s.derivedTitle && !(parts.length === 3 && parts[2] === 'main')) return s.derivedTitle;
    if (parts.length === 3 && parts[2] === 'main') {
      return parts[1] === ((state.defaults && state.defaults.defaultAgentId) || 'main') ? 'Main session' : 'Main session · ' + parts[1];
    }
    if (parts[2] === 'webchat') return 'New conversation';
    return parts.slice(2).join(':') || s.key || '';
  }
  function badgeOf(s) {
    if (s.channel) return s.channel;
    var kind = s.kind || '';
    return kind === 'direct' || kind === 'main' ? '' : kind;
  }
  function ago(ms) {
    if (!ms) return '';
    var s = Math.max(0, (Date.now() - ms) / 1000);
    if (s < 60) return 'just now';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ago';
    return new Date(ms).toLocaleDateString();
  }

  function loadSessions() {
    return request('sessions.list', { limit: 100, includeDerivedTitles: true, includeLastMessage: true })
      .then(function (res) { state.sessions = res.sessions || []; renderSessions(); showSession(); })
      .catch(function () { /* the list is a convenience: the chat itself still works */ });
  }
  function refreshSessionsSoon() {
    clearTimeout(state.listTimer);
    state.listTimer = setTimeout(function () { if (state.ready) loadSessions(); }, 400);
  }

  function renderSessions() {
    var nav = $('sessions');
    if (state.renaming) state.renaming.moving = true;  // detaching its focused field blurs it: not "done"
    nav.textContent = '';
    var list = state.sessions.slice();
    if (!findSession(mainKey())) list.unshift({ key: mainKey(), kind: 'main' });
    if (state.sessionKey && !findSession(state.sessionKey) && state.sessionKey !== mainKey()) {
      list.unshift({ key: state.sessionKey, kind: 'webchat' });
    }
    list.forEach(function (s) { nav.appendChild(sessionItem(s)); });
    keepRename(nav);
  }

  // A rename in progress outlives a refresh of the list (a turn ending anywhere refreshes it): its field, with
  // what was typed and the focus, moves into the rebuilt item instead of being dropped with the old one.
  function keepRename(nav) {
    var r = state.renaming;
    if (!r) return;
    var item = null;
    for (var i = 0; i < nav.children.length; i++) {
      if (nav.children[i].dataset.key === r.key) { item = nav.children[i]; break; }
    }
    r.moving = false;
    if (!item) { state.renaming = null; return; }  // deleted meanwhile: nothing left to name
    item.textContent = ''; item.appendChild(r.field);
    r.field.focus();
  }

  function sessionItem(s) {
    var item = el('div', 'session-item' + (s.key === state.sessionKey ? ' active' : '') +
      (state.unread[s.key] ? ' unread' : ''));
    item.dataset.key = s.key;
    var open = el('button', 'open');
    open.type = 'button';
    open.title = s.key + (s.updatedAt ? ' · ' + ago(s.updatedAt) : '');
    open.appendChild(el('span', 's-title', sessionTitle(s)));
    var sub = el('span', 's-sub');
    var badge = badgeOf(s);
    if (badge) sub.appendChild(el('span', 's-badge', badge));
    sub.appendChild(document.createTextNode(
      (s.lastMessagePreview || '').replace(/[*_`#>]+/g, '') || ago(s.updatedAt) || s.key));
    open.appendChild(sub);
    open.addEventListener('click', function () { switchSession(s.key); closeMenu(); });
    item.appendChild(open);
    if (!s.createdAt) return item;  // not stored yet: nothing to rename or delete
    var tools = el('span', 'tools');
    var rename = el('button', 'rename', '✎');
    rename.type = 'button'; rename.title = 'Rename'; rename.setAttribute('aria-label', 'Rename ' + sessionTitle(s));
    rename.addEventListener('click', function () { startRename(item, s); });
    var del = el('button', 'delete', '✕');
    del.type = 'button'; del.title = 'Delete'; del.setAttribute('aria-label', 'Delete ' + sessionTitle(s));
    del.addEventListener('click', function () {
      if (!del.classList.contains('confirm')) {  // a second click within 4 s deletes: no accidental loss
        del.classList.add('confirm'); del.textContent = 'Delete?';
        setTimeout(function () { del.classList.remove('confirm'); del.textContent = '✕'; }, 4000);
        return;
      }
      request('sessions.delete', { key: s.key }).then(function () {
        if (s.key === state.sessionKey) switchSession(mainKey());
        loadSessions();
      }).catch(function (err) { showError('could not delete: ' + err.message); });
    });
    tools.appendChild(rename); tools.appendChild(del);
    item.appendChild(tools);
    return item;
  }

  function startRename(item, s) {
    var field = el('input');
    field.value = s.label || ''; field.placeholder = sessionTitle(s); field.maxLength = 256;
    field.setAttribute('aria-label', 'New name');
    item.textContent = ''; item.appendChild(field); field.focus();
    var rename = state.renaming = { key: s.key, field: field, moving: false };
    var done = false;
    function finish(save) {
      if (done) return;
      done = true;
      if (state.renaming === rename) state.renaming = null;
      if (!save) { renderSessions(); return; }
      request('sessions.patch', { key: s.key, label: field.value.trim() || null })
        .then(function () { loadSessions(); })
        .catch(function (err) { showError('could not rename: ' + err.message); renderSessions(); });
    }
    field.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter') { ev.preventDefault(); finish(true); }
      else if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); finish(false); }
    });
    field.addEventListener('blur', function () { if (!rename.moving) finish(true); });
  }

  function switchSession(key, fresh) {
    closePeople();
    state.sessionKey = key; store(SESSION_KEY, key); state.activeRun = null; setActive(null);
    delete state.unread[key];
    messages.textContent = ''; state.runs = {};
    showSession(); renderSessions();
    if (fresh) { ++state.historySeq; state.held = null; renderHistory([]); }  // a new key: nothing to load
    else if (state.ready) loadHistory();
  }
  function newChat() {
    var agent = state.newAgent && findAgent(state.newAgent) ? state.newAgent
      : (state.defaults && state.defaults.defaultAgentId) || 'main';
    switchSession('agent:' + agent + ':webchat:' + randomId().slice(0, 12), true);
    closeMenu();
    input.focus();
  }
  $('new-chat').addEventListener('click', newChat);
  $('project-pick').addEventListener('change', pickProject);
  // "Desk": the shell line that resumes this conversation in the CLI on the gateway's machine (sessions.handoff).
  $('handoff').addEventListener('click', function () {
    request('sessions.handoff', { key: state.sessionKey }).then(function (h) {
      var box = el('div', 'handoff');
      box.appendChild(el('p', null, h.command ? 'Continue this conversation at the desk (' + h.runtime +
        ', session ' + h.sessionId + '), on the gateway\u2019s machine:' :
        'The ' + h.runtime + ' runtime has no resume command (session ' + h.sessionId + ').'));
      if (h.command) {
        var pre = el('pre'); pre.appendChild(el('code', null, h.command)); box.appendChild(pre);
        box.appendChild(el('p', 'note', 'What you do there is picked up here with the next message.'));
      }
      messages.appendChild(box); refreshEmpty(); scrollDown(true);
    }).catch(function (err) {
      var details = err.details || {};
      if (details.code !== 'NO_AGENT_SESSION') { showError('no handoff: ' + err.message); return; }
      var agent = findAgent(agentOf(state.sessionKey)) || {};
      var runtime = RUNTIMES[agent.runtime] || agent.runtime || 'the agent\u2019s CLI';
      var box = el('div', 'handoff');
      box.appendChild(el('p', null, 'Nothing to continue at the desk yet: this conversation has no ' + runtime +
        ' session until the agent has answered a message here. Send one, then press Desk again: it gives the ' +
        'command that opens this conversation in ' + runtime + ' on the gateway\u2019s machine.'));
      messages.appendChild(box); refreshEmpty(); scrollDown(true);
    });
  });
  $('side-new').addEventListener('click', newChat);
  $('agent-pick').addEventListener('change', function () {
    state.newAgent = $('agent-pick').value; store(AGENT_KEY, state.newAgent);
  });

  // -- the agent: who answers here, and what to do when its CLI is missing --------------------------
  // agents.list is OpenClaw's shape (names, runtime id, model); status adds where each agent's CLI is.
  function loadAgents() {
    var facts = request('status', {}).then(function (st) {
      if (st.cliCommand) state.cliCommand = st.cliCommand;  // how `remoteclaw` is typed on the gateway's machine
      return st.agents || [];
    }, function () { return []; });
    return Promise.all([request('agents.list', {}), facts]).then(function (both) {
      var res = both[0], byId = {};
      both[1].forEach(function (f) { byId[f.id] = f; });
      state.agents = (res.agents || []).map(function (a) {
        var f = byId[a.id] || {};
        // model.primary is "<runtime>/<model>", "<runtime>/default" when the CLI picks its own
        var primary = (a.model && a.model.primary) || '';
        var model = primary.indexOf('/') >= 0 ? primary.slice(primary.indexOf('/') + 1) : primary;
        return { id: a.id, name: a.name, model: model && model !== 'default' ? model : undefined,
                 runtime: f.runtime || (a.agentRuntime && a.agentRuntime.id), cli: f.cli };
      });
      var pick = $('agent-pick');
      pick.textContent = '';
      state.agents.forEach(function (a) {
        var opt = el('option', null, a.name || a.id); opt.value = a.id;
        if (a.id === (state.newAgent || res.defaultId || res.defaultAgentId)) opt.selected = true;
        pick.appendChild(opt);
      });
      pick.hidden = state.agents.length < 2;
      showAgent();
    }).catch(function () { /* older gateways: the generic empty state stays */ });
  }

  function showAgent() {
    var agent = findAgent(agentOf(state.sessionKey));
    var missing = $('empty-missing');
    if (!agent) { missing.hidden = true; return; }
    var runtime = RUNTIMES[agent.runtime] || agent.runtime;
    var cli = agent.cli || {};
    var line = $('empty-agent');
    line.textContent = '';
    line.appendChild(document.createTextNode('Your messages go to the agent '));
    line.appendChild(el('strong', null, agent.name || agent.id));
    line.appendChild(document.createTextNode(', which answers with ' + runtime + ' ('));
    line.appendChild(el('code', null, cli.command || agent.runtime));
    line.appendChild(document.createTextNode(')' + (agent.model ? ', model ' + agent.model : '') +
      '. Replies stream in here, with every tool call it makes.'));
    missing.hidden = cli.found !== false;
    placeMissing();
    if (cli.found === false) {
      $('missing-title').textContent = (cli.command || agent.runtime) + ' is not installed on the gateway\u2019s machine, so ' +
        (agent.name || agent.id) + ' cannot answer yet.';
      var code = $('missing-install');
      code.textContent = cli.install || ('install ' + cli.command);
      var rc = state.cliCommand || 'remoteclaw';
      $('missing-setup').textContent = rc + ' setup';
      $('missing-doctor').textContent = rc + ' doctor';
      var pre = code.parentNode;
      if (!pre.querySelector('button.copy')) pre.appendChild(copyButton(code));
    }
    $('side-foot').textContent = (agent.name || agent.id) + ' · ' + runtime +
      (cli.found === false ? ' · CLI missing' : (cli.path ? ' · ' + (cli.shown || cli.path) : ''));
  }

  // -- people: who you are signed in as, and (admins) everyone on the gateway ------------------------
  // A person signs in with a credential of their own (rcp_…, from a sign-in link); the gateway token is
  // nobody. The People page talks over a socket of its own that asks for operator.admin, opened only while it
  // is needed: the chat's socket keeps to read and write, so the chat's turns stay what they were.
  var admin = { ws: null, opening: null, pending: {}, nextId: 1 };
  var ADMIN_SCOPES = ['operator.read', 'operator.write', 'operator.admin'];
  var ROLES = ['member', 'guest', 'admin', 'owner'];
  var CHANNELS = ['telegram', 'discord', 'slack', 'matrix', 'whatsapp', 'webchat'];

  function adminOpen() {
    if (admin.opening) return admin.opening;
    var ws = new WebSocket(socketUrl());
    admin.ws = ws;
    admin.opening = new Promise(function (resolve, reject) {
      ws.onmessage = function (ev) {
        var frame;
        try { frame = JSON.parse(ev.data); } catch (e) { return; }
        if (frame.type === 'event' && frame.event === 'connect.challenge') {
          ws.send(JSON.stringify(connectFrame(ADMIN_SCOPES, 'web chat: people')));
        } else if (frame.type === 'res' && frame.id === 'connect') {
          if (frame.ok) resolve(); else { reject(errorOf(frame)); ws.close(); }
        } else if (frame.type === 'res') settleOn(admin, frame);
        // events are the chat socket's business
      };
      ws.onclose = function () {
        reject(new Error('connection lost'));
        if (admin.ws !== ws) return;
        admin.ws = null; admin.opening = null;
        failPending(admin);
      };
    });
    return admin.opening;
  }
  function adminRequest(method, params) {
    return adminOpen().then(function () { return requestOn(admin, method, params); });
  }
  function adminClose() {
    var ws = admin.ws;
    admin.ws = null; admin.opening = null;
    failPending(admin);
    if (ws) { try { ws.close(); } catch (e) { /* gone */ } }
  }

  function mySignin() { return state.me ? state.me.signinId : null; }

  // people.me: the "you" area in the list's foot. An admin (people.list answers) also gets the People button.
  function loadMe() {
    request('people.me', {}).then(function (res) {
      state.me = res.person ? Object.assign({ signinId: res.signinId || null }, res.person) : null;
      renderYou();
      if (state.me && state.me.role !== 'owner' && state.me.role !== 'admin') { setAdmin(false); return; }
      adminRequest('people.list', {}).then(function (list) {
        setAdmin(true);
        if (state.peopleOpen) renderPeople(list.people || []); else adminClose();
      }, function () { setAdmin(false); adminClose(); });
    }, function () { state.me = null; renderYou(); setAdmin(false); });  // a gateway without people
  }
  function setAdmin(yes) {
    state.isAdmin = yes;
    $('open-people').hidden = !yes;
    if (!yes) closePeople();
  }

  function renderYou() {
    var me = state.me;
    $('you').hidden = false;
    $('you-who').hidden = !me;
    $('you-signins').hidden = !me;
    // "Desk" resumes a conversation in a shell on the gateway's machine: not a member's or a guest's place
    $('handoff').hidden = !!me && me.role !== 'owner' && me.role !== 'admin';
    if (!me) return;
    $('you-name').textContent = me.name || me.id;
    $('you-role').textContent = me.role;
    $('you-who').title = me.id + (me.identities && me.identities.length ? ' · ' + me.identities.map(function (i) {
      return i.channel + ':' + i.senderId; }).join(', ') : '');
    if ($('you-signins').open) loadMySignins();
  }
  function loadMySignins() {
    var box = $('you-signin-list');
    request('people.signins.list', {}).then(function (res) {
      signinList(box, res.signins || [], {
        revoke: function (s) { return request('people.signins.revoke', { signinId: s.id }); },
        error: function (err) { $('you-error').textContent = err.message; }
      });
    }, function (err) { $('you-error').textContent = err.message; });
  }
  $('you-signins').addEventListener('toggle', function () { if ($('you-signins').open) loadMySignins(); });

  // Sign out: forget the stored credential; a person's sign-in is revoked too (nobody holds it any more).
  $('sign-out').addEventListener('click', function () {
    var mine = mySignin();
    state.signingOut = true;
    function done() { signedOut(SIGNED_OUT); }
    if (mine && state.ready) request('people.signins.revoke', { signinId: mine }).then(done, done);
    else done();
  });

  // Signed out (by hand, or the gateway closed this sign-in): nothing of the person stays on the page.
  function signedOut(message) {
    store(TOKEN_KEY, null); store(SESSION_KEY, null);
    state.authFailed = true; state.me = null; state.sessionKey = null; state.wasOnline = false;
    clearTimeout(state.retryTimer);
    setAdmin(false); adminClose();
    if (state.ws) {
      var ws = state.ws;
      state.ws = null; state.ready = false; failPending(state);
      try { ws.close(); } catch (e) { /* gone */ }
    }
    state.ready = false;
    messages.textContent = ''; state.runs = {}; state.sessions = []; $('sessions').textContent = '';
    setActive(null); refreshEmpty();
    $('you').hidden = true; $('banner').hidden = true;
    $('session-title').textContent = 'remoteclaw'; $('session-label').textContent = ''; document.title = 'remoteclaw';
    setStatus('auth', 'signed out');
    $('token-form').hidden = false; $('composer').hidden = true;
    $('token-error').textContent = message;
  }

  // One list of web sign-ins, each with Revoke (yours, or anyone's on the People page).
  function signinList(box, list, opts) {
    box.textContent = '';
    if (!list.length) { box.appendChild(el('li', 'muted', 'no web sign-ins')); return; }
    list.forEach(function (s) {
      var li = el('li', 'signin');
      li.dataset.id = s.id;
      var text = el('span', 'si-text');
      var label = el('span', 'si-label', (opts.who ? s.personId + ' · ' : '') + (s.label || 'web sign-in'));
      label.title = s.label || '';
      text.appendChild(label);
      var whenLine = el('span', 'si-when', 'made ' + ago(s.createdAt) + ' · used ' + (s.lastUsedAt ? ago(s.lastUsedAt) : 'never'));
      if (s.id === mySignin()) whenLine.insertBefore(el('span', 's-badge this', 'this browser'), whenLine.firstChild);
      text.appendChild(whenLine);
      li.appendChild(text);
      var b = el('button', 'ghost revoke', 'Revoke');
      b.type = 'button'; b.setAttribute('aria-label', 'Revoke sign-in ' + s.id);
      b.addEventListener('click', function () {
        b.disabled = true;
        opts.revoke(s).then(function () {
          li.remove();
          if (!box.children.length) box.appendChild(el('li', 'muted', 'no web sign-ins'));
        }, function (err) { b.disabled = false; opts.error(err); });
      });
      li.appendChild(b);
      box.appendChild(li);
    });
  }

  // -- the People page: everyone, and the forms that change them (admins and the owner) ---------------
  function money(n) { return n == null ? 'no budget' : '$' + Number(n).toFixed(2) + '/day'; }
  // The gateway's errors name the field ({details: {field}}, or "at /field" from the params check).
  function fieldOf(err) {
    var d = err.details || {};
    if (d.field) return d.field;
    var m = /at \/(\w+)|property '(\w+)'/.exec(err.message || '');
    return m ? (m[1] || m[2]) : null;
  }
  function showFormError(form, box, err) {
    Array.prototype.forEach.call(form ? form.querySelectorAll('[aria-invalid]') : [], function (x) {
      x.removeAttribute('aria-invalid');
    });
    box.textContent = err ? err.message : '';
    var field = err && fieldOf(err);
    var input = field && form ? form.elements.namedItem(field) : null;
    if (input && input.setAttribute) { input.setAttribute('aria-invalid', 'true'); input.focus(); }
  }

  // A labelled field: an input, or a select when given options.
  function field(label, name, opts) {
    opts = opts || {};
    var wrap = el('label', 'fld');
    wrap.appendChild(el('span', null, label));
    var input;
    if (opts.options) {
      input = el('select');
      opts.options.forEach(function (o) { var opt = el('option', null, o); opt.value = o; input.appendChild(opt); });
    } else {
      input = el('input');
      input.type = opts.type || 'text';
      input.autocomplete = 'off'; input.spellcheck = false; input.setAttribute('autocapitalize', 'none');
      if (opts.placeholder) input.placeholder = opts.placeholder;
      if (opts.list) input.setAttribute('list', opts.list);
      if (opts.type === 'number') { input.min = '0'; input.step = '0.01'; input.inputMode = 'decimal'; }
    }
    input.name = name;
    if (opts.value != null) input.value = opts.value;
    wrap.appendChild(input);
    return wrap;
  }
  // A form of fields and one button; submit(values) returns a promise; its error shows under the form.
  function pform(cls, title, fields, button, submit) {
    var form = el('form', 'pform ' + cls);
    form.noValidate = true;
    if (title) form.appendChild(el('h3', null, title));
    var row = el('div', 'fields');
    fields.forEach(function (f) { row.appendChild(f); });
    var go = el('button', null, button);
    go.type = 'submit';
    row.appendChild(go);
    form.appendChild(row);
    var error = el('p', 'form-error');
    error.setAttribute('role', 'alert');
    form.appendChild(error);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var values = {};
      Array.prototype.forEach.call(form.elements, function (x) { if (x.name) values[x.name] = x.value.trim(); });
      go.disabled = true;
      submit(values).then(function () { showFormError(form, error, null); },
                          function (err) { showFormError(form, error, err); })
        .then(function () { go.disabled = false; });
    });
    return form;
  }
  function budgetParam(text) { return text === '' ? null : Number(text); }

  function openPeople() {
    state.peopleOpen = true;
    $('app').classList.add('people-open'); $('people').hidden = false;
    closeMenu(); showSession();
    loadPeople();
  }
  function closePeople() {
    if (!state.peopleOpen) return;
    state.peopleOpen = false;
    $('app').classList.remove('people-open'); $('people').hidden = true;
    adminClose();
    showSession();
  }
  $('open-people').addEventListener('click', openPeople);
  $('close-people').addEventListener('click', closePeople);

  function loadPeople() {
    $('people-note').textContent = 'loading…';
    adminRequest('people.list', {}).then(function (res) { renderPeople(res.people || []); },
      function (err) { $('people-note').textContent = 'could not list the people: ' + err.message; });
  }

  function renderPeople(list) {
    $('people-note').textContent = list.length ? '' : 'Nobody on record yet: add the first person below.';
    var box = $('people-list');
    box.textContent = '';
    list.forEach(function (p) { box.appendChild(personCard(p)); });
    countPeople();
  }
  function countPeople() {
    var n = $('people-list').children.length;
    $('people-count').textContent = n === 1 ? '1 person' : n + ' people';
  }

  var addForm = pform('p-add', 'Add a person', [
    field('Id', 'id', { placeholder: 'alice' }),
    field('Name', 'name', { placeholder: 'Alice' }),
    field('Role', 'role', { options: ROLES }),
    field('Budget, $ a day', 'maxCostPerDay', { type: 'number', placeholder: 'none' })
  ], 'Add', function (v) {
    var params = { id: v.id, role: v.role };
    if (v.name) params.name = v.name;
    if (v.maxCostPerDay !== '') params.maxCostPerDay = budgetParam(v.maxCostPerDay);
    return adminRequest('people.create', params).then(function (res) {
      $('people-note').textContent = '';
      $('people-list').appendChild(personCard(res.person));
      addForm.reset(); countPeople();
    });
  });
  $('people-add').appendChild(addForm);
  var channelList = el('datalist');
  channelList.id = 'people-channels';
  CHANNELS.forEach(function (c) { var o = el('option'); o.value = c; channelList.appendChild(o); });
  $('people').appendChild(channelList);

  $('all-signins').addEventListener('toggle', function () {
    if (!$('all-signins').open) return;
    adminRequest('people.signins.list', { id: '*' }).then(function (res) {
      signinList($('all-signin-list'), res.signins || [], {
        who: true,
        revoke: function (s) { return adminRequest('people.signins.revoke', { signinId: s.id }); },
        error: function (err) { $('all-error').textContent = err.message; }
      });
    }, function (err) { $('all-error').textContent = err.message; });
  });

  // One person: their facts (name, id, role, budget, linked chats) and, under Manage, what an admin does.
  function personCard(p) {
    var card = el('article', 'person');
    card.dataset.id = p.id;
    var facts = el('div', 'p-facts');
    card.appendChild(facts);
    var error = el('p', 'form-error p-error');
    error.setAttribute('role', 'alert');
    function refresh(person) { p = person; fillFacts(facts, person, unlink); }
    function unlink(ident) {
      return adminRequest('people.unlink', { channel: ident.channel, senderId: ident.senderId })
        .then(function () { return adminRequest('people.get', { id: p.id }); })
        .then(function (res) { error.textContent = ''; refresh(res.person); }, function (err) { error.textContent = err.message; });
    }
    refresh(p);

    var manage = el('details', 'p-manage');
    manage.appendChild(el('summary', null, 'Manage'));
    var change = pform('p-change', null, [
      field('Name', 'name', { value: p.name }),
      field('Role', 'role', { options: ROLES, value: p.role }),
      field('Budget, $ a day', 'maxCostPerDay', { type: 'number', placeholder: 'none',
        value: p.maxCostPerDay == null ? '' : String(p.maxCostPerDay) })
    ], 'Save', function (v) {
      var params = { id: p.id, role: v.role, maxCostPerDay: budgetParam(v.maxCostPerDay) };
      if (v.name) params.name = v.name;
      return adminRequest('people.update', params).then(function (res) { refresh(res.person); });
    });
    var link = pform('p-link', null, [
      field('Channel', 'channel', { placeholder: 'telegram', list: 'people-channels' }),
      field('Sender id', 'senderId', { placeholder: 'from /whoami' })
    ], 'Link chat', function (v) {
      return adminRequest('people.link', { id: p.id, channel: v.channel, senderId: v.senderId }).then(function (res) {
        refresh(res.person); link.reset();
      });
    });
    manage.appendChild(change); manage.appendChild(link);

    var buttons = el('div', 'p-buttons');
    var out = el('div', 'p-out');
    var signins = el('ul', 'signin-list p-signins');
    signins.hidden = true;
    function button(label, cls, run) {
      var b = el('button', 'ghost ' + cls, label);
      b.type = 'button';
      b.addEventListener('click', function () {
        b.disabled = true;
        run(b).then(function () { error.textContent = ''; }, function (err) { error.textContent = err.message; })
          .then(function () { b.disabled = false; });
      });
      buttons.appendChild(b);
      return b;
    }
    // What to hand the person: a code or a link, with a Copy button.
    function handOut(text, value, cls) {
      out.textContent = '';
      out.appendChild(el('p', 'note', text));
      var pre = el('pre'), code = el('code', cls, value);
      pre.appendChild(code); pre.appendChild(copyButton(code));
      out.appendChild(pre);
    }
    button('Link code', 'p-linkcode', function () {
      return adminRequest('people.linkCode', { id: p.id }).then(function (res) {
        handOut('Ask ' + p.name + ' to send this to the bot from the chat to link (within 10 minutes):', res.send, 'p-code');
      });
    });
    button('Sign-in link', 'p-signinlink', function () {
      return adminRequest('people.loginLink', { id: p.id }).then(function (res) {
        handOut('A sign-in link for ' + p.name + ' (one use, 10 minutes): whoever opens it is signed in as ' +
          p.name + ', so send it to them alone.', res.url, 'p-url');
      });
    });
    button('Sign-ins', 'p-signins-show', function () {
      return adminRequest('people.signins.list', { id: p.id }).then(function (res) {
        signins.hidden = false;
        signinList(signins, res.signins || [], {
          revoke: function (s) { return adminRequest('people.signins.revoke', { signinId: s.id }); },
          error: function (err) { error.textContent = err.message; }
        });
      });
    });
    var remove = button('Remove', 'p-remove', function () {
      if (!remove.classList.contains('confirm')) {  // a second click within 4 s removes: no accidental loss
        remove.classList.add('confirm'); remove.textContent = 'Remove ' + p.id + '?';
        setTimeout(function () { remove.classList.remove('confirm'); remove.textContent = 'Remove'; }, 4000);
        return Promise.resolve();
      }
      return adminRequest('people.remove', { id: p.id }).then(function () { card.remove(); countPeople(); });
    });
    manage.appendChild(buttons); manage.appendChild(error); manage.appendChild(out); manage.appendChild(signins);
    card.appendChild(manage);
    return card;
  }

  function fillFacts(facts, p, unlink) {
    facts.textContent = '';
    var line = el('div', 'p-line');
    line.appendChild(el('strong', 'p-name', p.name));
    line.appendChild(el('span', 'p-id', p.id));
    line.appendChild(el('span', 's-badge p-role', p.role));
    if (state.me && state.me.id === p.id) line.appendChild(el('span', 's-badge', 'you'));
    line.appendChild(el('span', 'p-budget', money(p.maxCostPerDay)));
    if (p.oneConversation) line.appendChild(el('span', 'p-budget', 'one conversation'));
    facts.appendChild(line);
    var chats = el('div', 'p-chats');
    var idents = p.identities || [];
    if (!idents.length) chats.appendChild(el('span', 'muted', 'no chats linked'));
    idents.forEach(function (i) {
      var chip = el('span', 'chip p-chat');
      chip.dataset.chat = i.channel + ':' + i.senderId;
      chip.appendChild(el('span', 'cname', i.channel + ':' + i.senderId));
      var x = el('button', null, '✕');
      x.type = 'button'; x.setAttribute('aria-label', 'Unlink ' + i.channel + ':' + i.senderId);
      x.addEventListener('click', function () { x.disabled = true; unlink(i); });
      chip.appendChild(x);
      chats.appendChild(chip);
    });
    facts.appendChild(chats);
  }

  // -- the drawer on a phone, and the keyboard -------------------------------------------------------
  function openMenu() {
    $('app').classList.add('menu-open'); $('scrim').hidden = false; $('menu').setAttribute('aria-expanded', 'true');
  }
  function closeMenu() {
    $('app').classList.remove('menu-open'); $('scrim').hidden = true; $('menu').setAttribute('aria-expanded', 'false');
  }
  $('menu').addEventListener('click', function () {
    if ($('app').classList.contains('menu-open')) closeMenu(); else openMenu();
  });
  $('close-menu').addEventListener('click', closeMenu);
  $('scrim').addEventListener('click', closeMenu);
  document.addEventListener('keydown', function (ev) {
    if (ev.key !== 'Escape' || ev.isComposing) return;
    if ($('app').classList.contains('menu-open')) { closeMenu(); return; }
    if (state.peopleOpen) { closePeople(); return; }
    if (state.activeRun) { ev.preventDefault(); $('abort').click(); }
  });
  // Replies that came while the tab was in the background are counted in its title until it is looked at.
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && state.unseen) { state.unseen = 0; showSession(); }
  });
  $('retry-now').addEventListener('click', function () { if (!state.ws) { state.backoffMs = 500; connect(); } });

  $('token-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var token = $('token-input').value.trim();
    if (!token) return;
    store(TOKEN_KEY, token); $('token-input').value = ''; state.authFailed = false; state.signingOut = false;
    connect();
  });

  window.addEventListener('hashchange', function () {
    var before = state.sessionKey;
    takeFragment();
    if (signingIn) { var wait = signingIn; signingIn = null; wait.then(afterSignin); return; }
    if (!state.ready) connect();
    else if (state.sessionKey !== before) switchSession(state.sessionKey);
  });

  // After a sign-in link: connect as that person (a fresh socket), or say why the link did not work.
  function afterSignin() {
    if (state.signinError) {
      setStatus('auth', 'not signed in');
      $('token-form').hidden = false; $('composer').hidden = true;
      $('token-error').textContent = state.signinError;
      state.signinError = null;
      return;
    }
    if (state.ws) { var old = state.ws; state.ws = null; state.ready = false; try { old.close(); } catch (e) { /* gone */ } }
    adminClose(); state.me = null; state.authFailed = false; state.signingOut = false;
    connect();
  }

  takeFragment();
  showSession();
  if (signingIn) { var first = signingIn; signingIn = null; first.then(afterSignin); } else connect();
})();
