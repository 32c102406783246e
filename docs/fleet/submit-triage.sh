#!/usr/bin/env bash
# Queues a fleet triage on Slurm: the triage job array over LIST, then the
# report job after it (afterany). Prints the two job ids.
#
#   submit-triage.sh LIST OUT [sbatch options for both jobs...]
#
# HRR_ARRAY (e.g. 0-15 or 0-63%8) sets the array's tasks (default: the
# script's --array=0-3); HRR_REPORT, HRR_BIN and HRR_TRIAGE_FLAGS pass on to
# the jobs (see triage-array.sbatch and report.sbatch).
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "error: usage: submit-triage.sh LIST OUT [sbatch options...]" >&2
  exit 2
fi
command -v sbatch >/dev/null || {
  echo "error: no sbatch on PATH: run this on a Slurm login node" >&2
  exit 2
}
here=$(cd "$(dirname "$0")" && pwd)
list=$(realpath -m "$1")
out=$(realpath -m "$2")
shift 2
[ -r "$list" ] || {
  echo "error: cannot read the archive list $list: give a file of archive paths, one a line" >&2
  exit 2
}
array=()
[ -z "${HRR_ARRAY:-}" ] || array=(--array="$HRR_ARRAY")
# --parsable prints "id" or "id;cluster".
job=$(sbatch --parsable "${array[@]}" "$@" "$here/triage-array.sbatch" "$list" "$out")
job=${job%%;*}
report=$(sbatch --parsable --dependency=afterany:"$job" "$@" "$here/report.sbatch" "$out")
report=${report%%;*}
echo "triage array: $job"
echo "report: $report (after the array)"
