// The step view that the run page (flowlib render) and the studio share: a step of a run
// marks its node and fired edges on the Graphviz drawing (and the nodes of the steps
// before it) and fills the side panel: its facts, tool calls and messages. Every text is
// inserted with textContent, never as markup.
var flowlibStepView = (function () {
  'use strict';
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function byTitle(svg, cls, title) {
    var found = [];
    svg.querySelectorAll('g.' + cls).forEach(function (g) {
      var t = g.querySelector('title');
      if (t && t.textContent === title) { found.push(g); }
    });
    return found;
  }
  // A node's groups: the node itself, or the cluster a nested team is drawn as.
  function nodeGroups(svg, name) {
    var found = byTitle(svg, 'node', name);
    return found.length ? found : byTitle(svg, 'cluster', 'cluster_' + name);
  }
  function unmark(svg) {
    svg.querySelectorAll('g.current, g.past, g.running').forEach(function (g) {
      g.classList.remove('current'); g.classList.remove('past'); g.classList.remove('running');
    });
  }
  // Show step ``index`` (1-based) of ``steps``; ``before`` and ``after`` are extra
  // [name, value] facts listed after the node and after the time.
  function show(steps, index, before, after) {
    var step = steps[index - 1];
    var svg = document.querySelector('#drawing svg');
    if (svg) {
      unmark(svg);
      for (var i = 0; i < index - 1; i++) {
        nodeGroups(svg, steps[i].node).forEach(function (g) { g.classList.add('past'); });
      }
      nodeGroups(svg, step.node).forEach(function (g) { g.classList.add('current'); });
      step.edges.forEach(function (e) {
        byTitle(svg, 'edge', e[0] + '->' + e[1]).forEach(function (g) { g.classList.add('current'); });
      });
    }
    var facts = document.getElementById('facts');
    facts.textContent = '';
    function fact(pair) { facts.appendChild(el('dt', pair[0])); facts.appendChild(el('dd', pair[1])); }
    fact(['node', step.node]);
    (before || []).forEach(fact);
    var fired = step.edges.map(function (e) { return e[0] + ' -> ' + e[1]; });
    fact(['fired', fired.length ? fired.join(', ') : 'none']);
    fact(['tokens', step.prompt_tokens === null ? 'n/a'
      : step.prompt_tokens + ' prompt + ' + step.completion_tokens + ' completion']);
    fact(['time', step.seconds === null ? 'n/a' : step.seconds.toFixed(3) + ' s']);
    (after || []).forEach(fact);
    var tools = document.getElementById('tools');
    tools.textContent = '';
    step.tool_calls.forEach(function (c) { tools.appendChild(el('li', c)); });
    document.getElementById('tools-box').style.display = step.tool_calls.length ? '' : 'none';
    var messages = document.getElementById('messages');
    messages.textContent = '';
    step.messages.forEach(function (m) {
      var box = el('div', null, 'msg');
      box.appendChild(el('div', m.source + ' \u00b7 ' + m.kind, 'who'));
      box.appendChild(el('pre', m.text));
      messages.appendChild(box);
    });
    document.body.setAttribute('data-step', String(index));
    document.body.setAttribute('data-node', step.node);
  }
  return { el: el, byTitle: byTitle, nodeGroups: nodeGroups, unmark: unmark, show: show };
})();
