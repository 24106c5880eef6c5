"""The run page: one self-contained HTML file that replays a run on the flow's drawing.

The page holds the SVG drawing (the path taken overlaid), a step slider, and for the
selected step its node (highlighted on the drawing, with the edges it fired), its
messages, tool calls, tokens and timing. Everything is inline (SVG, CSS, JavaScript,
data): it opens offline from disk, with no server and no CDN. ``#step=N`` in the URL
selects a step when the page opens.

The page is built from a list of [`PageStep`][flowlib.render.PageStep], so any source of
steps can feed it: a live run ([`steps_from_run`][flowlib.render.steps_from_run]), a
stored run, or an exploration's counterexample.
"""

from __future__ import annotations

import html
import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..graph import DiGraph, RunTrace
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from ._output import to_svg
from ._page_parts import PageCheckpoint, PageFork, PageRequest
from ._scene import SupportsGraph, graph_of

__all__ = [
    "PageMessage",
    "PageStep",
    "run_page",
    "steps_from_records",
    "steps_from_run",
    "trace_from_steps",
    "write_run_page",
]


@dataclass
class PageMessage:
    """A message or event shown under a step.

    Attributes:
        source: Who produced it.
        kind: Its type name (``TextMessage``, ``HandoffMessage``, ...).
        text: Its text.
    """

    source: str
    kind: str
    text: str


@dataclass
class PageStep:
    """One step of a run, as the page shows it.

    Attributes:
        node: The node that ran.
        edges: The ``(source, target)`` edges the step fired.
        messages: Its chat messages and events.
        tool_calls: One line per tool call (name, arguments, result).
        prompt_tokens: Prompt tokens its model calls used, when known.
        completion_tokens: Completion tokens, when known.
        seconds: How long the step took, when known.
        note: A line to show under the node (e.g. a router's choice).
    """

    node: str
    edges: list[tuple[str, str]] = field(default_factory=list)
    messages: list[PageMessage] = field(default_factory=list)
    tool_calls: list[str] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float | None = None
    note: str | None = None


Item = BaseAgentEvent | BaseChatMessage


def _add_item(step: PageStep, item: Item) -> None:
    """Show ``item`` under ``step``: its text, its tool calls, its tokens."""
    if isinstance(item, ToolCallRequestEvent):
        step.tool_calls.extend(f"{c.name}({c.arguments})" for c in item.content)
    elif isinstance(item, ToolCallExecutionEvent):
        step.tool_calls.extend(f"{r.name} -> {r.content}" for r in item.content)
    step.messages.append(PageMessage(item.source, type(item).__name__, item.to_text()))
    usage = item.models_usage
    if usage is not None:
        step.prompt_tokens = (step.prompt_tokens or 0) + usage.prompt_tokens
        step.completion_tokens = (step.completion_tokens or 0) + usage.completion_tokens


def steps_from_run(
    trace: RunTrace,
    items: Sequence[Item],
    *,
    arrivals: Sequence[float] | None = None,
) -> list[PageStep]:
    """Turn a run's trace and its streamed items into page steps.

    Each chat message of a node closes that node's next open step; events (tool calls)
    before it belong to the same step. Items from sources that are not nodes (inside a
    nested team) go to the step that ran last. A step's time is the time from the
    previous step's last item to its own last item, when ``arrivals`` (seconds, one per
    item) are given.

    Args:
        trace: The run's [`RunTrace`][flowlib.graph.RunTrace].
        items: The messages and events of the run, in stream order (task first).
        arrivals: When each item arrived, in seconds from any origin.
    """
    steps = [PageStep(node=name) for name in trace.steps]
    for fired_step, source, target in trace.fired_edges:
        if 0 <= fired_step < len(steps):
            steps[fired_step].edges.append((source, target))
    pending: dict[str, list[int]] = {}
    for position, name in enumerate(trace.steps):
        pending.setdefault(name, []).append(position)
    for step, count in trace.instance_counts().items():
        if 0 <= step < len(steps):
            steps[step].note = f"{count} instance{'s' if count != 1 else ''} (map)"
    current = -1
    finished: list[float | None] = [None] * len(steps)
    maps: dict[str, int] = {}  # a map target's step, while its instances publish
    for position, item in enumerate(items):
        node = _node_of(item.source)
        queue = pending.get(node)
        if node != item.source:  # a map instance: its map's step, whatever ran between
            if queue and node not in maps:
                maps[node] = queue.pop(0)
            if node in maps:
                current = maps[node]
                _add_item(steps[current], item)
                if arrivals is not None:
                    finished[current] = arrivals[position]
                continue
        elif node in maps:
            del maps[node]  # the target runs again: a new step
        if queue:
            current = queue[0]
        elif current < 0:
            continue  # the task, before any step
        _add_item(steps[current], item)
        if arrivals is not None:
            finished[current] = arrivals[position]
        if queue and isinstance(item, BaseChatMessage):
            queue.pop(0)
    if arrivals is not None and arrivals:
        previous = arrivals[0]
        for position, end in enumerate(finished):
            if end is not None:
                steps[position].seconds = max(0.0, end - previous)
                previous = end
    return steps


def _node_of(source: str) -> str:
    """The node a source names: a map instance ``target[i]`` belongs to ``target``."""
    if source.endswith("]") and "[" in source:
        return source[: source.rindex("[")]
    return source


def steps_from_records(obj: DiGraph | SupportsGraph, records: Sequence[Any]) -> list[PageStep]:
    """Page steps of a stored run: one per ``turn`` record of a checkpoint store.

    A record holds the messages its turn published and when it was written, so each
    step gets its messages, tokens and the time since the previous record. Records do
    not store which edges fired: they are recomputed from the graph's conditions on the
    turn's last message (a router's edge from the node that ran next).

    Args:
        obj: The team or graph the run was stored for.
        records: The run's [`CheckpointRecord`][flowlib.checkpoint.CheckpointRecord]s, in
            order (``await store.records(run_id)``).
    """
    from ..messages import MessageFactory

    graph = graph_of(obj)
    factory = MessageFactory()
    steps: list[PageStep] = []
    previous: float | None = None
    maps: dict[str, PageStep] = {}  # a map target's step, while its instances record
    for record in records:
        # A map instance's own checkpoint names `target[i]`: its output joins the step of
        # its map, which the target's own turn record (the map's end) closes.
        target = _node_of(record.node) if record.kind == "turn" and record.node else ""
        if target in graph.nodes:
            items = [factory.create(data) for data in record.messages]
            step = maps.get(target) if target != record.node or target in maps else None
            if step is None:
                step = PageStep(node=target)
                if previous is not None:
                    step.seconds = max(0.0, record.created_at - previous)
                steps.append(step)
            elif previous is not None:
                step.seconds = (step.seconds or 0.0) + max(0.0, record.created_at - previous)
            if target != record.node:
                maps[target] = step
            else:
                maps.pop(target, None)
            for item in items:
                _add_item(step, item)
            instances = {m.source for m in step.messages if m.source != target}
            instances = {name for name in instances if _node_of(name) == target}
            if instances:
                count = len(instances)
                step.note = f"{count} instance{'s' if count != 1 else ''} (map)"
            final = next((m for m in reversed(items) if isinstance(m, BaseChatMessage)), None)
            for edge in graph.nodes[target].edges:
                fired = final is not None and edge.check_condition(final)
                if fired and (target, edge.target) not in step.edges:
                    step.edges.append((target, edge.target))
        previous = record.created_at
    for step, following in itertools.pairwise(steps):
        node = graph.nodes[step.node]
        if node.kind == "router" and any(e.target == following.node for e in node.edges):
            step.edges = [(step.node, following.node)]
    return steps


def trace_from_steps(obj: DiGraph | SupportsGraph, steps: Sequence[PageStep]) -> RunTrace:
    """A [`RunTrace`][flowlib.graph.RunTrace] of ``steps``, to overlay on the drawing."""
    graph = graph_of(obj)
    names = list(graph.nodes)
    ends = [(source, edge.target) for source, edge in graph.iter_edges()]
    index = {name: i for i, name in enumerate(names)}
    trace = RunTrace(names=names, edge_ends=ends)
    for position, step in enumerate(steps):
        trace.step_nodes.append(index[step.node])
        for pair in step.edges:
            if pair in ends:
                trace.fired.append((position, ends.index(pair)))
    return trace


_CSS = """
body{font:14px system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:10px 16px;background:#fff;border-bottom:1px solid #ddd}
header h1{font-size:17px;margin:0 0 4px}
#main{display:flex;gap:12px;padding:12px;align-items:flex-start}
#drawing{flex:3;background:#fff;border:1px solid #ddd;overflow:auto;padding:6px}
#drawing svg{max-width:100%;height:auto}
#side{flex:2;min-width:280px;background:#fff;border:1px solid #ddd;padding:10px}
#controls{display:flex;align-items:center;gap:8px;margin-bottom:8px}
#slider{flex:1}
.msg{border-left:3px solid #4a78c2;padding:4px 8px;margin:6px 0;background:#f4f7fc}
.msg .who{font-size:12px;color:#555}
.msg pre{white-space:pre-wrap;margin:2px 0 0;font:13px ui-monospace,monospace}
dl{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:6px 0}
dt{color:#555}
g.node.current polygon,g.node.current ellipse,g.node.current path,
g.cluster.current polygon,g.cluster.current path{stroke:#d62728!important;stroke-width:4px}
g.node.current text{font-weight:bold}
g.edge.current path{stroke:#d62728!important;stroke-width:3.5px}
g.edge.current polygon{stroke:#d62728!important;fill:#d62728!important}
g.node.past polygon,g.node.past ellipse{stroke-width:2.5px}
g.node.flagged polygon,g.node.flagged ellipse,g.node.flagged path{stroke:#d62728!important;
stroke-dasharray:6 3;stroke-width:3px}
.box{background:#fff;border:1px solid #ddd;margin:0 12px 12px;padding:8px 12px}
.box h2{font-size:15px;margin:2px 0 6px}
table{border-collapse:collapse;font-size:13px}
td,th{border-bottom:1px solid #eee;padding:2px 8px;text-align:left;vertical-align:top}
#timeline tr.step{cursor:pointer}
#timeline tr.current{background:#fde8e8}
.request{border-left:3px solid #d68a00;padding:4px 8px;margin:6px 0;background:#fff8ec}
.request code{font-size:12px}
.diff{padding:2px 8px;margin:2px 0;font:13px ui-monospace,monospace;white-space:pre-wrap}
.diff.parent{background:#fde8e8}
.diff.fork{background:#e6f4e6}
.diff.same{background:#f4f4f4}
"""

STEP_VIEW_JS = (resources.files("flowlib.render") / "assets" / "step_view.js").read_text("utf-8")
"""The step view (node and edge marks, facts, tool calls, messages) of the run page,
which the studio serves too."""
STEP_PANEL_HTML = """<dl id="facts"></dl>
<div id="tools-box"><h4>Tool calls</h4><ul id="tools"></ul></div>
<h4>Messages</h4>
<div id="messages"></div>
"""
"""The elements the step view fills (the studio's page holds them too)."""
_STEP_VIEW_JS = STEP_VIEW_JS.replace("</", "<\\/")  # inlined: nothing may end the element

_JS = """
(function(){
  var data = JSON.parse(document.getElementById('run-data').textContent);
  var steps = data.steps;
  var slider = document.getElementById('slider');
  var svg = document.querySelector('#drawing svg');
  var view = flowlibStepView;
  var text = view.el;
  function show(index){
    index = Math.max(1, Math.min(steps.length, index));
    slider.value = String(index);
    var step = steps[index - 1];
    view.show(steps, index, [], step.note ? [['note', step.note]] : []);
    document.getElementById('step-label').textContent = 'Step ' + index + ' of ' + steps.length;
    document.getElementById('step-node').textContent = step.node;
    document.querySelectorAll('#timeline tr').forEach(function(row){
      row.classList.toggle('current', row.getAttribute('data-step') === String(index));
    });
  }
  (data.flagged || []).forEach(function(name){
    view.nodeGroups(svg, name).forEach(function(g){ g.classList.add('flagged'); });
  });
  slider.addEventListener('input', function(){ show(parseInt(slider.value, 10)); });
  function move(by){ show(parseInt(slider.value, 10) + by); }
  document.getElementById('prev').addEventListener('click', function(){ move(-1); });
  document.getElementById('next').addEventListener('click', function(){ move(1); });
  document.addEventListener('keydown', function(ev){
    if (ev.key === 'ArrowLeft') { show(parseInt(slider.value, 10) - 1); }
    if (ev.key === 'ArrowRight') { show(parseInt(slider.value, 10) + 1); }
  });
  function cell(row, value){ row.appendChild(text('td', value)); }
  var timeline = document.getElementById('timeline');
  if (timeline) {
    var first = data.checkpoints.length ? data.checkpoints[0].created_at : 0;
    data.checkpoints.forEach(function(c){
      var row = document.createElement('tr');
      row.setAttribute('data-checkpoint', String(c.checkpoint_id));
      if (c.step !== null) {
        row.className = 'step';
        row.setAttribute('data-step', String(c.step));
        row.addEventListener('click', function(){ show(c.step); });
      }
      cell(row, c.checkpoint_id); cell(row, c.kind); cell(row, c.turn); cell(row, c.node);
      cell(row, '+' + (c.created_at - first).toFixed(3) + ' s');
      cell(row, c.message_count); cell(row, c.step); cell(row, c.stop_reason);
      timeline.appendChild(row);
    });
  }
  var pending = document.getElementById('pending');
  if (pending) {
    data.pending.forEach(function(r){
      var box = text('div', '', 'request');
      box.setAttribute('data-request', r.request_id);
      var head = text('div', '');
      head.appendChild(text('code', r.request_id));
      head.appendChild(document.createTextNode(' \u00b7 asks ' + r.asked +
        (r.by ? ' \u00b7 by ' + r.by : '')));
      box.appendChild(head);
      box.appendChild(text('pre', r.question));
      pending.appendChild(box);
    });
  }
  var diff = document.getElementById('diff');
  if (diff && data.fork) {
    var sign = {parent: '- ', fork: '+ ', same: '  '};
    data.fork.lines.forEach(function(l){
      var line = text('div', sign[l.op] + l.source + ' \u00b7 ' + l.kind + ': ' + l.text,
        'diff ' + l.op);
      line.setAttribute('data-op', l.op);
      diff.appendChild(line);
    });
  }
  var match = /step=(\\d+)/.exec(window.location.hash);
  if (steps.length) { show(match ? parseInt(match[1], 10) : 1); }
})();
"""


def _inline_svg(svg: str) -> str:
    """The ``<svg>`` element alone (no XML prolog or DOCTYPE), for inlining in HTML."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def _script_json(value: Any) -> str:
    # Inside <script>, "</" would end the element: escape it (and HTML-sensitive chars).
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def run_page(
    obj: DiGraph | SupportsGraph,
    steps: Sequence[PageStep],
    *,
    trace: RunTrace | None = None,
    title: str | None = None,
    stop_reason: str | None = None,
    svg: str | None = None,
    flagged: Sequence[str] = (),
    checkpoints: Sequence[PageCheckpoint] = (),
    pending: Sequence[PageRequest] = (),
    fork: PageFork | None = None,
    status: str | None = None,
) -> str:
    """Build the self-contained HTML run page.

    Args:
        obj: The team or graph that ran (drawn with Graphviz).
        steps: The steps to replay, in order.
        trace: The run's trace, overlaid on the drawing (path taken, step numbers).
        title: The page heading; defaults to the team's name.
        stop_reason: Why the run stopped, shown under the heading.
        svg: A drawing to use instead of drawing ``obj`` (an ``<svg>`` document).
        flagged: Nodes to mark on the drawing throughout (e.g. the nodes a finding of
            [`explore`][flowlib.testing.explore] is about).
        checkpoints: A stored run's checkpoint timeline (a table; a row with a step
            selects it).
        pending: The human requests the run waits for, by id.
        fork: For a fork, its diff against its parent from the fork point.
        status: The stored run's status, shown under the heading.

    Returns:
        The HTML document.

    Raises:
        GraphvizNotFoundError: If ``svg`` is not given and Graphviz is not installed.
    """
    graph = graph_of(obj)
    drawing = _inline_svg(svg if svg is not None else to_svg(obj, trace=trace))
    known = set(graph.nodes)
    unknown = [step.node for step in steps if step.node not in known]
    if unknown:
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(
            f"Steps name {', '.join(f'`{n}`' for n in dict.fromkeys(unknown))}, which the "
            "flow's graph does not have; pass the steps of this flow's own run.",
            argument="steps",
        )
    heading = title or str(getattr(obj, "name", None) or "Run")
    data = {
        "steps": [asdict(step) for step in steps],
        "stop_reason": stop_reason,
        "flagged": list(flagged),
        "checkpoints": [asdict(c) for c in checkpoints],
        "pending": [asdict(r) for r in pending],
        "fork": None if fork is None else asdict(fork),
    }
    last = max(len(steps), 1)
    reason = f"<p>Stopped: {html.escape(stop_reason)}</p>" if stop_reason else ""
    if status is not None:
        reason = f'<p id="status">Status: {html.escape(status)}</p>' + reason
    extra = ""
    if pending:
        extra += (
            '<section class="box" id="pending-box"><h2>Waiting for a person '
            f"({len(pending)})</h2>"
            "<p>Answer by the request id: <code>team.answer(run_id, request_id, reply)</code> "
            'or the studio\'s answer box.</p><div id="pending"></div></section>\n'
        )
    if fork is not None:
        extra += (
            '<section class="box" id="fork-box"><h2>Forked from run '
            f"<code>{html.escape(fork.parent_id)}</code> at checkpoint "
            f"{fork.checkpoint_id}</h2><p>{fork.shared} messages shared up to the fork "
            "point; after it, <code>-</code> only the parent, <code>+</code> only this "
            "fork (parent now: "
            f"{html.escape(fork.parent_status or 'deleted')}).</p>"
            '<div id="diff"></div></section>\n'
        )
    if checkpoints:
        extra += (
            '<section class="box" id="timeline-box"><h2>Checkpoints</h2><table>'
            "<thead><tr><th>id</th><th>kind</th><th>turn</th><th>node</th><th>time</th>"
            "<th>messages</th><th>step</th><th>stop reason</th></tr></thead>"
            '<tbody id="timeline"></tbody></table></section>\n'
        )
    label = "Step 1" if steps else "No steps"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(heading)} - run</title>
<style>{_CSS}</style>
</head>
<body data-step="0" data-node="">
<header><h1>{html.escape(heading)}</h1>{reason}</header>
<div id="main">
<div id="drawing">{drawing}</div>
<div id="side">
<div id="controls">
<button id="prev" type="button" aria-label="previous step">&#9664;</button>
<input id="slider" type="range" min="1" max="{last}" value="1" aria-label="step">
<button id="next" type="button" aria-label="next step">&#9654;</button>
</div>
<h2 id="step-label">{label}</h2>
<h3 id="step-node"></h3>
{STEP_PANEL_HTML}</div>
</div>
{extra}<script type="application/json" id="run-data">{_script_json(data)}</script>
<script>{_STEP_VIEW_JS}{_JS}</script>
</body>
</html>
"""


def write_run_page(
    obj: DiGraph | SupportsGraph,
    path: str | os.PathLike[str],
    steps: Sequence[PageStep],
    *,
    trace: RunTrace | None = None,
    title: str | None = None,
    stop_reason: str | None = None,
    flagged: Sequence[str] = (),
) -> Path:
    """Write [`run_page`][flowlib.render.run_page] to ``path`` and return it.

    Examples:
        ```python
        result = await team.run(task="Write a haiku.")
        steps = steps_from_run(team.trace, result.messages)
        write_run_page(team, "run.html", steps, trace=team.trace)
        ```
    """
    target = Path(path)
    page = run_page(obj, steps, trace=trace, title=title, stop_reason=stop_reason, flagged=flagged)
    target.write_text(page, encoding="utf-8")
    return target
