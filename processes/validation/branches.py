"""parallel-1: every branch ends at `join` and no route leaves a branch or enters one from outside."""

from processes.spec import PARALLEL_KIND
from processes.validation.context import Context, Edge, and_list, single_kind, step_name, step_place
from processes.validation.graph import edges_from, has_valid_next


def check_branches(ctx: Context) -> None:
    """Enforce the parallel-1 publication rules on every branch."""
    steps = ctx.steps
    edges = [edges_from(ctx, index) for index in range(len(steps))]
    parallels = {
        i for i, step in enumerate(steps) if isinstance(step, dict) and single_kind(step) == PARALLEL_KIND
    }
    branches_of: dict[int, list[tuple[int, int]]] = {}  # step -> (parallel step, entry) of its branches
    brought_by: dict[int, str] = {}  # step -> the place of the edge that first brought it into a branch

    for parallel in sorted(parallels):
        for edge in edges[parallel]:
            if edge.key != "parallel" or edge.target == parallel:
                continue
            walk_branch(ctx, edges, parallel, edge, parallels, branches_of, brought_by)

    in_branch = set(branches_of)
    for index, branches in branches_of.items():
        if len(branches) > 1:
            names = [step_name(steps, entry) for _, entry in branches]
            if len(set(names)) < len(names):
                names = [
                    f"{name} of {step_name(steps, fork)}"
                    for name, (fork, _) in zip(names, branches, strict=True)
                ]
            ctx.add(step_place(index, steps[index]), f"is in more than one branch (from {and_list(names)})")

    for index in range(len(steps)):
        for edge in edges[index]:
            if edge.key == "parallel":
                continue
            if index not in in_branch:
                check_edge_from_outside(ctx, edge, in_branch, brought_by)
            elif (
                edge.key == "on_reject"
                and edge.target is not None
                and not set(branches_of.get(edge.target, ())) & set(branches_of[index])
            ):
                ctx.add(edge.place, "inside a branch, on_reject must return to a step in the same branch")


def walk_branch(
    ctx: Context,
    edges: list[list[Edge]],
    parallel: int,
    entry_edge: Edge,
    parallels: set[int],
    branches_of: dict[int, list[tuple[int, int]]],
    brought_by: dict[int, str],
) -> None:
    """Follow one branch from its entry along next and on_timeout, checking each step on the way."""
    steps = ctx.steps
    entry = entry_edge.target
    assert entry is not None
    if not branch_target_ok(ctx, entry_edge, parallel, parallels):
        return
    members = [entry]
    seen = {entry}
    brought_by.setdefault(entry, entry_edge.place)
    reaches_join: set[int] = set()
    comes_from: dict[int, list[int]] = {}
    for member in members:
        branches_of.setdefault(member, [])
        if (parallel, entry) not in branches_of[member]:
            branches_of[member].append((parallel, entry))
        step = steps[member]
        if not has_valid_next(step):
            ctx.add(
                step_place(member, step),
                "is in a branch, so it must name next: a step of the branch or join",
            )
            reaches_join.add(member)  # already reported; do not also say it never reaches join
        for edge in edges[member]:
            if edge.key not in ("next", "on_timeout"):
                continue
            if edge.target is None:
                reaches_join.add(member)
            elif branch_target_ok(ctx, edge, parallel, parallels):
                comes_from.setdefault(edge.target, []).append(member)
                if edge.target not in seen:
                    seen.add(edge.target)
                    brought_by.setdefault(edge.target, edge.place)
                    members.append(edge.target)
    pending = list(reaches_join)
    while pending:
        for source in comes_from.get(pending.pop(), ()):
            if source not in reaches_join:
                reaches_join.add(source)
                pending.append(source)
    for member in members:
        if member not in reaches_join:
            ctx.add(
                step_place(member, steps[member]),
                "never reaches join; every step in a branch must lead to join",
            )


def branch_target_ok(ctx: Context, edge: Edge, parallel: int, parallels: set[int]) -> bool:
    """Refuse a branch that goes to a parallel step or a finish."""
    target = edge.target
    assert target is not None
    step = ctx.steps[target]
    name = step_name(ctx.steps, target)
    if target == parallel:
        ctx.add(edge.place, f"a branch cannot go back to its parallel step {name}")
    elif target in parallels:
        ctx.add(edge.place, f"a branch cannot contain the parallel step {name}; parallel-1 does not nest")
    elif isinstance(step, dict) and single_kind(step) == "finish":
        ctx.add(edge.place, f"a branch cannot contain the finish {name}; end the branch with join")
    else:
        return True
    return False


def check_edge_from_outside(
    ctx: Context, edge: Edge, in_branch: set[int], brought_by: dict[int, str]
) -> None:
    """Refuse join outside a branch, and any move from outside into a branch step."""
    if edge.target is None:
        ctx.add(edge.place, "join is allowed only inside a branch")
        return
    if edge.target not in in_branch:
        return
    name = step_name(ctx.steps, edge.target)
    if edge.key == "on_reject":
        ctx.add(
            edge.place, f"cannot return into the branch step {name}; return to the parallel step or before it"
        )
    elif edge.key == "default":
        ctx.add(edge.place, f"continues by default into the branch step {name}; name next")
    else:
        ctx.add(
            edge.place,
            f"goes into the branch step {name} (in the branch through {brought_by[edge.target]}); "
            "only the parallel step starts a branch",
        )
