"""Draw a process's step graph as an SVG map on the server; pure functions over the definition.

The layout is layered top to bottom (a phone scrolls down, not sideways): each step sits one layer
below the furthest step that leads to it, edges that skip layers pass through reserved gaps, and
`on_reject` edges loop back along a side, dashed. A `parallel` step forks into its branches and the
branches meet again at a join bar.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from html import escape
from itertools import pairwise

from .definition import JOIN, Definition
from .kinds import PERSON_KINDS, WAIT_KINDS, StepKind
from .wording import field_label, step_title

NODE_W = 188
NODE_H = 66
DUMMY_W = 28
JOIN_W = 140
JOIN_H = 10
GAP_X = 44
LAYER_GAP = 92
MARGIN = 24
LOOP_SPACE = 112

KIND_LABELS = {
    "agent": "Agent",
    "task": "Task",
    "approve": "Approval",
    "wait": "Wait",
    "wait_until": "Wait until",
    "wait_for": "Wait for event",
    "finish": "Finish",
    "parallel": "In parallel",
}
CURRENT_STATES = ("ready", "claimed", "waiting")


@dataclass
class _Node:
    id: str
    kind: str
    order: float
    width: int = NODE_W
    height: int = NODE_H
    layer: int = 0
    x: float = 0.0
    y: float = 0.0
    title: str = ""
    caption: str = ""
    detail: str = ""
    state: str | None = None
    overdue: bool = False
    figures: list[str] = field(default_factory=list)
    link: tuple[str, str] | None = None

    @property
    def cx(self) -> float:
        return self.x + self.width / 2


@dataclass
class _Edge:
    source: str
    target: str
    label: str | None = None
    style: str = "next"
    taken: bool = False
    points: list[tuple[float, float]] = field(default_factory=list)


def _caption(step) -> str:
    return KIND_LABELS.get(step.kind, step.kind)


def _detail(step) -> str:
    """Return the third line of a step's box: who does it, how long it waits, or how it ends."""
    if step.kind in PERSON_KINDS and step.person:
        if step.person == "initiator":
            return "the person who started it"
        return f"person in {step.person}" if "." in step.person else step.person
    if step.kind in WAIT_KINDS:
        return str(step.value)
    if step.kind == StepKind.FINISH:
        return f"outcome: {field_label(str(step.value)).lower()}"
    if step.kind == StepKind.PARALLEL:
        return f"{len(step.entries)} branches"
    return ""


def _join_id(parallel_id: str) -> str:
    return f"{JOIN}:{parallel_id}"


def _graph(definition: Definition) -> tuple[dict[str, _Node], list[_Edge]]:
    nodes: dict[str, _Node] = {}
    edges: list[_Edge] = []
    for step in definition.steps:
        nodes[step.id] = _Node(id=step.id, kind=step.kind, order=step.index, title=step_title(step.id),
                               caption=_caption(step), detail=_detail(step))

    def target(name: str, step) -> str:
        if name != JOIN:
            return name
        join = _join_id(step.branch)
        if join not in nodes:
            parallel = definition[step.branch]
            nodes[join] = _Node(id=join, kind="join", order=parallel.index + 0.5, width=JOIN_W, height=JOIN_H,
                                title="Join", caption="all branches finished")
        return join

    for step in definition.steps:
        if step.kind == StepKind.FINISH:
            continue
        if step.kind == StepKind.PARALLEL:
            edges.extend(_Edge(step.id, entry, style="fork") for entry in step.entries)
            continue
        if step.routes:
            edges.extend(_Edge(step.id, target(r["to"], step), r.get("when")) for r in step.routes)
        elif step.next:
            edges.append(_Edge(step.id, target(step.next, step)))
        if step.kind == StepKind.WAIT_FOR and step.timeout_seconds and step.on_timeout and step.on_timeout != step.next:
            edges.append(_Edge(step.id, target(step.on_timeout, step), "on timeout", style="timeout"))
        if step.on_reject:
            edges.append(_Edge(step.id, step.on_reject, "on reject", style="reject"))
    # A parallel step continues from its join bar once every branch has finished.
    for step in definition.steps:
        if step.kind == StepKind.PARALLEL and step.next:
            source = _join_id(step.id) if _join_id(step.id) in nodes else step.id
            edges.append(_Edge(source, step.next))
    return nodes, edges


def _layers(nodes: dict[str, _Node], edges: list[_Edge], first: str) -> None:
    """Give each node the length of the longest forward path to it from the first step."""
    forward = [e for e in edges if e.style != "reject"]
    successors: dict[str, list[str]] = defaultdict(list)
    indegree: dict[str, int] = dict.fromkeys(nodes, 0)
    for edge in forward:
        successors[edge.source].append(edge.target)
        indegree[edge.target] += 1
    layer = dict.fromkeys(nodes, 0)
    ready = [n for n, d in indegree.items() if d == 0]
    seen = set()
    while ready:
        current = ready.pop()
        seen.add(current)
        for nxt in successors[current]:
            layer[nxt] = max(layer[nxt], layer[current] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    # A definition that passed validation has no forward cycle; anything left is drawn below the rest.
    deepest = max(layer.values(), default=0)
    for name in nodes:
        nodes[name].layer = layer[name] if name in seen else deepest + 1
    nodes[first].layer = 0


def _place(nodes: dict[str, _Node], edges: list[_Edge]) -> tuple[float, float]:
    """Order each layer to limit crossings and set every node's position; return the canvas size."""
    forward = [e for e in edges if e.style != "reject"]
    # Edges that skip layers get a narrow placeholder in each layer they cross, so they never cut a step.
    for edge in forward:
        span = nodes[edge.target].layer - nodes[edge.source].layer
        chain = [edge.source]
        for offset in range(1, span):
            dummy = f"·{edge.source}>{edge.target}#{offset}"
            nodes[dummy] = _Node(id=dummy, kind="dummy", order=nodes[edge.source].order + offset / 100,
                                 width=DUMMY_W, height=0, layer=nodes[edge.source].layer + offset)
            chain.append(dummy)
        chain.append(edge.target)
        edge.points = chain  # node ids for now; turned into coordinates below
    by_layer: dict[int, list[_Node]] = defaultdict(list)
    for node in nodes.values():
        by_layer[node.layer].append(node)
    for layer in by_layer.values():
        layer.sort(key=lambda n: n.order)
    parents: dict[str, list[str]] = defaultdict(list)
    for edge in forward:
        for a, b in pairwise(edge.points):
            parents[b].append(a)
    position = {n.id: i for layer in by_layer.values() for i, n in enumerate(layer)}
    for _ in range(2):
        for index in sorted(by_layer)[1:]:
            layer = by_layer[index]

            def barycentre(node, position=position):
                ups = parents.get(node.id)
                return sum(position[p] for p in ups) / len(ups) if ups else position[node.id]

            layer.sort(key=lambda n: (barycentre(n), n.order))
            position.update({n.id: i for i, n in enumerate(layer)})
    widths = {i: sum(n.width for n in layer) + GAP_X * (len(layer) - 1) for i, layer in by_layer.items()}
    inner = max(widths.values(), default=NODE_W)
    loops = sum(1 for e in edges if e.style == "reject")
    side = LOOP_SPACE + 18 * max(loops - 1, 0) if loops else 0
    width = MARGIN * 2 + inner + side * 2
    y = MARGIN
    for index in sorted(by_layer):
        layer = by_layer[index]
        x = MARGIN + side + (inner - widths[index]) / 2
        tallest = max(n.height for n in layer) or JOIN_H
        for node in layer:
            node.x = x
            node.y = y + (tallest - node.height) / 2 if node.kind != "dummy" else y + tallest / 2
            x += node.width + GAP_X
        y += tallest + LAYER_GAP
    return width, y - LAYER_GAP + MARGIN


def _edge_path(nodes: dict[str, _Node], edge: _Edge) -> tuple[str, tuple[float, float]]:
    """Return the SVG path of a forward edge and where its label goes."""
    chain = [nodes[n] for n in edge.points]
    points = [(chain[0].cx, chain[0].y + chain[0].height)]
    for dummy in chain[1:-1]:
        points.append((dummy.cx, dummy.y))
    points.append((chain[-1].cx, chain[-1].y))
    path = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
    for (x1, y1), (x2, y2) in pairwise(points):
        mid = (y1 + y2) / 2
        path.append(f"C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}")
    # Labels sit on the first segment, nearer its end, so routes fanning out of one step stay apart.
    (x1, y1), (x2, y2) = points[0], points[1]
    t, mid = 0.62, (y1 + y2) / 2
    lx = x1 * ((1 - t) ** 3 + 3 * (1 - t) ** 2 * t) + x2 * (3 * (1 - t) * t**2 + t**3)
    ly = y1 * (1 - t) ** 3 + mid * (3 * (1 - t) ** 2 * t + 3 * (1 - t) * t**2) + y2 * t**3
    return " ".join(path), (lx, ly)


def _loop_path(nodes: dict[str, _Node], edge: _Edge, index: int, width: float) -> tuple[str, tuple[float, float], str]:
    """Return the path of an `on_reject` edge looping back along the freer side, and its label spot."""
    source, target = nodes[edge.source], nodes[edge.target]
    top, bottom = sorted((source.layer, target.layer))
    between = [n for n in nodes.values() if top <= n.layer <= bottom and n.kind != "dummy"]
    right_edge = max(n.x + n.width for n in between)
    left_edge = min(n.x for n in between)
    reach = 30 + 18 * index
    # Loop on the side where neither end has a neighbour in its own layer to cross.
    def beside(node, right):
        return sum(1 for n in nodes.values() if n.layer == node.layer and n.kind != "dummy" and n is not node
                   and (n.x > node.x if right else n.x < node.x))

    use_right = beside(source, True) + beside(target, True) <= beside(source, False) + beside(target, False)
    if use_right:
        sx, tx = source.x + source.width, target.x + target.width
        far = right_edge + reach
    else:
        sx, tx = source.x, target.x
        far = left_edge - reach
    sy, ty = source.y + source.height / 2, target.y + target.height / 2
    path = f"M{sx:.1f},{sy:.1f} C{far:.1f},{sy:.1f} {far:.1f},{ty:.1f} {tx:.1f},{ty:.1f}"
    apex = 0.75 * far + 0.125 * (sx + tx)
    return path, (apex + (5 if use_right else -5), (sy + ty) / 2), "start" if use_right else "end"


def _wrap(text: str, size: int, lines: int = 2) -> list[str]:
    words, out, current = text.split(), [], ""
    for word in words:
        candidate = f"{current} {word}".strip()
        if len(candidate) <= size:
            current = candidate
            continue
        if current:
            out.append(current)
        current = word if len(word) <= size else word[: size - 1] + "…"
        if len(out) == lines:
            break
    if current and len(out) < lines:
        out.append(current)
    if len(out) == lines and " ".join(out) != " ".join(words):
        last = out[-1]
        out[-1] = (last[: size - 1] if len(last) >= size else last) + "…"
    return out


def _status(node: _Node) -> tuple[str, str]:
    """Return the CSS class and the words for a step's state on the map."""
    if node.state in CURRENT_STATES and node.overdue:
        return "overdue", "Overdue"
    if node.state in CURRENT_STATES:
        return "current", {"ready": "Ready", "claimed": "In progress", "waiting": "Waiting"}[node.state]
    if node.state == "done":
        return "done", "Done"
    if node.state == "failed":
        return "failed", "Failed"
    if node.state == "cancelled":
        return "cancelled", "Cancelled"
    return "idle", "Not reached"


FIGURE_H = 17


def _figures_svg(node: _Node, text_x: float, anchor: str) -> str:
    """The figures a live map adds under a step's detail, one line each, below a thin rule."""
    top = node.y + NODE_H - 4
    rule = f'<line class="map-rule" x1="{node.x + 8:.1f}" y1="{top:.1f}" x2="{node.x + node.width - 8:.1f}" y2="{top:.1f}"/>'
    lines = "".join(
        f'<text class="map-figure" x="{text_x:.1f}" y="{top + 15 + i * FIGURE_H:.1f}"{anchor}>{escape(line)}</text>'
        for i, line in enumerate(node.figures)
    )
    return rule + lines


def _node_svg(node: _Node) -> str:
    css, words = _status(node)
    about = f"{node.caption}, {node.detail}" if node.detail else node.caption
    if node.figures:
        words = "; ".join(node.figures)
    label = escape(f"{node.title} ({about}): {words}")
    if node.kind == "join":
        return (
            f'<g class="map-join"><title>{label}</title>'
            f'<rect x="{node.x:.1f}" y="{node.y:.1f}" width="{node.width}" height="{node.height}" rx="5"/></g>'
        )
    shape_rx = NODE_H / 2 if node.kind == StepKind.FINISH else 10
    parts = [
        f'<g class="map-step kind-{escape(node.kind)} state-{css}" data-step="{escape(node.id)}">',
        f"<title>{label}</title>",
        f'<rect class="map-box" x="{node.x:.1f}" y="{node.y:.1f}" width="{node.width}" height="{node.height}" '
        f'rx="{shape_rx}"/>',
    ]
    if node.kind not in ("finish",):
        parts.append(
            f'<rect class="map-accent" x="{node.x + 1:.1f}" y="{node.y + 10:.1f}" width="4" '
            f'height="{node.height - 20}" rx="2"/>'
        )
    text_x = node.x + (node.width / 2 if node.kind == StepKind.FINISH else 16)
    anchor = ' text-anchor="middle"' if node.kind == StepKind.FINISH else ""
    title = node.title if len(node.title) <= 21 else node.title[:20] + "…"
    detail = node.detail if len(node.detail) <= 25 else node.detail[:24] + "…"
    parts.append(
        f'<text class="map-caption" x="{text_x:.1f}" y="{node.y + 19:.1f}"{anchor}>{escape(node.caption)}</text>'
        f'<text class="map-title" x="{text_x:.1f}" y="{node.y + 37:.1f}"{anchor}>{escape(title)}</text>'
    )
    if detail:
        parts.append(
            f'<text class="map-detail" x="{text_x:.1f}" y="{node.y + 54:.1f}"{anchor}>{escape(detail)}</text>'
        )
    if node.figures:
        parts.append(_figures_svg(node, text_x, anchor))
    if css != "idle":
        mark = {"done": "✓", "current": "●", "overdue": "!", "failed": "✕", "cancelled": "–"}[css]
        cx, cy = node.x + node.width - 16, node.y + 16
        parts.append(
            f'<g class="map-mark"><circle cx="{cx:.1f}" cy="{cy:.1f}" r="9"/>'
            f'<text x="{cx:.1f}" y="{cy + 4:.1f}" text-anchor="middle">{mark}</text></g>'
        )
    parts.append("</g>")
    if node.link is not None:
        href, action = node.link
        # A link over the drawn step, reached by Tab like any other and named for the figures it shows and
        # what it lists; it holds no text of its own, so its name and the words a reader sees never differ.
        name = f"{node.title}: {'; '.join(node.figures)}. {action}" if node.figures else f"{node.title}. {action}"
        parts.append(
            f'<a class="map-link" href="{escape(href)}" aria-label="{escape(name)}">'
            f'<rect class="map-hit" x="{node.x:.1f}" y="{node.y:.1f}" width="{node.width}" height="{node.height}" '
            f'rx="{shape_rx}"/></a>'
        )
    return "".join(parts)


LABEL_WRAP = 24
# A label character's width at most, in map units (11.5px text), with its halo: enough to keep it in view.
LABEL_CHAR_W = 7.0


def _label_extent(x: float, text: str, anchor: str, count: str | None = None) -> tuple[float, float]:
    """Return how far left and right a label reaches, from its anchor point and longest line."""
    lines = [*(_wrap(text, LABEL_WRAP) if text else []), *([count] if count else [])]
    reach = max((len(line) for line in lines), default=0) * LABEL_CHAR_W + 3
    if anchor == "start":
        return x, x + reach
    if anchor == "end":
        return x - reach, x
    return x - reach / 2, x + reach / 2


def _label_svg(x: float, y: float, text: str, css: str, anchor: str = "middle", count: str | None = None) -> str:
    """An edge's label, wrapped; a live map's count of passages goes on a line of its own below it."""
    lines = _wrap(text, LABEL_WRAP) if text else []
    spans = "".join(
        f'<tspan x="{x:.1f}" dy="{0 if i == 0 else 14}">{escape(line)}</tspan>' for i, line in enumerate(lines)
    )
    if count:
        spans += f'<tspan class="map-count {css}" x="{x:.1f}" dy="{14 if lines else 0}">{escape(count)}</tspan>'
    shown = len(lines) + (1 if count else 0)
    top = y - (shown - 1) * 7 + 4
    return f'<text class="map-label {css}" x="{x:.1f}" y="{top:.1f}" text-anchor="{anchor}">{spans}</text>'


def edge_key(source: str, target: str, style: str) -> tuple[str, str, str]:
    """How `passed` names an edge: its two ends, and `reject` for a loop back, else `forward`."""
    return source, target, "reject" if style == "reject" else "forward"


def process_map(
    definition: Definition,
    *,
    states: dict[str, dict] | None = None,
    taken: set[tuple[str, str]] | None = None,
    title: str = "Process map",
    figures: dict[str, list[str]] | None = None,
    passed: dict[tuple[str, str, str], str] | None = None,
    links: dict[str, tuple[str, str]] | None = None,
) -> str:
    """Return an SVG drawing of the definition; `states` maps a step id to its `state` and `overdue`.

    A live map also gives `figures` (lines of numbers under each step), `passed` (the words on an edge,
    by `edge_key`) and `links` (each step's link and its accessible name).
    """
    nodes, edges = _graph(definition)
    for step_id, info in (states or {}).items():
        if step_id in nodes:
            nodes[step_id].state = info.get("state")
            nodes[step_id].overdue = bool(info.get("overdue"))
    for step_id, lines in (figures or {}).items():
        if step_id in nodes and lines:
            nodes[step_id].figures = list(lines)
            nodes[step_id].height = NODE_H + 6 + FIGURE_H * len(lines)
    for step_id, link in (links or {}).items():
        if step_id in nodes:
            nodes[step_id].link = link
    for node in nodes.values():
        if node.kind == "join":
            parallel = nodes[node.id.split(":", 1)[1]]
            node.state = "done" if parallel.state == "done" else None
    _layers(nodes, edges, definition.first.id)
    width, height = _place(nodes, edges)
    taken = taken or set()
    for edge in edges:
        edge.taken = (edge.source, edge.target) in taken
    body: list[str] = []
    labels: list[str] = []
    # What the drawing spans from left to right: its steps, the bulge of each loop and each label.
    spans = [(n.x, n.x + n.width) for n in nodes.values() if n.kind != "dummy"]
    loop_index = 0
    for edge in edges:
        css = f"map-edge {edge.style}{' taken' if edge.taken else ''}"
        if edge.style == "reject":
            path, (lx, ly), anchor = _loop_path(nodes, edge, loop_index, width)
            loop_index += 1
            spans.append((lx - 8, lx + 8))
        else:
            path, (lx, ly) = _edge_path(nodes, edge)
            anchor = "middle"
        marker = "map-arrow-taken" if edge.taken else ("map-arrow-reject" if edge.style == "reject" else "map-arrow")
        count = (passed or {}).get(edge_key(edge.source, edge.target, edge.style))
        tip = escape(f"{step_title(edge.source.split(':')[-1])} → {step_title(edge.target.split(':')[-1])}"
                     + (f": {edge.label}" if edge.label else "") + (f" ({count})" if count else ""))
        body.append(f'<path class="{css}" d="{path}" marker-end="url(#{marker})"><title>{tip}</title></path>')
        if edge.label or count:
            labels.append(_label_svg(lx, ly, edge.label or "", edge.style, anchor, count))
            spans.append(_label_extent(lx, edge.label or "", anchor, count))
    steps_svg = [_node_svg(n) for n in nodes.values() if n.kind != "dummy"]
    current = [n.title for n in nodes.values() if n.state in CURRENT_STATES]
    description = f"{len(definition.steps)} steps." + (f" Now at: {', '.join(current)}." if current else "")
    defs = (
        "<defs>"
        + "".join(
            f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="{name}"/></marker>'
            for name in ("map-arrow", "map-arrow-taken", "map-arrow-reject")
        )
        + "</defs>"
    )
    # The view is cropped to the drawing, so on a narrow screen it scales down no more than it must.
    left = max(min(a for a, _ in spans) - MARGIN, 0)
    right = min(max(b for _, b in spans) + MARGIN, width)
    # A drawing with links in it is a group of them, not one image (whose parts no reader would reach).
    role = "group" if links else "img"
    return (
        f'<svg class="process-map" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="{left:.0f} 0 {right - left:.0f} {height:.0f}" '
        f'width="{right - left:.0f}" height="{height:.0f}" role="{role}" aria-labelledby="map-title map-desc">'
        f'<title id="map-title">{escape(title)}</title><desc id="map-desc">{escape(description)}</desc>'
        f"{defs}<g class=\"map-edges\">{''.join(body)}</g><g class=\"map-steps\">{''.join(steps_svg)}</g>"
        f"<g class=\"map-labels\">{''.join(labels)}</g></svg>"
    )
