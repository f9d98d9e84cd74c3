#!/bin/sh
# Build and run the datagram fuzz target (see fuzz/README.md). Usage: fuzz/run.sh [seconds]
set -eu
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1   # cargo-fuzz needs nightly flags (-Zsanitizer); stable + bootstrap works
secs=${1:-600}
cargo fuzz build -O -a datagram
[ -d corpus/datagram ] || cargo run --quiet --bin seeds -- corpus/datagram
cargo fuzz run -O -a datagram corpus/datagram -- -max_total_time="$secs" -max_len=4096 -print_final_stats=1
