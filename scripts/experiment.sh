#!/usr/bin/env bash
# The FBT against its baselines on the same data: installs what is missing,
# builds, then trains and evaluates the spec's FBT, a plain transformer on the
# same tokens and one on the same training FLOPs, and writes report.md and
# PNG plots (scripts/experiment.py --help for the options).
#
#   scripts/experiment.sh [SPEC] [--steps N] [--out DIR] [--data FILE]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
SPEC=${1:-specs/tiny.json}
shift || true
exec /usr/bin/python3 scripts/experiment.py --spec "$SPEC" "$@"
