#!/bin/sh
# Runs one cargo-fuzz target of hrr with the limits of issue 8 item 1.
#   fuzz/run.sh <target> [seconds]     (default 600 s; run from anywhere)
# Targets: record_stream launch_payload manifest config classifier_lines.
# The stable toolchain is used with RUSTC_BOOTSTRAP=1 (cargo-fuzz passes
# nightly -Z flags); nice keeps other builds on the host ahead of the fuzzer.
# New corpus entries go to fuzz/corpus/<target> (gitignored), crashes to
# fuzz/artifacts/<target>/; copy each crash to tests/fuzz_regressions/<target>/.
set -eu
target=${1:?usage: fuzz/run.sh <target> [seconds]}
seconds=${2:-600}
cd "$(dirname "$0")/.."
mkdir -p "fuzz/corpus/$target"
exec env TMPDIR=/dev/shm RUSTC_BOOTSTRAP=1 CARGO_BUILD_JOBS=2 nice -n 19 \
    cargo fuzz run "$target" "fuzz/corpus/$target" "fuzz/corpus-seeds/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=128 \
    -timeout=10 -print_final_stats=1
