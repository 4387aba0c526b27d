"""Structural cues in what people write: requirements, and the lines of an error that decide it.

Invariants:

* ``constraint_sentences(text)`` is recall first: it scans the whole message
  (fenced code and pasted logs skipped, :mod:`.segment`) and returns,
  verbatim and as written, every sentence or list item that directs the
  work — anything but a greeting or acknowledgement alone, a fragment of
  one word, or a question with no cue. A question counts when it carries a
  cue: a modal verb, a negation or a preference marker (small tables for
  many languages, none of them required, scripts without spaces matched
  without word boundaries), a request phrased as a question ("could you"),
  emphasis (``**bold**``, a closing ``!``) or a quoted requirement.
  An observation with no cue is no direction either (:func:`is_remark`: the
  user's guess or report — "I suspect …", "it seems …", "yesterday …" — or
  an acknowledgement followed by a few words judging the work, "Great, all
  green." — not "OK, use tabs."; at most ``REMARK_WORDS`` words).
  ``cue_strength`` grades a sentence by those cues (the size bound of
  :mod:`.facts` drops the uncued ones first).
* ``decisive_lines(text)``: a short text whole; a long one reduced to its
  first line, the report of its newest failure (from the line that starts
  it — a jest ``●`` test, a Rust test's output or panic, a rustc/tsc/gcc
  error, pytest's ``>`` line — to the end when it fits in ``BLOCK_LINES`` +
  ``TAIL_LINES``, else its first ``BLOCK_LINES`` lines), the last traceback
  location, its last ``TAIL_LINES`` non-blank lines whole and then the
  newest other lines naming an error, failure, assertion or failing test —
  verbatim, in their order, gaps marked ``…``, at most ``ERROR_LINES`` lines.
* Pure and deterministic.
"""

from __future__ import annotations

import re

from pi_sessiond.summarizers.segment import prose_of, units

ERROR_LINES = 48
BLOCK_LINES = 30
TAIL_LINES = 12
ERROR_LINE_CHARS = 300
SENTENCE_CHARS = 600
REMARK_WORDS = 12  # a longer sentence is read as a direction even when it reports
# Modal verbs, negations and preference markers, several languages; a hit in any one is a cue.
_STRONG = (
    r"must|mustn't|never|always|don't|do not|does not|shall|should|shouldn't|required?|mandatory|forbidden|"
    r"has to|have to|need to|needs to|make sure|ensure|under no circumstances|at most|at least|no more than|"
    r"only|avoid|prefer(?:ably)?|rather than|instead of|stick to|keep|without|off-limits|strictly|exactly|"
    r"muss|müssen|musst|darf|dürfen|soll|sollte|niemals|nie|immer|nur|kein|keine|keinen|ohne|unbedingt|"
    r"vermeide|lieber|stets|doit|doivent|dois|faut|jamais|toujours|seulement|uniquement|sans|évite[rz]?|"
    r"plutôt|surtout|debe|deben|debes|nunca|siempre|solo|sólo|sin|evita[r]?|hay que|tienes que|tiene que|"
    r"asegúrate|deve|devi|devono|mai|sempre|soltanto|senza|bisogna|assicurati|não|apenas|somente|sem|"
    r"evite|moet|moeten|nooit|altijd|alleen|geen|zonder|vermijd|musi|musisz|nigdy|zawsze|tylko|bez|unikaj|"
    r"måste|aldrig|alltid|bara|utan|skal|aldri|alltid|kun|asla|sadece|yalnızca|mutlaka|"
    r"должен|должна|должны|нужно|надо|нельзя|никогда|всегда|только|без|избегай|обязательно|"
    r"повинен|потрібно|ніколи|завжди|лише|тільки"
)
_WEAK = r"not|no|please|bitte|nicht|pas|ne|non|nie|не|per favore|por favor|s'il te plaît|veuillez|proszę|пожалуйста"
_WORDY = re.compile(rf"(?<![\w'])(?:{_STRONG})(?![\w'])", re.I)
_WEAK_WORDY = re.compile(rf"(?<![\w'])(?:{_WEAK})(?![\w'])", re.I)
_UNSPACED = re.compile(
    r"必须|必需|务必|一定要|不要|不能|不可|不许|禁止|别|总是|始终|只能|只用|仅|应该|避免|请|"
    r"必ず|しないで|ないでください|ないこと|禁止|常に|いつも|だけ|のみ|べき|なければ|ください|避け|"
    r"반드시|하지 마|마세요|말고|항상|절대|해야|금지|주세요|만 사용"
)
# A request phrased as a question ("could you …") directs the work as much as an imperative.
_ASKING = re.compile(
    r"^(?:(?:and|also|so|then|und|y|et)\s+)?(?:could|can|would|will) (?:you|we)\b|^(?:kannst|könntest|würdest) du\b|"
    r"^(?:können|könnten|würden) (?:sie|wir)\b|^(?:¿\s*)?(?:puedes|podrías|podemos|puede|podría)\b|"
    r"^(?:peux|pourrais|pouvez|pourriez|pourrait|peut)[- ]|^(?:puoi|potresti)\b|"
    r"(?:ますか|ませんか|でしょうか|いただけますか|もらえますか)[?？]?$",
    re.I,
)
# Greetings and acknowledgements (several languages): a sentence of nothing else is chatter.
_ACK = re.compile(
    r"(?<!\w)(?:thanks?(?: you)?|thx|ok(?:ay)?|great|cool|nice|perfect|awesome|good|fine|sure|yes|yep|right|wow|"
    r"alright|hi|hello|hey|morning|sounds good|got it|looks good|lgtm|danke(?: schön)?|super|prima|gut|klasse|"
    r"passt|hallo|moin|ja|genau|gracias|vale|perfecto|genial|hola|bien|sí|merci|parfait|d'accord|bonjour|salut|"
    r"oui|grazie|ciao|perfetto|obrigad[oa]|спасибо|ありがとう(?:ございます)?|了解(?:です)?|おはよう(?:ございます)?|"
    r"こんにちは|いいですね|はい|谢谢|好的)(?!\w)",
    re.I,
)
_EMPHASIS = re.compile(r"\*\*[^*]+\*\*|__[^_]+__|!\s*$|！\s*$")
_QUOTED = re.compile(r"[\"“„«「『‘]([^\"”“»」』’]{3,})[\"”“»」』’]")
DECISIVE = re.compile(
    r"error|exception|fail|assert|panic|fatal|traceback|expected|received|✕|✗|×|^\s*E\s{2,}|not ok|"
    r"^\s*-->|^\s*File \"|^\s*at \S+ \(|undefined|cannot|can't|denied|refused|missing|invalid|"
    r"no such|not found|timed? ?out|segmentation|abort|●|^\s*(?:left|right)\s*:",
    re.I,
)
# The line that starts the report of one failure (the newest one is kept whole, up to BLOCK_LINES):
# a jest test, a Rust test's output, a compiler error (rustc, tsc, gcc/clang), a panic,
# pytest's failing line. Not the closing "error: test failed" / "could not compile" lines.
_ANCHOR = re.compile(
    r"^\s*●\s|^-{4} .+ -{4}$|^thread '.*' panicked|^panic: |^>\s{3,}\S"
    r"|^error(?:\[\w+\])?: (?!test failed|could not compile|aborting)|^\S+\(\d+,\d+\): error\b"
    r"|^\S+:\d+:\d+: (?:fatal )?error\b"
)


def _strength(sentence: str, listed: bool) -> int:
    """0: no cue; 1: a weak cue (a negation, a politeness marker, a list item); 2: a strong one."""
    bare = re.sub(r"`[^`]*`", "", sentence)
    if _WORDY.search(bare) or _UNSPACED.search(bare) or _EMPHASIS.search(bare):
        return 2
    if _QUOTED.search(bare) and len(bare.split()) >= 3:
        return 2
    return 1 if _WEAK_WORDY.search(bare) or _ASKING.search(bare) or listed else 0


def cue_strength(sentence: str) -> int:
    """How strongly ``sentence`` marks itself as a requirement: 0 (no cue), 1 (weak), 2 (strong)."""
    return _strength(sentence, False)


def _chatter(sentence: str) -> bool:
    """A greeting or acknowledgement and nothing more (at most one other word)."""
    rest = _ACK.sub(" ", sentence.lower())
    return rest != sentence.lower() and len(re.findall(r"\w+", rest)) <= 1 and len(rest.strip(" ,.!?、。！？")) <= 12


# What the user believes, guesses or saw: a report, not a direction (several languages).
_OBSERVED = re.compile(
    r"^(?:i|we)(?: just| also)? (?:suspect|think|guess|believe|wonder|noticed|saw|checked|looked|tried|ran|feel|"
    r"assume|bet|doubt)\b|\b(?:seems?|seemed|looks like|looked|apparently|probably|maybe|perhaps|yesterday|"
    r"last (?:night|week)|this morning|looks (?:fine|good|right|ok|great)|"
    r"(?:it|everything|all|that|this) (?:works|worked|passes|passed|is green|runs))\b|"
    r"^ich (?:vermute|glaube|denke|schätze|habe|sah)\b|"
    r"\b(?:vielleicht|wahrscheinlich|anscheinend|scheint|gestern)\b|^(?:sospecho|creo|supongo|pienso|vi|noté)\b|"
    r"\b(?:quizás|tal vez|probablemente|parece|ayer)\b|^je (?:soupçonne|pense|crois|suppose|vois|ai vu|ai remarqué)\b|"
    r"\b(?:peut-être|probablement|semble)\b|と思います|かもしれ|たぶん|おそらく|ようです|みたいです|"
    r"我觉得|我猜|好像|似乎",
    re.I,
)
# What an acknowledgement says about the work ("all green", "it works"): with one, "OK, …" is a remark;
# without ("OK, use tabs.") it may well be a direction.
_VERDICT = re.compile(
    r"(?<!\w)(?:green|grün|verde|vert|works?|worked|pass(?:es|ed)?|fine|good|great|nice|done|correct|right|"
    r"perfect|better|clean|funktioniert|funciona|marche|fonctionne|passt|ok)(?!\w)|通り|動|成功|できました",
    re.I,
)
_ACK_LED = re.compile(rf"^{_ACK.pattern}[\s,!.、，]+", re.I)


def is_remark(sentence: str) -> bool:
    """An observation or an acknowledgement with a remark (module invariants): no cue, so no direction."""
    if _strength(sentence, False) > 0 or len(sentence.split()) > REMARK_WORDS:
        return False
    if _OBSERVED.search(sentence):
        return True
    rest = _ACK_LED.sub("", sentence, count=1)
    return rest != sentence and len(re.findall(r"\w+", rest)) <= 5 and _VERDICT.search(rest) is not None


def _question(sentence: str) -> bool:
    return sentence.rstrip(" \"”»」』)）").endswith(("?", "？"))


def constraint_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that direct the work (module invariants), verbatim, as written."""
    all_units = list(units(prose_of(text)))
    items = sum(listed for _, listed in all_units)
    found: list[str] = []
    for sentence, listed in all_units:
        if len(sentence) < 4 or (len(re.findall(r"\w+", sentence)) < 2 and sentence.isascii()) or _chatter(sentence):
            continue
        if _question(sentence) and _strength(sentence, listed and items >= 2) == 0:
            continue
        if not listed and is_remark(sentence):
            continue
        found.append(sentence if len(sentence) <= SENTENCE_CHARS else sentence[:SENTENCE_CHARS].rstrip() + "…")
    return found


def decisive_lines(text: str) -> str:
    """The lines of an error output that decide it (module invariants)."""
    lines = [ln.rstrip() for ln in text.strip().splitlines()]
    if len(lines) <= ERROR_LINES and len(text) <= 4 * ERROR_LINE_CHARS:
        return "\n".join(lines)
    nonblank = [n for n, ln in enumerate(lines) if ln.strip()]
    chosen = set(nonblank[:1]) | set(nonblank[-TAIL_LINES:])
    anchors = [n for n in nonblank if _ANCHOR.match(lines[n])]
    if anchors:
        after = [n for n in nonblank if n >= anchors[-1]]
        chosen |= set(after[:BLOCK_LINES] if len(after) > BLOCK_LINES + TAIL_LINES else after)
    locations = [n for n in nonblank if re.match(r'\s*File "|\s*at |\s*-->', lines[n])]
    chosen |= set(locations[-1:])
    marked = [n for n in nonblank if DECISIVE.search(lines[n]) and n not in chosen]
    room = ERROR_LINES - len(chosen)
    chosen |= set(marked[-room:]) if room > 0 else set()
    out: list[str] = []
    previous = -1
    for n in sorted(chosen):
        if previous >= 0 and n > previous + 1:
            out.append("…")
        line = lines[n]
        out.append(line if len(line) <= ERROR_LINE_CHARS else line[:ERROR_LINE_CHARS] + "…")
        previous = n
    return "\n".join(out)
