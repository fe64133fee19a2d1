#!/usr/bin/env bash
# The FBT against its baselines on the same data: installs what is missing,
# builds, then trains and evaluates the spec's FBT, plain transformers on 1,
# 1.5, 2 and 3x its tokens and one on the same training FLOPs, and writes
# report.md, the tokens-equivalence table and PNG plots
# (scripts/experiment.py --help for the options; docs/experiments/).
#
#   scripts/experiment.sh [SPEC] [--steps N] [--out DIR]
#                         [--data FILE | --recipe code [--tokenizer bytes|sp]]
#                         [--depth-task] [--multipliers 1,1.5,2,3]
set -euo pipefail
cd "$(dirname "$0")/.."
# Help before installing or building anything.
for arg in "$@"; do
  if [[ $arg == -h || $arg == --help ]]; then
    exec /usr/bin/python3 scripts/experiment.py --help
  fi
done

scripts/install-deps.sh
scripts/build.sh
SPEC=${1:-specs/tiny.json}
shift || true
exec /usr/bin/python3 scripts/experiment.py --spec "$SPEC" "$@"
