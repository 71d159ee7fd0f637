# check_fixture.sh — sourced by the shell tests: counted checks and their summary.
#
#   check NAME STATUS   counts a pass when STATUS is 0, else prints "FAIL: NAME"
#   has TEXT REGEX      TEXT has a line matching the extended REGEX
#   finish NAME         prints "NAME: P passed, F failed"; its status is the test's
pass=0 fail=0
check() {
    if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
has() { grep -qE -- "$2" <<<"$1"; }
finish() {
    echo "$1: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
