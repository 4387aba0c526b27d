"""The hard-fact extractor: files (bash included), constraints in several languages, request, error, identifiers.

The examples are this file's own development set (the planted-fact suite and its
held-out phrasings live elsewhere and are not used here).
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_sessiond.examples.generator import iter_lines
from pi_sessiond.summarizers.bashfiles import changed_paths
from pi_sessiond.summarizers.cues import constraint_sentences, decisive_lines, prose_of
from pi_sessiond.summarizers.facts import extract_facts, file_facts, identifiers_in, latest_request

Json = dict[str, Any]


def user(text: str) -> Json:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def calls(*blocks: tuple[str, str, Json]) -> Json:
    content = [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in blocks]
    return {"role": "assistant", "content": content, "stopReason": "toolUse", "timestamp": 2}


def tool_result(call_id: str, name: str, text: str, *, error: bool = False, **extra: Any) -> Json:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "isError": error,
            "content": [{"type": "text", "text": text}], "timestamp": 3, **extra}


# -- bash file operations ------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("mv old.py new.py", ["old.py", "new.py"]),
        ("git mv src/a.ts src/b.ts && git rm -q stale.ts", ["src/a.ts", "src/b.ts", "stale.ts"]),
        ("cp -r templates/ out/site", ["out/site"]),
        ("rm -rf build dist 2>/dev/null", ["build", "dist"]),
        ("sed -i 's/foo/bar/g' lib/x.c lib/y.c", ["lib/x.c", "lib/y.c"]),
        ("sed -i '' -e 's|a|b|' conf.ini", ["conf.ini"]),
        ("perl -pi -e 's/a/b/' notes.md", ["notes.md"]),
        ("echo done > status.txt 2>&1", ["status.txt"]),
        ("printf x >> log/app.log", ["log/app.log"]),
        ("npm test | tee -a out.log", ["out.log"]),
        ("touch a.txt && mkdir -p pkg/sub", ["a.txt"]),  # a folder is no file
        ("mkdir -p utils && mv tools-manager.ts utils/ && mv utils/config.ts .",
         ["tools-manager.ts", "utils/tools-manager.ts", "utils/config.ts", "config.ts"]),
        ("rm -rf build/ && cp -r templates/ out/site", ["build", "out/site"]),
        ("cd repo && sudo rm /etc/motd", ["/etc/motd"]),
        ("cat > gen.py <<'EOF'\nrm -rf /\nprint(1)\nEOF\npython gen.py", ["gen.py"]),
        ("patch lib.c fix.diff", ["lib.c"]),
        ("cd src\n# a -> b/c\nsed -i 's|a#b|c|' f.ts # then > nothing\necho a#b > out.txt", ["f.ts", "out.txt"]),
        ('git commit -m "fix #12" && rm z', ["z"]),
        ("ls -la && cat README.md | grep x", []),
        ("rm $TMP/*.o", []),
    ],
)
def test_bash_commands_name_the_files_they_change(command: str, paths: list[str]) -> None:
    assert changed_paths(command) == paths


def test_a_relative_name_of_a_file_a_tool_named_in_full_is_listed_once() -> None:
    edit = {"role": "assistant", "content": [{"type": "toolCall", "id": "e", "name": "edit",
                                              "arguments": {"path": "/w/src/utils/tools-manager.ts"}}]}
    bash = {"role": "assistant", "content": [{"type": "toolCall", "id": "b", "name": "bash",
                                              "arguments": {"command": "cd src && sed -i 's/a/b/' "
                                                            "utils/tools-manager.ts && rm -f stale.ts"}}]}
    facts = extract_facts([edit, bash])
    assert facts.modified_files == ("/w/src/utils/tools-manager.ts", "stale.ts")
    assert facts.bash_modified == ("stale.ts",)


def test_unbalanced_quotes_do_not_break_the_reader() -> None:
    assert changed_paths("rm 'half.txt") == []  # split on blanks; a quote-bearing word is no path
    assert changed_paths("rm 'half.txt && rm whole.txt") == ["whole.txt"]


# -- constraints by structure, in several languages ----------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Add a --verbose flag. Never touch the `legacy/` folder. Thanks!", ["Never touch the `legacy/` folder."]),
        ("Bitte den Parser umbauen. Keine neuen Abhängigkeiten einführen.", ["Keine neuen Abhängigkeiten einführen."]),
        ("Refais le module. Il ne faut jamais casser l'API publique.", ["Il ne faut jamais casser l'API publique."]),
        ("Arregla el test. Siempre usa comillas dobles.", ["Siempre usa comillas dobles."]),
        ("Переделай логгер. Никогда не логируй пароли.", ["Никогда не логируй пароли."]),
        ("请重构这个函数。不要修改公共接口。", ["不要修改公共接口。"]),
        ("関数を整理して。外部ライブラリは使わないでください。", ["外部ライブラリは使わないでください。"]),
        ("리팩터링 해줘. 절대 테스트를 지우지 마세요.", ["절대 테스트를 지우지 마세요."]),
    ],
)
def test_constraints_are_found_in_any_language(message: str, expected: list[str]) -> None:
    found = constraint_sentences(message)
    assert all(e in found for e in expected), found


def test_emphasis_quotes_and_request_lists_are_cues() -> None:
    text = (
        "Port the cache. **Tabs for indentation**.\n"
        'The name has to be "fast-cache".\n'
        "Requirements:\n- Python 3.11 only\n- keep the old CLI\n- green CI"
    )
    found = constraint_sentences(text)
    assert "**Tabs for indentation**." in found
    assert 'The name has to be "fast-cache".' in found
    assert {"Python 3.11 only", "keep the old CLI", "green CI"} <= set(found)


def test_the_whole_message_is_scanned_and_pasted_logs_are_not() -> None:
    filler = " ".join(f"Sentence {n} explains the background." for n in range(60))
    log = "\n".join(["$ make", "Error: must not be null", "x.c:3:1: error: expected ';' before '}' token"])
    found = constraint_sentences(f"{filler}\n{log}\nAnd never commit the build folder.")
    assert found[-1] == "And never commit the build folder." and len(found) == 61  # recall first: all directions
    assert not any("make" in f or "error" in f for f in found)
    assert "$ make" not in prose_of(log) and "```" not in prose_of("Fix it:\n```\nnever = 1\n```")


def test_chit_chat_and_plain_questions_are_not_constraints() -> None:
    assert constraint_sentences("wow nice") == []
    assert constraint_sentences("Why does it fail on CI?") == []
    assert constraint_sentences("Should we never retry?") == ["Should we never retry?"]  # a strong cue in a question


# -- the last error and its decisive lines -------------------------------------------


def test_a_long_error_keeps_its_tail_the_failing_test_and_the_assertion() -> None:
    noise = [f"tests/test_{n}.py ....." for n in range(80)]
    tail = [
        "FAILED tests/test_cache.py::test_eviction - AssertionError: assert 3 == 2",
        "E       assert 3 == 2",
        "=========== 1 failed, 412 passed in 9.81s ===========",
    ]
    kept = decisive_lines("\n".join(["============ test session starts ============", *noise, *tail]))
    assert all(line in kept for line in tail)
    assert "tests/test_40.py" not in kept and kept.count("\n") < 20


def test_a_short_error_is_kept_whole() -> None:
    assert decisive_lines("error: no such file\n") == "error: no such file"


def test_the_last_error_is_the_newest_failure() -> None:
    messages = [
        calls(("1", "bash", {"command": "make"})),
        tool_result("1", "bash", "make: *** [all] Error 2", error=True),
        calls(("2", "bash", {"command": "cargo test"})),
        tool_result("2", "bash", "thread 'main' panicked at src/lib.rs:9:5:\nassertion failed: ok", error=True),
    ]
    facts = extract_facts(messages)
    assert facts.last_error.startswith("bash failed:") and "src/lib.rs:9:5" in facts.last_error
    assert "make: ***" not in facts.last_error


def test_a_failed_user_command_and_a_model_error_count() -> None:
    ran = {"role": "bashExecution", "command": "npm run lint", "output": "1 problem (1 error)", "exitCode": 1}
    assert "npm run lint" in extract_facts([ran]).last_error
    broke = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "overloaded_error"}
    assert extract_facts([ran, broke]).last_error == "model error: overloaded_error"


# -- files, request, identifiers ------------------------------------------------------


def test_files_from_tool_calls_codemode_and_bash() -> None:
    nested = {"calls": [{"name": "edit", "arguments": {"path": "src/deep.ts"}}, {"name": "read", "argumentsBytes": 9}]}
    messages = [
        calls(("1", "read", {"path": "README.md"}), ("2", "write", {"path": "src/new.ts"}),
              ("3", "bash", {"command": "git mv src/old.ts src/moved.ts"}), ("4", "read", {"path": "src/new.ts"})),
        tool_result("5", "codemode", "ok", nestedCalls=nested),
    ]
    facts = extract_facts(messages)
    assert facts.read_files == ("README.md",)
    assert facts.modified_files == ("src/new.ts", "src/old.ts", "src/moved.ts", "src/deep.ts")
    assert facts.bash_modified == ("src/old.ts", "src/moved.ts")


def test_the_latest_request_is_the_newest_user_message_that_says_something() -> None:
    assert latest_request(["Rename `Foo` to `Bar` everywhere", "ok"]) == "Rename `Foo` to `Bar` everywhere"
    assert latest_request(["first", "继续"]) == "继续"  # one word of a script without spaces counts


def test_identifiers_paths_versions_urls_symbols() -> None:
    text = "Bump `ruff` to 0.6.9, see https://example.org/notes. Fix parse_args() in ./cli/main.py (id `a1b2c3`)."
    assert list(identifiers_in(text)) == [
        "ruff", "0.6.9", "https://example.org/notes", "parse_args()", "./cli/main.py", "a1b2c3",
    ]


def test_extraction_is_deterministic() -> None:
    messages = [user("Keep `x` as is. Never rename y."), calls(("1", "bash", {"command": "rm a b c"}))]
    assert extract_facts(messages) == extract_facts(messages)


def test_the_file_facts_alone_are_the_full_extraction_s_three_lists() -> None:
    messages = [line["message"] for line in iter_lines(seed=4, entries=400) if line.get("type") == "message"]
    messages.append({"role": "bashExecution", "command": "echo done > build/status.txt", "output": ""})
    facts = extract_facts(messages)
    assert facts.modified_files and facts.bash_modified and facts.read_files
    assert file_facts(messages) == (facts.read_files, facts.modified_files, facts.bash_modified)
