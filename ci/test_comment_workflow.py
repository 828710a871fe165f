#!/usr/bin/env python3
"""Runs comment.yml's sticky-comment script for real, against a fake `gh`.

No GitHub here, so the script is taken out of the workflow file as it is and run by bash
with the environment the workflow gives it, over artifact directories laid out as gate.yml
uploads them. The fake `gh` answers GET requests by running the script's own `--jq`
filters (with the real jq) over canned API responses, and logs POST/PATCH calls. Each case
checks which call was made (create, update, none) and the comment body: the modes
always / on-change / never, updating the bot's existing comment in place, finding a fork's
PR by head SHA, and artifact or event text that tries to inject shell.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

from workflow_harness import Runner, report, step_script, write_program

MARKER = "<!-- stackbench-gate -->"
HEAD = "0123456789abcdef0123456789abcdef01234567"

FAKE_GH = r"""#!/usr/bin/env bash
# Fake gh: `api [-X METHOD] PATH [-f k=v] [-F body=@file] [--jq FILTER] [--paginate]`.
method=GET path="" filter="" body=""
args=("$@")
[[ "${args[0]}" == api ]] || { echo "fake gh: only api" >&2; exit 2; }
i=1
while [[ $i -lt ${#args[@]} ]]; do
    case "${args[$i]}" in
        -X) method="${args[$((i + 1))]}"; i=$((i + 1)) ;;
        --jq) filter="${args[$((i + 1))]}"; i=$((i + 1)) ;;
        -f) i=$((i + 1)) ;;
        -F) body="${args[$((i + 1))]#body=@}"; i=$((i + 1)) ;;
        --paginate) ;;
        *) path="${args[$i]}" ;;
    esac
    i=$((i + 1))
done
echo "$method $path" >> "$FAKE_LOG"
case "$method $path" in
    "GET repos/o/r/pulls") data="$FAKE_PULLS" ;;
    "GET repos/o/r/issues/"*/comments) data="$FAKE_COMMENTS" ;;
    POST* | PATCH*) cp "$body" "$FAKE_DIR/body.md"; echo '{}'; exit 0 ;;
    *) echo "fake gh: unexpected $method $path" >&2; exit 3 ;;
esac
if [[ -n "$filter" ]]; then jq -r "$filter" <<<"$data"; else echo "$data"; fi
"""


def sticky_script():
    return step_script("comment.yml", "comment", "Create or update the sticky comment")


def write_artifact(root, index, runner, mode, code, statuses, markdown=True):
    d = root / "gate" / f"stackbench-gate-{index}"
    (d / "comparison").mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"runner": runner, "comment_mode": mode}))
    (d / "comparison/exit-code").write_text(f"{code}\n")
    rows = [{"id": f"b{i}", "status": s} for i, s in enumerate(statuses)]
    (d / "comparison/comparison.json").write_text(json.dumps({"comparisons": rows}))
    if markdown:
        (d / "comparison/comparison.md").write_text(f"{MARKER}\n| runner {index} table |\n")


def run_case(script, tmp, artifacts, event_pr="7", comments=(), pulls=()):
    root = Path(tmp)
    runner = Runner(root, fake_bin=root / "bin")
    for args in artifacts:
        write_artifact(runner.temp, *args)
    write_program(root / "bin", "gh", FAKE_GH)
    env = dict(REPO="o/r", RUN_ID="99", HEAD_SHA=HEAD, HEAD_OWNER="fork", HEAD_BRANCH="topic",
               EVENT_PR=event_pr, GH_TOKEN="x", FAKE_LOG=str(root / "calls"), FAKE_DIR=str(root),
               FAKE_COMMENTS=json.dumps(list(comments)), FAKE_PULLS=json.dumps(list(pulls)))
    result, _ = runner.run(script, env)
    calls = (root / "calls").read_text().split("\n")[:-1] if (root / "calls").exists() else []
    body = (root / "body.md").read_text() if (root / "body.md").exists() else None
    return result, [c for c in calls if not c.startswith("GET")], body


BOT = {"id": 555, "user": {"login": "github-actions[bot]"}, "body": MARKER + "\nold"}
IMPOSTOR = {"id": 444, "user": {"login": "mallory"}, "body": MARKER + "\nfake"}
A = (0, ["self-hosted", "gpu-a"], "on-change")
B = (1, ["self-hosted", "gpu-b"], "on-change")


def case(name, check, **kwargs):
    with tempfile.TemporaryDirectory() as tmp:
        result, writes, body = run_case(sticky_script(), tmp, **kwargs)
        problem = check(result, writes, body)
    return f"{name}: {problem}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}" if problem else None


def expect(code, writes, body_has=(), body_lacks=()):
    def check(result, got, body):
        if result.returncode != code:
            return f"exit {result.returncode}, expected {code}"
        if got != writes:
            return f"calls {got}, expected {writes}"
        for text in body_has:
            if text not in (body or ""):
                return f"body lacks {text!r}"
        for text in body_lacks:
            if text in (body or ""):
                return f"body has {text!r}"
        if writes and (body is None or not body.startswith(MARKER) or body.count(MARKER) != 1):
            return "body does not start with exactly one marker"
        return None
    return check


def cases():
    post, patch = ["POST repos/o/r/issues/7/comments"], ["PATCH repos/o/r/issues/comments/555"]
    pwned = "/tmp/stackbench-comment-test-pwned"
    evil = f"$(touch {pwned})"
    yield case("on-change, a regression on one runner: created", expect(0, post, [
        "### Runner: self-hosted gpu-a", "| runner 0 table |", "### Runner: self-hosted gpu-b", "| runner 1 table |"]),
        artifacts=[(*A, 0, ["unchanged"]), (*B, 1, ["degraded", "unchanged"])])
    yield case("on-change, nothing changed, no comment yet: nothing posted", expect(0, []),
               artifacts=[(*A, 0, ["unchanged", "skipped"])])
    yield case("on-change, nothing changed, bot comment exists: updated in place", expect(0, patch),
               artifacts=[(*A, 0, ["unchanged"])], comments=[IMPOSTOR, BOT])
    yield case("always, nothing changed: created", expect(0, post),
               artifacts=[(0, ["gpu-a"], "always", 0, ["unchanged"])])
    yield case("never, a regression: nothing posted", expect(0, []),
               artifacts=[(0, ["gpu-a"], "never", 1, ["degraded"])], comments=[BOT])
    yield case("the gate produced no comparison: created, saying so", expect(0, post, ["produced no comparison"]),
               artifacts=[(0, ["gpu-a"], "on-change", 2, [], False)])
    yield case("fork PR: found by head SHA", expect(0, ["POST repos/o/r/issues/12/comments"]),
               artifacts=[(*A, 1, ["failed"])], event_pr="",
               pulls=[{"number": 11, "head": {"sha": "f" * 40}}, {"number": 12, "head": {"sha": HEAD}}])
    yield case("fork PR whose head moved on: refused", expect(1, []), artifacts=[(*A, 1, ["failed"])],
               event_pr="", pulls=[{"number": 11, "head": {"sha": "f" * 40}}])
    yield case("PR number that is not a number: refused", expect(1, []),
               artifacts=[(*A, 1, ["degraded"])], event_pr=f"7;{evil}")
    injected = case("artifact text with shell in it stays text", expect(0, patch, body_lacks=["$("]),
                    artifacts=[(0, [evil], evil, 0, ["unchanged"])], comments=[BOT])
    yield injected or (f"artifact text with shell in it stays text: {pwned} was created"
                       if Path(pwned).exists() else None)


def main():
    if shutil.which("jq") is None:
        print("test_comment_workflow: jq is required (apt-get install jq)", file=sys.stderr)
        return 1
    results = list(cases())
    return report("test_comment_workflow", len(results), [r for r in results if r])


if __name__ == "__main__":
    sys.exit(main())
