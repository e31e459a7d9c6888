"""Spec §2.2: every step reachable, the last step ends, and `next` and `on_timeout` never loop."""

from collections.abc import Iterator

from processes.spec import JOIN, PARALLEL_KIND
from processes.validation.context import Context, Edge, route_target, single_kind, step_name, step_place


def check_graph(ctx: Context) -> None:
    """Check reachability, the last step, and that next and on_timeout never loop."""
    steps = ctx.steps
    edges = [edges_from(ctx, index) for index in range(len(steps))]

    reached = {0}
    pending = [0]
    while pending:
        for edge in edges[pending.pop()]:
            if edge.target is not None and edge.target not in reached:
                reached.add(edge.target)
                pending.append(edge.target)
    for index, step in enumerate(steps):
        if isinstance(step, dict) and index not in reached:
            ctx.add(step_place(index, step), "is not reachable from the first step")

    last = len(steps) - 1
    if isinstance(steps[last], dict) and "next" not in steps[last]:
        kind = single_kind(steps[last])
        if kind is not None and kind != "finish":
            ctx.add(step_place(last, steps[last]), "is the last step and not a finish, so it must name next")

    # Only on_reject goes back; parallel-1 §2 also exempts parallel and join edges.
    forward = [
        [edge for edge in step_edges if edge.key in ("next", "default", "on_timeout")] for step_edges in edges
    ]
    for edge in loop_edges(forward):
        target = step_name(ctx.steps, edge.target)
        if edge.key == "default":
            ctx.add(
                edge.place,
                f"continuing to the following step {target} makes a loop; only on_reject may go back",
            )
        else:
            ctx.add(edge.place, f"going to {target} makes a loop; only on_reject may go back")


def loop_edges(forward: list[list[Edge]]) -> Iterator[Edge]:
    """Yield each edge that closes a loop, found by an iterative depth-first search."""
    state = [0] * len(forward)  # 0 unseen, 1 on the current path, 2 finished
    for start in range(len(forward)):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(forward[start]))]
        while stack:
            node, remaining = stack[-1]
            edge = next(remaining, None)
            if edge is None:
                state[node] = 2
                stack.pop()
            elif edge.target is None:
                continue
            elif state[edge.target] == 1:
                yield edge
            elif state[edge.target] == 0:
                state[edge.target] = 1
                stack.append((edge.target, iter(forward[edge.target])))


def edges_from(ctx: Context, index: int) -> list[Edge]:
    """List every move out of a step, including the default move to the following step."""
    step = ctx.steps[index]
    place = step_place(index, step)
    if not isinstance(step, dict):
        return [Edge(index + 1, place, "default")] if index + 1 < len(ctx.steps) else []
    kind = single_kind(step)
    if kind == "finish":
        return []
    edges = written_edges(ctx, place, step)
    if not has_valid_next(step) and index + 1 < len(ctx.steps):
        edges.append(Edge(index + 1, place, "default"))
    if kind == PARALLEL_KIND and isinstance(step[PARALLEL_KIND], list):
        for position, entry in enumerate(step[PARALLEL_KIND]):
            if isinstance(entry, str) and entry in ctx.ids:
                edges.append(Edge(ctx.ids[entry], f"{place}.parallel[{position}]", "parallel"))
    return edges


def written_edges(ctx: Context, place: str, step: dict) -> list[Edge]:
    """List the moves a step writes out in next, on_timeout and on_reject, resolved to step indexes."""
    edges: list[Edge] = []
    nxt = step.get("next")
    if isinstance(nxt, str):
        edges.extend(edge_to(ctx, nxt, f"{place}.next", "next"))
    elif isinstance(nxt, list):
        for position, route in enumerate(nxt):
            edges.extend(edge_to(ctx, route_target(route), f"{place}.next[{position}]", "next"))
    for key in ("on_timeout", "on_reject"):
        edges.extend(edge_to(ctx, step.get(key), f"{place}.{key}", key))
    return edges


def edge_to(ctx: Context, target: object, place: str, key: str) -> list[Edge]:
    """Resolve one written reference to an edge, or to nothing when it names no step."""
    if not isinstance(target, str):
        return []
    if target == JOIN and ctx.join_is_word and key != "on_reject":
        return [Edge(None, place, key)]
    if target in ctx.ids:
        return [Edge(ctx.ids[target], place, key)]
    return []


def has_valid_next(step: dict) -> bool:
    """Say whether next is written in a form that replaces the default following step."""
    return isinstance(step.get("next"), str | list)
