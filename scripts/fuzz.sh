#!/usr/bin/env bash
# Runs every fuzz target of the project for FUZZTIME each (default 30s), one after the
# other (`make fuzz`). Plain `go test` already runs each target on its seeds (the f.Add
# calls and testdata/fuzz/<Name>/); this explores beyond them. A failing input is written
# to the package's testdata/fuzz/<Name>/ by go test: commit it with the fix, and it stays a
# regression seed. FUZZ=regex limits the targets; FUZZPARALLEL sets the workers (2).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
FUZZTIME=${FUZZTIME:-30s}
FUZZPARALLEL=${FUZZPARALLEL:-2}
FILTER=${FUZZ:-.}
failed=0
ran=0
# Every package with a fuzz target, and its targets.
while IFS= read -r file; do
  pkg=./$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/'); do
    [[ "$pkg.$target" =~ $FILTER ]] || continue
    ran=$((ran + 1))
    echo "== $pkg $target ($FUZZTIME)"
    start=$(date +%s)
    if go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel "$FUZZPARALLEL" > "/tmp/wasmkube-fuzz-$target.log" 2>&1; then
      execs=$(grep -oE 'execs: [0-9]+' "/tmp/wasmkube-fuzz-$target.log" | tail -1 || true)
      echo "   ok, ${execs:-execs: ?} in $(( $(date +%s) - start )) s"
    else
      failed=$((failed + 1))
      echo "   FAILED: see /tmp/wasmkube-fuzz-$target.log; the input is under $pkg/testdata/fuzz/$target/"
      grep -E -- '--- FAIL|Failing input|_test\.go:[0-9]+' "/tmp/wasmkube-fuzz-$target.log" | head -5 | sed 's/^/   /'
    fi
  done
done < <(grep -rlE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' --include='*_test.go' . | sed 's|^\./||' | sort)
echo "fuzz: $ran targets, $((ran - failed)) passed, $failed failed"
[[ $failed -eq 0 ]]
