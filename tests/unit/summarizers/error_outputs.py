"""Failure outputs of our own making whose decisive lines come after the first 2,000 characters.

``EXAMPLES``: name -> (output, the lines that decide it, verbatim).
"""

from __future__ import annotations

_PASSING_JEST = "".join(f"  ✓ tokenizer handles case {n} of the escaped string table ({n % 7} ms)\n" for n in range(40))
JEST = (
    " PASS  src/tokenizer.test.ts\n" + _PASSING_JEST + " FAIL  src/parser.test.ts\n  parser\n"
    "    ✓ parses flat arrays (3 ms)\n    ✕ parses nested arrays (5 ms)\n\n"
    "  ● parser › parses nested arrays\n\n"
    "    expect(received).toEqual(expected) // deep equality\n\n"
    "    - Expected  - 1\n    + Received  + 1\n\n"
    "      Array [\n    -   1,\n    +   2,\n      ]\n\n"
    "      at Object.<anonymous> (src/parser.test.ts:14:17)\n\n"
    "Test Suites: 1 failed, 1 passed, 2 total\nTests:       1 failed, 41 passed, 42 total\n"
    "Snapshots:   0 total\nTime:        2.345 s\nRan all test suites.\n"
)
_PASSING_RUST = "".join(f"test lexer::tests::token_kind_{n} ... ok\n" for n in range(60))
CARGO = (
    "   Compiling csvport v0.4.2 (/work/csvport)\n     Running unittests src/lib.rs\n\nrunning 61 tests\n"
    + _PASSING_RUST
    + "test parser::tests::roundtrip ... FAILED\n\nfailures:\n\n---- parser::tests::roundtrip stdout ----\n"
    "thread 'parser::tests::roundtrip' panicked at src/parser.rs:88:5:\n"
    "assertion `left == right` failed: rows differ after a roundtrip\n  left: 3\n right: 4\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\n"
    "failures:\n    parser::tests::roundtrip\n\n"
    "test result: FAILED. 60 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s\n\n"
    "error: test failed, to rerun pass `--lib`\n"
)
_WARNINGS = "".join(
    f"warning: unused variable: `tmp{n}`\n  --> src/util.rs:{n}:9\n   |\n{n} |     let tmp{n} = 0;\n"
    f"   |         ^^^^ help: prefix it with an underscore: `_tmp{n}`\n\n"
    for n in range(10, 30)
)
RUSTC = (
    "   Compiling csvport v0.4.2 (/work/csvport)\n" + _WARNINGS
    + "error[E0502]: cannot borrow `rows` as mutable because it is also borrowed as immutable\n"
    "  --> src/parser.rs:41:9\n   |\n40 |     let first = &rows[0];\n"
    "   |                  ---- immutable borrow occurs here\n41 |     rows.push(next);\n"
    "   |     ^^^^^^^^^^^^^^^ mutable borrow occurs here\n\n"
    "For more information about this error, try `rustc --explain E0502`.\n"
    "warning: `csvport` (lib) generated 20 warnings\n"
    "error: could not compile `csvport` (lib) due to 1 previous error; 20 warnings emitted\n"
)
TSC = "".join(
    f"src/view/panel{n}.ts(3,1): warning TS6133: 'x{n}' is declared but its value is never read.\n" for n in range(30)
) + (
    "src/api/client.ts(42,7): error TS2322: Type 'string | undefined' is not assignable to type 'string'.\n"
    "  Type 'undefined' is not assignable to type 'string'.\n\nFound 1 error in src/api/client.ts:42\n"
)
_HELPERS = "".join(f"    def helper_{n}(x):\n        return x + {n}\n" for n in range(40))
PYTEST = (
    "============================= test session starts ==============================\ncollected 80 items\n\n"
    "tests/test_rows.py " + "." * 70 + "F" + "." * 9 + " [100%]\n\n"
    "=================================== FAILURES ===================================\n"
    "_______________________________ test_roundtrip ________________________________\n\n" + _HELPERS
    + "\n    def test_roundtrip():\n        rows = load('fixtures/a.csv')\n>       assert dump(rows) == RAW\n"
    "E       AssertionError: assert 'a,b' == 'a,c'\nE         - a,c\nE         + a,b\n\n"
    "tests/test_rows.py:57: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_rows.py::test_roundtrip - AssertionError: assert 'a,b' == 'a,c'\n"
    "========================= 1 failed, 79 passed in 0.42s =========================\n"
)
PYTHON = (
    "Traceback (most recent call last):\n"
    + "".join(
        f'  File "/usr/lib/python3.12/site-packages/lib{n}/core.py", line {n * 10}, in call_{n}\n'
        f"    return call_{n + 1}(payload)\n"
        for n in range(30)
    )
    + '  File "/work/app/importer.py", line 88, in parse_row\n    value = int(cells[3])\n'
    "ValueError: invalid literal for int() with base 10: 'n/a'\n"
)
_SNIPPET = "".join(f"{n} |     let cell_{n} = row.get({n});\n" for n in range(50, 64))
RUSTC_LONG = (
    "   Compiling csvport v0.4.2 (/work/csvport)\n" + _WARNINGS
    + "error[E0499]: cannot borrow `buf` as mutable more than once at a time\n  --> src/writer.rs:70:13\n   |\n"
    "49 |     let head = &mut buf;\n   |                ---------- first mutable borrow occurs here\n" + _SNIPPET
    + "70 |     flush(&mut buf);\n   |           ^^^^^^^^ second mutable borrow occurs here\n"
    "71 |     head.clear();\n   |     ---- first borrow later used here\n\n"
    + "".join(f"warning: field `pad{n}` is never read\n  --> src/writer.rs:{n}:5\n   |\n{n} |     pad{n}: u8,\n"
              f"   |     ^^^^\n\n" for n in range(3, 6))
    + "For more information about this error, try `rustc --explain E0499`.\n"
    "error: could not compile `csvport` (lib) due to 1 previous error; 20 warnings emitted\n"
)
GO = "".join(f"=== RUN   TestCodec/case_{n}\n--- PASS: TestCodec/case_{n} (0.00s)\n" for n in range(60)) + (
    "=== RUN   TestLedger\n    ledger_test.go:41: balance after refund: got 90, want 100\n"
    "--- FAIL: TestLedger (0.01s)\nFAIL\nFAIL\tgithub.com/acme/ledger\t0.112s\nFAIL\n"
)
MAKE = "".join(f"cc -O2 -c src/mod{n}.c -o build/mod{n}.o\n" for n in range(80)) + (
    "ld: undefined symbol: _ledger_close\n>>> referenced by main.o\n"
    "make: *** [Makefile:31: build/ledger] Error 1\n"
)
# A tool nobody knows: no marker at all, only its last lines say what happened.
PLAIN = "".join(f"step {n}: copied shard {n} of 90\n" for n in range(90)) + (
    "step 90: shard 90 checksum 4f1a does not match 77c2\nstopping the copy, 1 shard left behind\n"
)

EXAMPLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "rustc-long": (RUSTC_LONG, ("error[E0499]: cannot borrow `buf` as mutable more than once at a time",
                                "   |           ^^^^^^^^ second mutable borrow occurs here",
                                "   |     ---- first borrow later used here",
                                "error: could not compile `csvport` (lib) due to 1 previous error; "
                                "20 warnings emitted")),
    "go": (GO, ("    ledger_test.go:41: balance after refund: got 90, want 100", "--- FAIL: TestLedger (0.01s)")),
    "make": (MAKE, ("ld: undefined symbol: _ledger_close", "make: *** [Makefile:31: build/ledger] Error 1")),
    "plain": (PLAIN, ("step 90: shard 90 checksum 4f1a does not match 77c2",
                      "stopping the copy, 1 shard left behind")),
    "jest": (JEST, ("  ● parser › parses nested arrays", "    -   1,", "    +   2,",
                    "      at Object.<anonymous> (src/parser.test.ts:14:17)")),
    "cargo": (CARGO, ("thread 'parser::tests::roundtrip' panicked at src/parser.rs:88:5:",
                      "assertion `left == right` failed: rows differ after a roundtrip", "  left: 3", " right: 4")),
    "rustc": (RUSTC, ("error[E0502]: cannot borrow `rows` as mutable because it is also borrowed as immutable",
                      "  --> src/parser.rs:41:9", "   |     ^^^^^^^^^^^^^^^ mutable borrow occurs here")),
    "tsc": (TSC, ("src/api/client.ts(42,7): error TS2322: Type 'string | undefined' is not assignable to type "
                  "'string'.",)),
    "pytest": (PYTEST, (">       assert dump(rows) == RAW", "E       AssertionError: assert 'a,b' == 'a,c'",
                        "tests/test_rows.py:57: AssertionError")),
    "python": (PYTHON, ('  File "/work/app/importer.py", line 88, in parse_row',
                        "ValueError: invalid literal for int() with base 10: 'n/a'")),
}
