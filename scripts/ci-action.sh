#!/usr/bin/env bash
# The logic of the BQAS GitHub Action (action.yml): run a scenario (or `bqas calibrate`), on a pull request
# also the same scenario at the base branch, then write the Markdown summary and record the exit code.
#
# Inputs come as environment variables (action.yml maps its inputs to them), so this runs the same on a
# laptop as on a runner:
#   BQAS_SCENARIO        scenario YAML (or use BQAS_GOLD + BQAS_JUDGE for `bqas calibrate`)
#   BQAS_GOLD, BQAS_JUDGE  gold labels and judge for `bqas calibrate`
#   BQAS_BACKEND         offline | llm | auto (empty: the scenario's; calibrate: auto)
#   BQAS_OUT             output folder (default bqas-out): run/, base/, calibration/, summary.md
#   BQAS_COMPARE_BASE    true | false: on a pull request, also run the scenario at the base branch
#   BQAS_MAX_DROP, BQAS_MAX_WORSE  the comparison gate (as for `bqas compare`)
#   BQAS_ARGS            extra arguments for `bqas run` / `bqas calibrate` (split on spaces)
#   BQAS_TARGET          the assistant under test for `bqas run --target` (a YAML file or inline YAML)
#   BQAS_HOME            the store (default: a new folder under $RUNNER_TEMP, never the user's checkout)
#   BQAS_BASELINE_DIR    the stored baseline of the main branch for a scenario with a target (docs/ci.md):
#                        a store (home/) and the baseline run's id (run-id); the action keeps it in the cache
#   BQAS_SAVE_BASELINE   true: this run becomes the baseline (the action sets it on pushes to the default branch)
#   BQAS_MAX_REMOVED     the comparison gate on samples of the base branch this run no longer has
#                        (empty: the scenario's thresholds.max_removed_samples, else 0)
#   GITHUB_EVENT_NAME, GITHUB_BASE_REF, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT: set by GitHub Actions
# Exit code (also written as exit-code to $GITHUB_OUTPUT): 0 passed, 1 thresholds/targets missed or a
# regression against the base branch, 2 usage, configuration or input error, 4 the store or the disk could
# not be written. With GITHUB_OUTPUT set the
# script itself exits 0, so that the action still uploads the artifacts; its last step exits with the code.
set -uo pipefail

# The store of the two runs (base and pull request) lives outside the user's checkout: a .bqas/ folder in
# the repository would show up as untracked (and could be committed by a later step). BQAS_HOME set by
# the workflow wins.
if [[ -z "${BQAS_HOME:-}" ]]; then
    BQAS_HOME="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/bqas-home.XXXXXX")"
    export BQAS_HOME
fi

out="${BQAS_OUT:-bqas-out}"
mkdir -p "$out"
summary_file="$out/summary.md"
: >"$summary_file"
read -r -a extra <<<"${BQAS_ARGS:-}"
backend=()
[[ -n "${BQAS_BACKEND:-}" ]] && backend=(--backend "$BQAS_BACKEND")
target=()
[[ -n "${BQAS_TARGET:-}" ]] && target=(--target "$BQAS_TARGET")

finish() {
    local code="$1"
    if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
        cat "$summary_file" >>"$GITHUB_STEP_SUMMARY"
    fi
    if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
        {
            echo "exit-code=$code"
            echo "out=$out"
        } >>"$GITHUB_OUTPUT"
        exit 0
    fi
    exit "$code"
}

if [[ -n "${BQAS_GOLD:-}" ]]; then
    if [[ -z "${BQAS_JUDGE:-}" ]]; then
        echo "error: the calibrate mode needs judge (BQAS_JUDGE) besides gold (BQAS_GOLD)" >&2
        finish 2
    fi
    bqas calibrate --gold "$BQAS_GOLD" --judge "$BQAS_JUDGE" "${backend[@]}" --out "$out/calibration" "${extra[@]}"
    rc=$?
    if [[ $rc -eq 2 ]]; then
        finish 2
    fi
    bqas ci-summary "$out/calibration" --out "$summary_file"
    finish $?
fi

if [[ -z "${BQAS_SCENARIO:-}" ]]; then
    echo "error: give scenario (BQAS_SCENARIO), or gold and judge for calibrate" >&2
    finish 2
fi

# A scenario with a target asks a live assistant. On a pull request its base side is not a second call to
# that same assistant (that would compare scenario files, not builds, at twice the calls) but the stored
# baseline run of the main branch: the base branch's scenario judged on the baseline's reused replies.
has_target() {
    [[ -n "${BQAS_TARGET:-}" ]] && return 0
    python -c 'import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
sys.exit(0 if isinstance(doc, dict) and doc.get("target") else 1)' "$1" 2>/dev/null
}
run_id_of() {
    python -c 'import json, sys; print(json.loads(open(sys.argv[1], encoding="utf-8").readline())["run_id"])' "$1/results.jsonl"
}
baseline_dir="${BQAS_BASELINE_DIR:-}"
targeted=false
if has_target "$BQAS_SCENARIO"; then
    targeted=true
fi

compare=()
reuse=()
if [[ "$targeted" == true && "${GITHUB_EVENT_NAME:-}" == pull_request* && "${BQAS_COMPARE_BASE:-true}" == "true" ]]; then
    if [[ -n "$baseline_dir" && -s "$baseline_dir/run-id" ]]; then
        reuse=(--reuse-target-replies "$(cat "$baseline_dir/run-id")")
        if [[ -z "${BQAS_DATABASE_URL:-}" ]]; then
            BQAS_HOME="$baseline_dir/home" # the baseline's store: the reused replies are in it
            export BQAS_HOME
        fi
    else
        echo "> No stored baseline of the main branch (BQAS_BASELINE_DIR, docs/ci.md): this scenario asks a live assistant, so the base branch is not run again; no comparison." >>"$summary_file"
    fi
fi

if [[ "${GITHUB_EVENT_NAME:-}" == pull_request* && -n "${GITHUB_BASE_REF:-}" && "${BQAS_COMPARE_BASE:-true}" == "true" &&
    ("$targeted" == false || ${#reuse[@]} -gt 0) ]]; then
    # The base branch's run: the same scenario file as the base branch has it (its dataset included), judged
    # by this BQAS, into the same store, so that ci-summary can pair the samples.
    # It runs inside the base branch's tree, so that a dataset beside the scenario's folder (../data/…) is
    # inside the working directory there as it is here; the store, the outputs and a target file stay this
    # checkout's (absolute paths).
    base_tree="$(mktemp -d)/base"
    if git fetch --quiet --no-tags --depth=1 origin "$GITHUB_BASE_REF" &&
        git worktree add --quiet --detach "$base_tree" FETCH_HEAD; then
        if [[ -f "$base_tree/$BQAS_SCENARIO" ]]; then
            out_abs="$(cd "$out" && pwd)"
            mkdir -p "$BQAS_HOME"
            home_abs="$(cd "$BQAS_HOME" && pwd)"
            base_target=("${target[@]}")
            if [[ -f "${BQAS_TARGET:-}" ]]; then
                base_target=(--target "$(cd "$(dirname "$BQAS_TARGET")" && pwd)/$(basename "$BQAS_TARGET")")
            fi
            if [[ ${#reuse[@]} -gt 0 ]]; then
                base_target+=("${reuse[@]}") # the baseline's replies, not a call to the live assistant
                echo "> Base side: the main branch's stored baseline run ${reuse[1]} (its replies reused, judged with the base branch's scenario)." >>"$summary_file"
            fi
            (cd "$base_tree" && BQAS_HOME="$home_abs" bqas run "$BQAS_SCENARIO" "${backend[@]}" "${base_target[@]}" \
                --out "$out_abs/base" --no-progress "${extra[@]}")
            base_rc=$?
            if [[ $base_rc -le 1 ]]; then
                compare=(--baseline "$out/base" --max-drop "${BQAS_MAX_DROP:-2.0}")
                [[ -n "${BQAS_MAX_WORSE:-}" ]] && compare+=(--max-worse "$BQAS_MAX_WORSE")
                [[ -n "${BQAS_MAX_REMOVED:-}" ]] && compare+=(--max-removed "$BQAS_MAX_REMOVED")
            else
                echo "> The base branch's run failed (exit $base_rc): no comparison." >>"$summary_file"
            fi
        else
            echo "> $BQAS_SCENARIO does not exist on $GITHUB_BASE_REF: no comparison." >>"$summary_file"
        fi
        git worktree remove --force "$base_tree" || true
    else
        echo "> The base branch $GITHUB_BASE_REF could not be fetched: no comparison." >>"$summary_file"
    fi
fi

bqas run "$BQAS_SCENARIO" "${backend[@]}" "${target[@]}" --out "$out/run" --no-progress "${extra[@]}"
rc=$?
if [[ $rc -eq 2 ]]; then
    echo "BQAS: the run failed with a usage, configuration or input error (exit 2); see the job log." >>"$summary_file"
    finish 2
fi
if [[ $rc -eq 4 ]]; then
    echo "BQAS: the store or the disk could not be written (exit 4: a full disk, a file size limit, an I/O error, an unreachable database); see the job log." >>"$summary_file"
    finish 4
fi
if [[ "${BQAS_SAVE_BASELINE:-false}" == "true" && "$targeted" == true && -n "$baseline_dir" ]]; then
    # This run (its store with the assistant's replies) becomes the baseline that pull requests compare with.
    rm -rf "$baseline_dir" && mkdir -p "$baseline_dir/home"
    if [[ -z "${BQAS_DATABASE_URL:-}" ]]; then
        cp "$BQAS_HOME"/bqas.sqlite* "$baseline_dir/home/"
    fi
    run_id_of "$out/run" >"$baseline_dir/run-id"
    [[ -n "${GITHUB_OUTPUT:-}" ]] && echo "baseline-saved=true" >>"$GITHUB_OUTPUT"
    echo "> Stored as the main branch's baseline: run $(cat "$baseline_dir/run-id")." >>"$summary_file"
fi
bqas ci-summary "$out/run" "${compare[@]}" --out "$summary_file"
finish $?
