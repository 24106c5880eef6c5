// flowlib studio: the runs table and the live run view. Every text from a model, a tool
// or the store is inserted with textContent (never as markup); the drawing is Graphviz's
// SVG, parsed as SVG and stripped of scripts and event attributes before it is shown.
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var state = {
    cursors: [null], page: 0, nextCursor: null, runs: [], timer: null,
    runId: null, detail: null, source: null, step: 0, flows: null, editing: null,
  };
  // For tests and measurements: when the run view last showed new data.
  window.studio = { rendered: 0, lastCheckpoint: 0, steps: 0, loads: 0, log: [] };

  var view = flowlibStepView;  // step_view.js, shared with the run page
  var el = view.el;
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  function when(stamp) {
    if (!stamp) { return ''; }
    var d = new Date(stamp * 1000);
    return d.toLocaleString();
  }
  function status(text, isError) {
    var line = $('status-line');
    line.textContent = text || '';
    line.className = isError ? 'error' : '';
  }
  function api(method, path, body) {
    var init = { method: method, credentials: 'same-origin', headers: {} };
    if (method !== 'GET') {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body || {});
    }
    return fetch(path, init).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) { throw new Error(data.error || (r.status + ' ' + r.statusText)); }
        return data;
      });
    });
  }
  function safeSvg(text) {
    if (!text) { return null; }
    var doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    var root = doc.documentElement;
    if (!root || root.nodeName !== 'svg') { return null; }
    root.querySelectorAll('script, foreignObject').forEach(function (n) { n.remove(); });
    root.querySelectorAll('*').forEach(function (n) {
      Array.prototype.slice.call(n.attributes).forEach(function (a) {
        var name = a.name.toLowerCase();
        var value = String(a.value).trim().toLowerCase();
        if (name.indexOf('on') === 0 || (name.indexOf('href') >= 0 && value.indexOf('#') !== 0)) {
          n.removeAttribute(a.name);
        }
      });
    });
    return document.importNode(root, true);
  }

  // --- the runs table -------------------------------------------------------------------
  function runsQuery() {
    var q = new URLSearchParams();
    q.set('limit', $('filter-limit').value);
    if ($('filter-status').value) { q.set('status', $('filter-status').value); }
    if ($('filter-flow').value.trim()) { q.set('flow', $('filter-flow').value.trim()); }
    var cursor = state.cursors[state.page];
    if (cursor) { q.set('cursor', cursor); }
    return q.toString();
  }
  function loadRuns() {
    var started = performance.now();
    return api('GET', '/api/runs?' + runsQuery()).then(function (data) {
      state.runs = data.runs;
      state.nextCursor = data.next_cursor;
      drawRuns();
      window.studio.runsLoaded = performance.now() - started;
      window.studio.loads += 1;
    }).catch(function (e) { status(e.message, true); });
  }
  function drawRuns() {
    var body = $('runs-body');
    clear(body);
    var search = $('filter-search').value.trim().toLowerCase();
    state.runs.forEach(function (run) {
      var hay = [run.run_id, run.flow, run.status, run.stop_reason || ''].join(' ').toLowerCase();
      if (search && hay.indexOf(search) < 0) { return; }
      var tr = el('tr');
      tr.setAttribute('data-run', run.run_id);
      var id = el('td'); var link = el('a', run.run_id); link.href = '#/run/' + encodeURIComponent(run.run_id);
      id.appendChild(link); tr.appendChild(id);
      var st = el('td'); st.appendChild(el('span', run.status, 'badge s-' + run.status)); tr.appendChild(st);
      tr.appendChild(el('td', run.flow));
      tr.appendChild(el('td', run.turns, 'num'));
      tr.appendChild(el('td', run.tokens, 'num'));
      tr.appendChild(el('td', when(run.updated)));
      tr.appendChild(el('td', run.forked_from ? run.forked_from[0] + ' @ ' + run.forked_from[1] : ''));
      tr.addEventListener('click', function (ev) {
        if (ev.target.tagName !== 'A') { location.hash = '#/run/' + encodeURIComponent(run.run_id); }
      });
      body.appendChild(tr);
    });
    $('page-info').textContent = 'page ' + (state.page + 1) + ' \u00b7 ' + state.runs.length + ' runs';
    $('next-page').disabled = !state.nextCursor;
    $('first-page').disabled = state.page === 0;
  }
  function loadFlows() {
    if (state.flows) { return; }
    api('GET', '/api/flows').then(function (data) {
      state.flows = data.flows;
      var box = $('flows');
      clear(box);
      data.flows.forEach(function (flow) {
        var card = el('div', null, 'flow');
        card.setAttribute('data-flow', flow.name);
        card.appendChild(el('h3', flow.name + ' (' + flow.reference + ')'));
        var svg = safeSvg(flow.svg);
        if (svg) { card.appendChild(svg); }
        var findings = el('ul');
        (flow.findings.length ? flow.findings : ['flowlib check: no findings']).forEach(function (f) {
          findings.appendChild(el('li', f));
        });
        card.appendChild(findings);
        var form = el('form', null, 'bar start');
        var task = el('input'); task.placeholder = 'task'; task.size = 50; task.name = 'task';
        var go = el('button', 'Start a run'); go.type = 'submit';
        form.appendChild(task); form.appendChild(go);
        form.addEventListener('submit', function (ev) {
          ev.preventDefault();
          api('POST', '/api/runs', { flow: flow.name, task: task.value }).then(function (r) {
            location.hash = '#/run/' + encodeURIComponent(r.run_id);
          }).catch(function (e) { status(e.message, true); });
        });
        card.appendChild(form);
        box.appendChild(card);
      });
    }).catch(function (e) { status(e.message, true); });
  }
  function showRuns() {
    stopRun();
    $('run-view').hidden = true;
    $('runs-view').hidden = false;
    loadFlows();
    loadRuns();
    state.timer = setInterval(function () { if (!document.hidden) { loadRuns(); } }, 3000);
  }

  // --- the run view ---------------------------------------------------------------------
  function stopRun() {
    if (state.source) { state.source.close(); state.source = null; }
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
  }
  function showStep(index) {
    var d = state.detail;
    var steps = d.steps;
    var slider = $('slider');
    slider.max = String(Math.max(steps.length, 1));
    index = Math.max(1, Math.min(steps.length, index));
    state.step = index;
    slider.value = String(index);
    var svg = document.querySelector('#drawing svg');
    if (!steps.length) {
      clear($('facts')); clear($('tools')); clear($('messages'));
      if (svg) { view.unmark(svg); }
      $('step-label').textContent = 'No steps yet';
      $('tools-box').style.display = 'none';
      document.body.setAttribute('data-step', '0');
      return;
    }
    var step = steps[index - 1];
    var checkpoint = step.run_id === d.run.run_id ? step.checkpoint_id
      : step.checkpoint_id + ' of ' + step.run_id + ' (before the fork)';
    view.show(steps, index, [['checkpoint', checkpoint]], [['written', when(step.created_at)]]);
    if (svg && d.run.status === 'running') {
      var last = steps[steps.length - 1];
      view.nodeGroups(svg, last.node).forEach(function (g) { g.classList.add('running'); });
    }
    $('step-label').textContent = 'Step ' + index + ' of ' + steps.length + ': ' + step.node;
  }
  function drawDetail(d, fresh) {
    var previous = state.detail;
    state.detail = d;
    var run = d.run;
    $('run-title').textContent = 'Run ' + run.run_id;
    var badge = $('run-status');
    badge.textContent = run.status; badge.className = 'badge s-' + run.status;
    var facts = run.flow + ' \u00b7 ' + run.turns + ' turns \u00b7 ' + run.tokens + ' tokens \u00b7 updated ' + when(run.updated);
    if (run.forked_from) { facts += ' \u00b7 forked from ' + run.forked_from[0] + ' at checkpoint ' + run.forked_from[1]; }
    if (run.stop_reason) { facts += ' \u00b7 stopped: ' + run.stop_reason; }
    $('run-facts').textContent = facts;
    $('resume').disabled = !d.flow_named;
    $('edit').disabled = !d.flow_named;
    $('resume').title = d.flow_named ? '' : 'start the studio with this flow to resume it';
    var error = $('run-error');
    error.hidden = !d.error; error.textContent = d.error || '';
    if (fresh || !document.querySelector('#drawing svg')) {
      var drawing = $('drawing'); clear(drawing);
      var svg = safeSvg(d.svg);
      if (svg) { drawing.appendChild(svg); } else { drawing.appendChild(el('p', 'no drawing (Graphviz missing?)')); }
    }
    // pending requests
    var list = $('pending-list'); clear(list);
    $('pending').hidden = !d.pending.length;
    d.pending.forEach(function (r) {
      var box = el('div', null, 'request');
      box.setAttribute('data-request', r.request_id);
      box.appendChild(el('div', 'Request ' + r.request_id + (r.by ? ' from ' + r.by : '') + ' to ' + r.asked));
      box.appendChild(el('pre', r.question));
      var text = el('textarea'); text.rows = 2; text.cols = 60; text.className = 'answer-text';
      var send = el('button', 'Answer'); send.type = 'button'; send.className = 'answer';
      send.addEventListener('click', function () {
        api('POST', '/api/runs/' + encodeURIComponent(run.run_id) + '/answer',
          { request_id: r.request_id, text: text.value }).then(function () {
          $('action-result').textContent = 'answered ' + r.request_id;
        }).catch(function (e) { $('action-result').textContent = e.message; });
      });
      box.appendChild(text); box.appendChild(send);
      list.appendChild(box);
    });
    // checkpoints and thread
    var body = document.querySelector('#checkpoints tbody'); clear(body);
    d.checkpoints.forEach(function (c) {
      var tr = el('tr');
      [c.checkpoint_id, c.kind, c.turn, c.node || c.stop_reason || '', c.message_count, when(c.created_at)]
        .forEach(function (v) { tr.appendChild(el('td', v)); });
      body.appendChild(tr);
    });
    var thread = $('thread'); clear(thread);
    if (fresh) { state.editing = null; }
    d.messages.forEach(function (m, index) {
      var box = el('div', null, 'msg');
      box.setAttribute('data-index', String(index));
      var who = el('div', m.source + ' \u00b7 ' + m.kind + ' ', 'who');
      box.appendChild(who);
      if (state.editing && state.editing.index === index) {
        box.appendChild(replacer(index));
      } else {
        box.appendChild(el('pre', m.text));
        if (d.flow_named && m.kind === 'TextMessage') {
          var open = el('button', 'Replace\u2026', 'replace-open');
          open.type = 'button';
          open.addEventListener('click', function () {
            state.editing = { index: index, value: m.text };
            drawDetail(state.detail, false);
          });
          who.appendChild(open);
        }
      }
      thread.appendChild(box);
    });
    var grew = !previous || fresh || d.steps.length !== previous.steps.length;
    var index = state.step;
    if (grew && ($('follow').checked || !index)) { index = d.steps.length; }
    showStep(index || 1);
    window.studio.rendered = Date.now();
    window.studio.lastCheckpoint = run.checkpoints;
    window.studio.steps = d.steps.length;
    if (window.studio.log.length < 10000) {
      window.studio.log.push({ run: run.run_id, steps: d.steps.length, at: Date.now() });
    }
  }
  function loadDetail(fresh) {
    var id = state.runId;
    return api('GET', '/api/runs/' + encodeURIComponent(id)).then(function (d) {
      if (state.runId === id) { drawDetail(d, fresh); }
    }).catch(function (e) { status(e.message, true); });
  }
  function showRun(id) {
    stopRun();
    state.runId = id; state.detail = null; state.step = 0;
    $('runs-view').hidden = true;
    $('run-view').hidden = false;
    $('action-result').textContent = '';
    $('delete').textContent = 'Delete';
    loadDetail(true).then(function () {
      if (state.runId !== id) { return; }
      var source = new EventSource('/api/runs/' + encodeURIComponent(id) + '/events');
      source.addEventListener('checkpoint', function (ev) {
        var info = JSON.parse(ev.data);
        if (!state.detail || info.last_checkpoint !== state.detail.run.checkpoints ||
            info.status !== state.detail.run.status) { loadDetail(false); }
      });
      source.addEventListener('deleted', function () { status('the run was deleted'); source.close(); });
      state.source = source;
    });
  }
  // Replacing a message of the thread (edit_run's `replace`: the message keeps its
  // source, the edit is audited), then going on with the run or not.
  function replacer(index) {
    var form = el('div', null, 'replacer');
    var area = el('textarea');
    area.rows = 3; area.cols = 60; area.value = state.editing.value;
    area.setAttribute('aria-label', 'the new text of message ' + index);
    area.addEventListener('input', function () { state.editing.value = area.value; });
    form.appendChild(area);
    function send(goOn) {
      var text = area.value;
      if (!text.trim()) { $('action-result').textContent = 'write the new text first'; return; }
      var body = { replace: {}, author: 'user', reason: 'replaced from the studio', continue: goOn };
      body.replace[String(index)] = text;
      act(api('POST', '/api/runs/' + encodeURIComponent(state.runId) + '/edit', body),
        function () { state.editing = null; loadDetail(false); });
    }
    [['Replace', false], ['Replace and continue', true]].forEach(function (pair) {
      var button = el('button', pair[0], pair[1] ? 'replace-continue' : 'replace-only');
      button.type = 'button';
      button.addEventListener('click', function () { send(pair[1]); });
      form.appendChild(button);
    });
    var cancel = el('button', 'Cancel', 'replace-cancel');
    cancel.type = 'button';
    cancel.addEventListener('click', function () { state.editing = null; drawDetail(state.detail, false); });
    form.appendChild(cancel);
    return form;
  }
  function act(promise, then) {
    $('action-result').textContent = '...';
    promise.then(function (r) {
      $('action-result').textContent = 'ok';
      if (then) { then(r); }
    }).catch(function (e) { $('action-result').textContent = e.message; });
  }

  // --- wiring ---------------------------------------------------------------------------
  function route() {
    var match = /^#\/run\/(.+)$/.exec(location.hash);
    status('');
    if (match) { showRun(decodeURIComponent(match[1])); } else { showRuns(); }
  }
  $('filters').addEventListener('submit', function (ev) {
    ev.preventDefault(); state.cursors = [null]; state.page = 0; loadRuns();
  });
  $('filter-search').addEventListener('input', drawRuns);
  $('next-page').addEventListener('click', function () {
    if (!state.nextCursor) { return; }
    state.cursors = state.cursors.slice(0, state.page + 1).concat([state.nextCursor]);
    state.page += 1; loadRuns();
  });
  $('first-page').addEventListener('click', function () { state.cursors = [null]; state.page = 0; loadRuns(); });
  $('slider').addEventListener('input', function () {
    $('follow').checked = false; showStep(parseInt($('slider').value, 10));
  });
  $('prev').addEventListener('click', function () { $('follow').checked = false; showStep(state.step - 1); });
  $('next').addEventListener('click', function () { showStep(state.step + 1); });
  $('resume').addEventListener('click', function () {
    var task = $('resume-task').value;
    act(api('POST', '/api/runs/' + encodeURIComponent(state.runId) + '/resume', { task: task || null }));
  });
  $('edit').addEventListener('click', function () {
    var text = $('edit-text').value;
    if (!text.trim()) { $('action-result').textContent = 'write the message first'; return; }
    act(api('POST', '/api/runs/' + encodeURIComponent(state.runId) + '/edit', {
      append: [text], author: 'user', reason: 'added from the studio', continue: true,
    }), function () { $('edit-text').value = ''; });
  });
  $('fork').addEventListener('click', function () {
    var d = state.detail;
    if (!d || !d.steps.length) { $('action-result').textContent = 'no step to fork at'; return; }
    var step = d.steps[state.step - 1];
    act(api('POST', '/api/runs/' + encodeURIComponent(step.run_id) + '/fork',
      { checkpoint_id: step.checkpoint_id }), function (r) {
      location.hash = '#/run/' + encodeURIComponent(r.run_id);
    });
  });
  $('delete').addEventListener('click', function () {
    var button = $('delete');
    if (button.textContent === 'Delete') { button.textContent = 'Really delete?'; return; }
    act(api('DELETE', '/api/runs/' + encodeURIComponent(state.runId)), function () {
      location.hash = '#/';
    });
  });
  window.addEventListener('hashchange', route);
  route();
})();
