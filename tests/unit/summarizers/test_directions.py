"""User directions are carried recall first, cut into sentences in any script, bounded with a count (own examples).

None of these phrasings come from the fidelity suite's held-out list; they are written for these tests.
"""

from __future__ import annotations

import pytest

from pi_sessiond.summarizers.cues import constraint_sentences, cue_strength
from pi_sessiond.summarizers.facts import LEFT_OUT, SUPERSEDED, bounded, extract_facts
from pi_sessiond.summarizers.segment import pasted_of, prose_of, sentences, units

# -- cutting a line into sentences ------------------------------------------------------------


@pytest.mark.parametrize(("line", "expected"), [
    ("Ship it on Monday. The old cron stays off.", ["Ship it on Monday.", "The old cron stays off."]),
    ("Use tabs; spaces break the linter.", ["Use tabs; spaces break the linter."]),  # never at ";"
    ('The banner reads "Back soon. Really." Keep the colour.', ['The banner reads "Back soon. Really."',
                                                                 "Keep the colour."]),
    ("Call `cfg.load(). reset()` first. Then retry.", ["Call `cfg.load(). reset()` first.", "Then retry."]),
    ("Pick a region (e.g. eu-west. Or us-east) now. Done.", ["Pick a region (e.g. eu-west. Or us-east) now.",
                                                              "Done."]),
    ("Nimm z.B. die zweite Variante. Danach testen!", ["Nimm z.B. die zweite Variante.", "Danach testen!"]),
    ("Usa fechas ISO, p. ej. 2030-02-01. Nada más.", ["Usa fechas ISO, p. ej. 2030-02-01.", "Nada más."]),
    ("Version 1.5 is fine. see the notes", ["Version 1.5 is fine. see the notes"]),  # no capital: no cut
    ("ログは残してください。「完了。」と表示すること。次へ",
     ["ログは残してください。", "「完了。」と表示すること。", "次へ"]),
    ("缓存不要清空。每天备份一次！", ["缓存不要清空。", "每天备份一次！"]),
    ("Не трогай схему. Пиши тесты?", ["Не трогай схему.", "Пиши тесты?"]),
])
def test_a_line_is_cut_at_sentence_ends_only(line: str, expected: list[str]) -> None:
    assert sentences(line) == expected
    assert " ".join(sentences(line)).replace(" ", "") == line.replace(" ", "")  # nothing lost, nothing added


def test_list_items_stay_whole_and_quoted_prose_is_read() -> None:
    text = "Rules:\n- keep v1 alive. Really.\n2) no new deps\n・日付はUTC\n> The API stays frozen until May.\n" \
           ">       assert 1 == 2"
    assert list(units(prose_of(text))) == [("Rules:", False), ("keep v1 alive. Really.", True),
                                           ("no new deps", True), ("日付はUTC", True),
                                           ("The API stays frozen until May.", False)]


def test_pasted_code_and_diagnostics_are_not_prose() -> None:
    text = ("Here it is:\n```\nfor x in y: pass\n```\nsrc/a.ts(3,7): error TS2322: nope\n"
            "lib/b.c:9:2: error: expected ';'\n    at run (x.js:1:2)\nat least one reviewer signs off")
    assert prose_of(text).split() == ["Here", "it", "is:", "at", "least", "one", "reviewer", "signs", "off"]
    assert "for x in y: pass" in pasted_of(text) and "error TS2322" in pasted_of(text)


def test_an_unfenced_pasted_log_is_not_prose() -> None:
    log = "\n".join(["❯ ./run --check", "node:fs:443", "  throw err;", "errno: -2,", "code: 'ENOENT',",
                     "detail: \"no such file\"", '{"error":{"type":"bad_request"}}', "PS C:\\work> make"])
    assert prose_of(f"Running it gives:\n{log}\nNode v24 here. Keep the old path working.") == \
        "Running it gives:\nNode v24 here. Keep the old path working."


# -- recall first ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "The export runs at 02:00 UTC from now on.",            # a plain statement: it directs the work
    "Der Bericht geht jeden Freitag an das Controlling.",
    "Los importes se redondean a dos decimales.",
    "Le fichier garde son nom actuel.",
    "出力ファイルの名前はそのままです。",
    "日志文件放在 /var/log/ledger 下。",
    "設定はconfig/app.tomlに書いてください。",               # no spaces, a path inside: still prose
    "キーはtenant=acmeのままにしてください。",
    "모든 금액은 원 단위로 표시합니다.",
    "Отчёт уходит в девять утра.",
    "O relatório sai às nove.",
    "Il rapporto esce alle nove.",
    "Could you keep the old endpoint for a month?",          # a request phrased as a question
    "¿Puedes dejar el cron como respaldo?",
    "Kannst du die Migration in zwei Schritten machen?",
    "Should we never retry on 4xx?",                         # a question with a strong cue
])
def test_every_sentence_that_directs_the_work_is_kept_verbatim(text: str) -> None:
    assert constraint_sentences(f"Thanks! {text}" if text.isascii() else text) == [text]


@pytest.mark.parametrize("text", [
    "Thanks!", "OK, great.", "Perfect, thanks.", "Danke schön.", "¡Gracias!", "Merci, parfait.",
    "ありがとうございます。", "Why does it hang on CI?", "Was macht diese Funktion?", "Go",
])
def test_greetings_acknowledgements_and_plain_questions_are_not(text: str) -> None:
    assert constraint_sentences(text) == []


@pytest.mark.parametrize(("text", "kept"), [
    ("I suspect the cache is stale.", []), ("Great, all green.", []), ("The build looked odd last night.", []),
    ("Ich vermute, es liegt am Cache.", []), ("たぶんキャッシュの問題だと思います。", []),
    ("OK, use tabs.", ["OK, use tabs."]),  # an acknowledgement before a direction: still a direction
    ("I think we should never retry on 4xx.", ["I think we should never retry on 4xx."]),  # a cue wins
])
def test_observations_are_no_directions(text: str, kept: list[str]) -> None:
    assert constraint_sentences(text) == kept


def test_positions_are_kept_and_repeats_dropped_across_messages() -> None:
    messages = [{"role": "user", "content": "Keep the CSV header. Thanks!\n\n```\nrm -rf /\n```\nRound down."},
                {"role": "user", "content": "keep the  csv header. Tag the release as v3."}]
    assert extract_facts(messages).constraints == ("Keep the CSV header.", "Round down.",
                                                   "Tag the release as v3.")


def test_cue_strength_grades_sentences() -> None:
    assert cue_strength("Never log card numbers.") == 2
    assert cue_strength("Bitte die Tabelle sortieren.") == 1
    assert cue_strength("The report goes out at nine.") == 0


# -- the size bound ----------------------------------------------------------------------------


def test_the_bound_drops_superseded_then_uncued_items_oldest_first_and_counts_them() -> None:
    items = [f"Old rule {n}{SUPERSEDED}" for n in range(2)] + [f"Plain note number {n}." for n in range(3)]
    items += ["Never drop the audit table.", "Always sign the export."]
    limit = sum(len(i) for i in items[-3:])
    kept = bounded(items, limit)
    assert kept == ["Plain note number 2.", "Never drop the audit table.", "Always sign the export.",
                    f"{LEFT_OUT}4"]
    assert bounded(items, 10_000) == items  # under the bound nothing changes
    # a carried count adds up with the new one
    assert bounded([f"{LEFT_OUT}5", *items], limit)[-1] == f"{LEFT_OUT}9"


# -- an error the user pasted ----------------------------------------------------------------------


def test_an_error_pasted_by_the_user_is_the_last_error() -> None:
    paste = "\n".join(["Traceback (most recent call last):", '  File "app.py", line 3, in <module>',
                       "    main()", "KeyError: 'tenant'"])
    facts = extract_facts([{"role": "user", "content": f"It fails on staging:\n```\n{paste}\n```\nFix it."}])
    assert facts.last_error.startswith("error the user pasted:") and "KeyError: 'tenant'" in facts.last_error
    assert extract_facts([{"role": "user", "content": "The error page must say: try again later."}]).last_error == ""


def test_over_many_compactions_the_directions_stay_bounded_with_one_count() -> None:
    from pi_sessiond.pipeline.requests import HISTORY_HEADINGS
    from pi_sessiond.summarizers.base import SummaryRequest
    from pi_sessiond.summarizers.carry import carry_forward
    from pi_sessiond.summarizers.gate import repair
    from pi_sessiond.summarizers.offline import build_summary

    previous: str | None = None
    for n in range(12):
        said = " ".join(f"Round {n} note {k}: the ledger table {k} keeps its {n}th column as is." for k in range(60))
        messages = ({"role": "user", "content": said + " Never rename the ledger."},)
        request = SummaryRequest(system_prompt="", prompt="", max_tokens=20_000, messages=messages,
                                 previous_summary=previous)
        facts = carry_forward(extract_facts(messages), previous, messages)
        previous = repair(build_summary(request), facts, "history", HISTORY_HEADINGS).text
    section = previous.split("## Constraints & Preferences\n", 1)[1].split("\n\n", 1)[0]
    assert section.count(LEFT_OUT) == 1 and len(section) < 20_000
    assert "Never rename the ledger." in section  # a cued direction outlives the uncued ones
    assert int(section.split(LEFT_OUT, 1)[1].split()[0].strip(")")) > 400
