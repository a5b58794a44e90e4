#!/bin/sh
# The contract's index (scripts/check_promises.py): passes on the tree as
# it is, and fails, naming the fault, on copies with one fault planted
# each: a promise no test cites, a test citing a promise that does not
# exist, a test file without its Promises line, a table that differs from
# the files.
set -eu
root=$1
py=python3
check="$root/scripts/check_promises.py"
"$py" "$check" "$root" || { echo "check_promises.sh: the tree's promise index is wrong (above)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t/docs" "$tmp/t/tests" "$tmp/t/bindings/go"
    cp "$root/docs/contract.md" "$root/docs/reliability.md" "$tmp/t/docs/"
    cp "$root"/tests/unit_*.c "$root"/tests/stress_*.c "$tmp/t/tests/"
    cp "$root"/bindings/go/*_test.go "$tmp/t/bindings/go/"
}
# expect_fail WHAT TEXT: the check fails on the planted copy and says TEXT.
expect_fail() {
    if "$py" "$check" "$tmp/t" > "$tmp/out.txt" 2>&1; then
        cat "$tmp/out.txt"
        echo "check_promises.sh: $1 was not reported"
        exit 1
    fi
    out=$(cat "$tmp/out.txt")
    case $out in
    *"$2"*) ;;
    *) echo "$out"; echo "check_promises.sh: $1 not named ('$2' expected)"; exit 1 ;;
    esac
}

fresh # a promise that no test cites
printf '8. **Planted.** A promise of the copy only.\n' > "$tmp/p8"
sed -i "/^7\. \*\*/{
r $tmp/p8
}" "$tmp/t/docs/contract.md"
expect_fail "a promise with no test" "promise 8 (Planted): no test file cites it"

fresh # a test citing a promise the contract does not have
sed -i 's/^ \* Promises: .*/ * Promises: 1, 99/' "$tmp/t/tests/unit_close.c"
expect_fail "a test citing a missing promise" \
    "tests/unit_close.c: cites promise 99, which docs/contract.md does not have"

fresh # a test file without its line
sed -i '/^ \* Promises: /d' "$tmp/t/tests/unit_budget.c"
expect_fail "a test file without its line" "tests/unit_budget.c: no \"Promises:\" line"

fresh # a table that differs from the files
sed -i 's/`tests\/unit_budget.c`, //' "$tmp/t/docs/reliability.md"
expect_fail "a table that differs from the files" "the promise table differs"

echo "check_promises.sh: ok (the index is true; each planted fault is reported)"
