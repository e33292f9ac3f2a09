#!/bin/sh
# Mutation testing, scoped by file: does some test fail when this line's promise breaks? Not part of CI
# (each Rust mutant is a rebuild, each JS mutant a test run: hours for every file on two cores).
#
#   npm run mutants -- src/proxy/security.rs lib/rules.js   # those files
#   npm run mutants -- lib/hooks.js:12-70             # lines of a lib/ file (Stryker's mutation range)
#   npm run mutants                                    # every file docs/mutants.md tracks
#
# Rust files: cargo-mutants (installed here when missing) with the core's own unit tests, `cargo test
# --no-default-features --lib` (the Node tests need the addon rebuilt per mutant; they are not run).
# lib/ files: StrykerJS with the command runner, running the __test__ files that exercise that file
# (TESTS below). Reports: target/mutants/<file>/ (cargo-mutants' outcomes.json, caught.txt,
# missed.txt...) and reports/mutation/<file>.html (Stryker).
set -eu
cd "$(dirname "$0")/.."

FILES="${*:-src/proxy/security.rs src/proxy/local_files.rs src/cassette/redact.rs src/cassette/record.rs src/cassette/record/writer.rs src/cassette/record/body_line.rs src/cassette/replay/matching.rs src/observe/mask.rs src/proxy/headers.rs lib/browser-sync.js lib/browser-sync-options.js lib/browser-sync-site.js lib/hooks.js lib/middleware.js lib/rules.js}"

# The __test__ files that exercise each lib/ file. (rules.js: rewrite.test.js's random-pattern differential
# cut from 5,000 cases to 200, 63 s to 1 s a run; the rules.js code it reaches is the same for every case.)
tests_for() {
  case "$1" in
    lib/rules.js) echo "__test__/rewrite.test.js __test__/proxy.test.js __test__/rule-functions.test.js" ;;
    lib/hooks.js) echo "__test__/hooks.test.js" ;;
    lib/middleware.js) echo "__test__/middleware.test.js" ;;
    # lib/browser-sync.js and lib/browser-sync-options.js: test_command below.
    # The instance API's file (8 s a run; all the adapter's files take 30 s): a mutant only the others
    # would kill counts as missed, so the score is a lower bound.
    lib/browser-sync-site.js) echo "__test__/adapter-instance.test.js" ;;
    lib/cli.js) echo "__test__/cli.test.js" ;;
    lib/start.js | lib/server.js) echo "__test__/lifecycle.test.js __test__/options.test.js" ;;
    lib/js-thread.js) echo "__test__/fairness.test.js __test__/boundary.test.js" ;;
    *) echo "no tests are mapped to $1 (scripts/mutants.sh, tests_for)" >&2; exit 2 ;;
  esac
}

# The command Stryker runs per mutant. For the adapter, one run per file, chained with && so that a
# mutant caught by the first stops there (Node 20's test runner has no bail), the broadest first.
# adapter.test.js's Chromium runs are left out by name (8 of its 12 s a run): what they reach of lib/ is
# reached without a browser by adapter-api.test.js (client script, socket routes) and
# adapter-instance.test.js, and a mutant only they would catch counts as missed (a lower bound).
# --test-force-exit: a mutant that leaves a server running is judged by the tests' assertions (a stop
# not done fails those that wait for a freed port), not by a run that never ends (2 minutes each).
test_command() {
  run="DIFF_CASES=200 node --test --test-concurrency=1 --test-force-exit"
  case "$1" in
    lib/browser-sync.js | lib/browser-sync-options.js)
      echo "$run __test__/adapter-instance.test.js && $run __test__/adapter-api.test.js && $run __test__/adapter-options.test.js && $run '--test-name-pattern=init reports|module-level' __test__/adapter.test.js" ;;
    *) echo "$run $(tests_for "$1")" ;;
  esac
}

# In braces, parsed whole before it runs: editing this file during a long run cannot derail it.
{
for file in $FILES; do
  name=$(echo "$file" | tr '/:' '__')
  case "$file" in
    *.rs)
      if ! cargo mutants --version >/dev/null 2>&1; then cargo install cargo-mutants --locked; fi
      # `-C --lib`: build and run the library's unit tests only, not every tests/*.rs binary per mutant.
      cargo mutants --no-default-features -C --lib --file "$file" --output "target/mutants/$name" --timeout-multiplier 3 || true
      ;;
    lib/*.js | lib/*.js:*)
      [ -f binding.js ] || { echo "build the addon first (npm run build)" >&2; exit 2; }
      mkdir -p reports/mutation
      config="reports/mutation/$name.conf.json"
      cat > "$config" <<JSON
{
  "\$schema": "../../node_modules/@stryker-mutator/core/schema/stryker-schema.json",
  "mutate": ["$file"],
  "testRunner": "command",
  "commandRunner": { "command": "$(test_command "${file%%:*}")" },
  "concurrency": 1,
  "timeoutMS": 30000,
  "tempDirName": ".stryker-tmp-$name",
  "reporters": ["clear-text", "html", "json"],
  "htmlReporter": { "fileName": "reports/mutation/$name.html" },
  "jsonReporter": { "fileName": "reports/mutation/$name.json" },
  "ignorePatterns": ["target", "fuzz", "benches", "demo", "docs", "examples", "npm", "wasm/pkg", "reports", ".stryker-tmp*"]
}
JSON
      npx stryker run "$config" || true
      ;;
    *) echo "not a Rust or lib/ file: $file" >&2; exit 2 ;;
  esac
done
exit 0
}
