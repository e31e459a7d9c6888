"""check-1: a step's check and advisory questions (yes/no, choice, rubric) and their confidence."""

from processes import wording
from processes.spec import QUESTION_KEYS
from processes.validation.context import (
    Context,
    child,
    is_probability,
    is_text,
    list_issue,
    size_of,
    text_issue,
)


def check_check(ctx: Context, place: str, value: object) -> None:
    """Check a check: one yes/no question as a string, or a list of questions."""
    if isinstance(value, str):
        if not value.strip():
            ctx.add(place, "must not be blank")
        return
    if not isinstance(value, list):
        ctx.add(
            place, f"must be a yes/no question (a string) or a list of questions, not {wording.kind(value)}"
        )
        return
    if not value:
        ctx.add(place, "must hold at least one question")
    for index, question in enumerate(value):
        check_question(ctx, f"{place}[{index}]", question)


def check_question(ctx: Context, place: str, question: object) -> None:
    """Check one question of a check: yes/no, choice or rubric."""
    if not isinstance(question, dict):
        ctx.add(place, f"must be a mapping with ask, not {wording.kind(question)}")
        return
    for key in question:
        if isinstance(key, str) and key not in QUESTION_KEYS:
            ctx.add(child(place, key), "unknown field")
    if "ask" not in question:
        ctx.add(f"{place}.ask", "required")
    elif not is_text(question["ask"]):
        ctx.add(f"{place}.ask", text_issue(question["ask"], "the question, a non-empty string"))
    if "one_of" in question and "levels" in question:
        ctx.add(place, "has both one_of and levels; a question is yes/no, a choice or a rubric")
    elif "one_of" in question:
        check_choice(ctx, place, question)
    elif "levels" in question:
        check_rubric(ctx, place, question)
    else:
        check_yes_no(ctx, place, question)


def check_yes_no(ctx: Context, place: str, question: dict) -> None:
    """Check the thresholds of a yes/no question."""
    for key in ("pass", "fail"):
        if key in question and not is_probability(question[key]):
            ctx.add(
                f"{place}.{key}",
                f"must be a number from 0 to 1 on a yes/no question, not {wording.show(question[key])}",
            )
    passes, fails = question.get("pass"), question.get("fail")
    if is_probability(passes) and is_probability(fails) and fails >= passes:
        ctx.add(f"{place}.fail", f"must be below pass ({wording.show(passes)})")
    refuse_keys(ctx, place, question, "yes/no")


def check_choice(ctx: Context, place: str, question: dict) -> None:
    """Check a choice question: one_of answers, the answers that pass, and the unsure ones."""
    answers = question["one_of"]
    names: set[str] | None = None
    if not isinstance(answers, dict) or len(answers) < 2:
        if isinstance(answers, dict):
            ctx.add(f"{place}.one_of", "must have two or more answers")
        else:
            ctx.add(
                f"{place}.one_of",
                f"must map two or more answer names to descriptions, not {wording.kind(answers)}",
            )
    if isinstance(answers, dict):
        names = {name for name in answers if isinstance(name, str)}
        for name, description in answers.items():
            if isinstance(name, str) and not name.strip():
                ctx.add(f"{place}.one_of", "answer names must not be empty")
            elif isinstance(name, str) and not is_text(description):
                ctx.add(
                    child(f"{place}.one_of", name),
                    text_issue(description, "a description of the answer"),
                )
    if "pass" not in question:
        ctx.add(f"{place}.pass", "required on a choice question: the list of answer names that pass")
        passing: set[str] = set()
    else:
        passing = check_answer_names(ctx, f"{place}.pass", question["pass"], names, required=True)
    if "unsure" in question:
        unsure = check_answer_names(ctx, f"{place}.unsure", question["unsure"], names, required=False)
        for name in sorted(unsure & passing):
            ctx.add(f"{place}.unsure", f"{wording.show(name)} is also in pass")
    check_confidence(ctx, place, question)
    refuse_keys(ctx, place, question, "choice")


def check_answer_names(
    ctx: Context, place: str, value: object, names: set[str] | None, *, required: bool
) -> set[str]:
    """Check a list of answer names from one_of, returning the valid ones."""
    if not isinstance(value, list):
        ctx.add(place, f"must be a list of answer names from one_of, not {wording.show(value)}")
        return set()
    if required and not value:
        ctx.add(place, "must name at least one answer")
    found: set[str] = set()
    for index, name in enumerate(value):
        where = f"{place}[{index}]"
        if not isinstance(name, str) or (names is not None and name not in names):
            ctx.add(where, f"{wording.show(name)} is not an answer in one_of")
        elif name in found:
            ctx.add(where, f"{wording.show(name)} is listed more than once")
        else:
            found.add(name)
    return found


def check_rubric(ctx: Context, place: str, question: dict) -> None:
    """Check a rubric question: 2 to 10 levels and the level index that passes."""
    levels = question["levels"]
    count: int | None = None
    if not isinstance(levels, list) or not 2 <= len(levels) <= 10:
        ctx.add(
            f"{place}.levels",
            list_issue(
                levels,
                "a list of 2 to 10 level descriptions, worst first",
                f"has {size_of(levels)} levels; a rubric has 2 to 10",
            ),
        )
    else:
        count = len(levels)
        for index, level in enumerate(levels):
            if not is_text(level):
                ctx.add(f"{place}.levels[{index}]", text_issue(level, "a description of the level"))
    if "pass" not in question:
        ctx.add(
            f"{place}.pass", "required on a rubric question: the level, from 0, at or above which it passes"
        )
    else:
        level = question["pass"]
        if not isinstance(level, int) or isinstance(level, bool):
            ctx.add(f"{place}.pass", f"must be a level number (0, 1, …), not {wording.show(level)}")
        elif count is not None and not 0 <= level < count:
            ctx.add(f"{place}.pass", f"{wording.show(level)} is not a level; the levels are 0 to {count - 1}")
    check_confidence(ctx, place, question)
    refuse_keys(ctx, place, question, "rubric")


def check_confidence(ctx: Context, place: str, question: dict) -> None:
    """Check an optional confidence threshold."""
    if "confidence" in question and not is_probability(question["confidence"]):
        ctx.add(
            f"{place}.confidence", f"must be a number from 0 to 1, not {wording.show(question['confidence'])}"
        )


def refuse_keys(ctx: Context, place: str, question: dict, kind: str) -> None:
    """Refuse the question keys that belong to other question kinds."""
    if "fail" in question and kind != "yes/no":
        ctx.add(f"{place}.fail", "allowed only on yes/no questions (without one_of or levels)")
    if "unsure" in question and kind != "choice":
        ctx.add(f"{place}.unsure", "allowed only on choice questions (with one_of)")
    if "confidence" in question and kind == "yes/no":
        ctx.add(f"{place}.confidence", "allowed only on choice and rubric questions")
