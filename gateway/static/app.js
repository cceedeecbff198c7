// remoteclaw web chat: a plain-JS client of the gateway WebSocket protocol (no build step).
// Model text is untrusted: everything is rendered with DOM APIs and textContent, never innerHTML.
(function () {
  'use strict';

  var TOKEN_KEY = 'remoteclaw.token';
  var SESSION_KEY = 'remoteclaw.sessionKey';
  var CLIENT_KEY = 'remoteclaw.clientId';
  var PROTOCOL_MIN = 3, PROTOCOL_MAX = 4;
  var REQUEST_TIMEOUT_MS = 30000;

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
    if (params.get('session')) store(SESSION_KEY, params.get('session'));
    history.replaceState(null, '', location.pathname + location.search);
  }

  var clientId = load(CLIENT_KEY) || randomId().slice(0, 12);
  store(CLIENT_KEY, clientId);

  var state = {
    ws: null, ready: false, nextId: 1, pending: {}, backoffMs: 500, retryTimer: null, watchdog: null,
    tickMs: 30000, lastFrameAt: 0, sessionKey: load(SESSION_KEY), defaults: null, runs: {}, activeRun: null,
    authFailed: false, historyLoaded: false
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

  function renderBlocks(parent, text) {
    var lines = text.split('\n'), para = null, list = null;
    function close() { para = null; list = null; }
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      var head = /^(#{1,3})\s+(.*)$/.exec(line);
      var item = /^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/.exec(line);
      if (!line.trim()) { close(); continue; }
      if (head) { close(); var h = el('h' + head[1].length); renderInline(h, head[2]); parent.appendChild(h); continue; }
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
      pre.appendChild(code); parent.appendChild(pre);
      last = fence.lastIndex;
      if (m[0].length === 0) break;
    }
    if (last < text.length) renderBlocks(parent, text.slice(last));
  }

  // -- the message list --------------------------------------------------------------------------
  var messages = $('messages'), scroller = $('scroller');

  function nearBottom() { return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120; }
  function scrollDown(force) { if (force || nearBottom()) scroller.scrollTop = scroller.scrollHeight; }
  function refreshEmpty() { $('empty').hidden = messages.children.length > 0 || !state.ready; }

  function addUser(text) {
    var stick = nearBottom();
    var node = el('div', 'msg user', text);
    messages.appendChild(node); refreshEmpty(); scrollDown(stick);
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
      this.segment.classList.toggle('streaming', !!streaming);
    }
    scrollDown(stick);
  };
  // The final text is the reply itself (what follows the last tool call, cleaned), not everything streamed.
  Turn.prototype.setFinal = function (reply) {
    var text = this.text;
    if (!reply.trim() || text.slice(this.offset).trim() === reply.trim()) { this.setText(text, false); return; }
    this.setText(text.slice(0, this.offset) + reply, false);
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
  Turn.prototype.finish = function (kind, message) {
    if (this.segment) this.segment.classList.remove('streaming');
    this.done = true;
    if (kind === 'error') this.node.appendChild(el('div', 'msg error', message || 'the run failed'));
    else if (kind === 'aborted') this.node.appendChild(el('div', 'note', 'stopped'));
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
    messages.textContent = ''; state.runs = {};
    var turn = null;
    list.forEach(function (m) {
      if (m.role === 'user') { addUser(m.text || ''); turn = null; return; }
      var key = m.runId || ('h' + Math.random());
      if (!turn || turn.runId !== key) { turn = new Turn(key); if (m.runId) state.runs[m.runId] = turn; }
      if (m.role === 'tool') {
        var t = m.tool || {};
        turn.tool({ phase: 'result', id: m.id, name: t.name, input: t.input, output: t.output == null ? '' : t.output, isError: t.isError });
      } else {
        var sep = turn.text && turn.offset < turn.text.length ? '\n\n' : '';
        turn.setText(turn.text + sep + (m.text || ''), false);
      }
    });
    Object.keys(state.runs).forEach(function (k) { state.runs[k].done = true; });
    refreshEmpty(); scrollDown(true);
  }

  // -- the protocol ----------------------------------------------------------------------------
  function setStatus(kind, label) {
    $('status').dataset.state = kind;
    $('status-label').textContent = label;
  }

  function request(method, params) {
    return new Promise(function (resolve, reject) {
      if (!state.ws || state.ws.readyState !== 1) { reject(new Error('not connected')); return; }
      var id = 'w' + (state.nextId++);
      var timer = setTimeout(function () { delete state.pending[id]; reject(new Error(method + ' timed out')); }, REQUEST_TIMEOUT_MS);
      state.pending[id] = { resolve: resolve, reject: reject, timer: timer };
      state.ws.send(JSON.stringify({ type: 'req', id: id, method: method, params: params || {} }));
    });
  }

  function settle(frame) {
    var p = state.pending[frame.id];
    if (!p) return;
    delete state.pending[frame.id]; clearTimeout(p.timer);
    if (frame.ok) p.resolve(frame.payload);
    else {
      var err = new Error((frame.error && frame.error.message) || 'request failed');
      err.code = frame.error && frame.error.code; err.details = frame.error && frame.error.details;
      p.reject(err);
    }
  }

  function sendConnect() {
    var token = load(TOKEN_KEY);
    var frame = {
      type: 'req', id: 'connect', method: 'connect',
      params: {
        minProtocol: PROTOCOL_MIN, maxProtocol: PROTOCOL_MAX, role: 'operator',
        scopes: ['operator.read', 'operator.write'],
        client: { id: 'webchat-ui', version: '1', platform: 'web', mode: 'webchat', instanceId: clientId,
          displayName: 'web chat' },
        auth: { token: token || undefined },
        userAgent: navigator.userAgent, locale: navigator.language
      }
    };
    state.ws.send(JSON.stringify(frame));
  }

  function onHello(hello) {
    state.ready = true; state.backoffMs = 500; state.authFailed = false;
    state.tickMs = (hello.policy && hello.policy.tickIntervalMs) || 30000;
    state.defaults = (hello.snapshot && hello.snapshot.sessionDefaults) || {};
    if (!state.sessionKey) state.sessionKey = state.defaults.mainSessionKey || 'agent:main:main';
    $('token-form').hidden = true; $('composer').hidden = false;
    setStatus('online', 'connected');
    showSession();
    loadHistory();
  }

  function showSession() { $('session-label').textContent = state.sessionKey || ''; }

  function loadHistory() {
    return request('chat.history', { sessionKey: state.sessionKey, limit: 200 }).then(function (res) {
      if (res.sessionKey) state.sessionKey = res.sessionKey;
      showSession();
      renderHistory(res.messages || []);
      state.historyLoaded = true;
    }).catch(function (err) { showError('could not load history: ' + err.message); });
  }

  function showError(text) {
    messages.appendChild(el('div', 'msg error', text)); refreshEmpty(); scrollDown(true);
  }

  function onEvent(name, p) {
    if (!p) return;
    if (name === 'tick') return;
    if (name === 'shutdown') { setStatus('connecting', 'gateway restarting…'); return; }
    if (p.sessionKey && p.sessionKey !== state.sessionKey) return;
    if (name === 'chat' && p.runId) {
      var turn = turnFor(p.runId);
      if (p.state === 'delta') { turn.setText(p.text || '', true); setActive(p.runId); }
      else if (p.state === 'final') { turn.setFinal(p.text || ''); turn.finish('final'); setActive(null, p.runId); }
      else if (p.state === 'error') { turn.finish('error', p.errorMessage || p.text); setActive(null, p.runId); }
      else if (p.state === 'aborted') { turn.finish('aborted'); setActive(null, p.runId); }
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
    } else {
      setStatus('offline', error.message || 'refused');
    }
  }

  function connect() {
    clearTimeout(state.retryTimer);
    if (!load(TOKEN_KEY)) { onAuthError({ message: '' }); return; }
    setStatus('connecting', 'connecting…');
    var ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/');
    state.ws = ws;
    ws.onmessage = function (ev) {
      var frame;
      try { frame = JSON.parse(ev.data); } catch (e) { return; }
      onFrame(frame);
    };
    ws.onclose = function () {
      if (state.ws !== ws) return;
      state.ready = false; state.ws = null;
      Object.keys(state.pending).forEach(function (id) {
        clearTimeout(state.pending[id].timer); state.pending[id].reject(new Error('connection lost'));
      });
      state.pending = {};
      if (state.authFailed) return;
      var wait = state.backoffMs;
      state.backoffMs = Math.min(state.backoffMs * 2, 10000);
      setStatus('offline', 'offline, retrying in ' + Math.ceil(wait / 1000) + 's');
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
  input.addEventListener('keydown', function (ev) {
    var touch = window.matchMedia && window.matchMedia('(pointer: coarse)').matches;
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing && !touch) { ev.preventDefault(); submit(); }
  });
  $('composer').addEventListener('submit', function (ev) { ev.preventDefault(); submit(); });

  function submit() {
    var text = input.value.trim();
    if (!text || !state.ready) return;
    input.value = ''; grow();
    var bubble = addUser(text);
    request('chat.send', { sessionKey: state.sessionKey, message: text, idempotencyKey: randomId() })
      .then(function (res) {
        if (res.sessionKey && res.sessionKey !== state.sessionKey) { state.sessionKey = res.sessionKey; showSession(); }
        if (res.runId) { turnFor(res.runId); setActive(res.runId); }
      })
      .catch(function (err) { bubble.classList.add('failed'); showError('not sent: ' + err.message); });
  }

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
      request('chat.send', { sessionKey: state.sessionKey, message: input.value.trim(), idempotencyKey: randomId(),
                             audio: { base64: b64, mimeType: mime.split(';')[0] } })
        .then(function (res) {
          input.value = ''; grow();
          if (res.transcript) bubble.appendChild(el('div', 'transcript', res.transcript.replace(/^\[|\]$/g, '')));
          if (res.transcriptError) showError('could not transcribe: ' + res.transcriptError);
          if (res.runId) { turnFor(res.runId); setActive(res.runId); }
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

  function switchSession(key) {
    state.sessionKey = key; store(SESSION_KEY, key); state.activeRun = null; setActive(null);
    showSession();
    if (state.ready) loadHistory();
  }
  $('new-chat').addEventListener('click', function () {
    var agent = (state.defaults && state.defaults.defaultAgentId) || 'main';
    switchSession('agent:' + agent + ':webchat:' + randomId().slice(0, 12));
  });
  $('main-chat').addEventListener('click', function () {
    switchSession((state.defaults && state.defaults.mainSessionKey) || 'agent:main:main');
  });

  $('token-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var token = $('token-input').value.trim();
    if (!token) return;
    store(TOKEN_KEY, token); $('token-input').value = ''; state.authFailed = false;
    connect();
  });

  window.addEventListener('hashchange', function () { takeFragment(); if (!state.ready) connect(); });

  takeFragment();
  showSession();
  connect();
})();
