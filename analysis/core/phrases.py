"""Key phrases for misbehaviour names, and the words no name may carry.

A name needs a short phrase that most of a cluster's steps say and few other steps do:
"please provide your reservation id", "let me verify the results". It is mined from the
members' *masked* text (:mod:`analysis.core.masking`): word n-grams that never cross a
placeholder or a punctuation mark, scored by the share of members that contain them
times the share of the n-gram's occurrences that fall in this cluster (how distinctive
it is), with a small bonus per content word so a fuller phrase wins over a fragment.

Issue 12's rule for names is literal: no name contains a word that occurs in fewer than
5% of the project's task texts but in the task text of one of its members.
:class:`NameVocabulary` counts every word of the distinct task texts (stop words
included, the way the rule reads), and :meth:`NameVocabulary.forbidden` gives, for a
cluster, the words its name must avoid. :func:`scrub` cuts such words out of a phrase.

Example:
    >>> docs = {0: ["Please provide your reservation id now."] * 3,
    ...         1: ["Let me verify the results first."] * 3}
    >>> key_phrases(docs)
    {0: 'provide your reservation id', 1: 'let me verify the results'}
    >>> others = [f"fly home{'!' * i}" for i in range(30)]  # 30 distinct texts
    >>> vocabulary = NameVocabulary.from_texts(["fly to Lisbon", *others])
    >>> sorted(vocabulary.forbidden(["fly to Lisbon"]))
    ['lisbon', 'to']
    >>> scrub("flights to lisbon are full", {"lisbon"})
    'flights to … are full'
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

#: The rule's threshold: a word in fewer than this share of the task texts is rare.
RARE_TASK_SHARE = 0.05
MIN_WORDS = 2
MAX_WORDS = 6
#: Each cluster's phrase is mined from at most this many members, the tokens of each
#: from its first ``MAX_TOKENS``: names stay linear in the number of steps at 100k.
MAX_DOCS = 120
MAX_TOKENS = 80
#: A phrase must be said by at least this share of the members (and by two of them):
#: the bar the distinctive terms of :mod:`analysis.core.profiles` already use.
MIN_MEMBER_SHARE = 0.1
PHRASE_WORDS = 7

# A name's words, as the rule reads them: snake_case identifiers are one word.
NAME_TOKEN = re.compile(r"[A-Za-z0-9_']+")
# Runs of words; placeholders, punctuation, brackets, "=" and "…" end a run.
_RUN = re.compile(r"[A-Za-z][A-Za-z'-]*(?:\s+[A-Za-z][A-Za-z'-]*)*")
_PLACEHOLDER = re.compile(r"<[a-z*][a-z-]*>")
# Words of every step text (roles, kinds, separators): a phrase of them names nothing.
_FRAME = frozenset(
    {"assistant", "user", "tool", "system", "message", "request", "observation", "call"}
    | {"calls", "result", "agent", "null", "none", "true", "false", "https", "http", "www"}
    | {"step", "steps", "task", "tasks", "signals", "error", "diagnosis", "tool_call"}
)

# Stop words a phrase may end on: "does not add up", "is not enough".
_PARTICLES = frozenset({"up", "out", "down", "off", "back", "not", "enough", "again"})
# A negation may start a phrase, and no phrase starts right after one: "so no need to run
# the verifier" must not be named "need to run the verifier", which says the opposite.
_NEGATIONS = frozenset({"no", "not", "never", "nothing", "cannot", "without", "nor", "neither"})


def _negation(token: str) -> bool:
    return token in _NEGATIONS or token.endswith("n't")


def words_of(text: str) -> set[str]:
    """The words of a text as the name rule reads them, lower case, with snake_case
    identifiers both whole and split into their parts.

    >>> sorted(words_of("Paintball_Expert says: it's done"))
    ['done', 'expert', "it's", 'paintball', 'paintball_expert', 'says']
    """
    found: set[str] = set()
    for token in NAME_TOKEN.findall(text or ""):
        token = token.lower().strip("'_")
        if token:
            found.add(token)
            found.update(part for part in token.split("_") if part and part != token)
    return found


@dataclass
class NameVocabulary:
    """How many of the project's distinct task texts hold each word (every word)."""

    tasks: int = 0
    document_frequency: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> NameVocabulary:
        vocabulary = cls()
        for text in sorted({text for text in texts if text}):
            vocabulary.tasks += 1
            vocabulary.document_frequency.update(words_of(text))
        return vocabulary

    def forbidden(self, member_task_texts: Iterable[str]) -> set[str]:
        """Words of the members' task texts that are rare across the project's tasks."""
        limit = RARE_TASK_SHARE * self.tasks
        found: set[str] = set()
        for text in set(member_task_texts):
            found |= {
                word for word in words_of(text) if self.document_frequency.get(word, 0) < limit
            }
        return found


def is_clean(text: str, forbidden: Collection[str]) -> bool:
    """True when no word of ``text`` (a snake_case identifier read whole) is forbidden.

    >>> is_clean("Calls book_reservation", {"book"}), is_clean("Books to Lisbon", {"lisbon"})
    (True, False)
    """
    return not any(token.lower().strip("'_") in forbidden for token in NAME_TOKEN.findall(text))


def scrub(phrase: str, forbidden: Collection[str]) -> str:
    """The phrase with a forbidden word replaced by "…"; when more than one is, the
    longest stretch of the phrase free of them (a phrase riddled with gaps reads as
    nothing).

    >>> scrub("payment amount does not add up, total price is", {"does", "add", "price"})
    'payment amount …'
    """
    if not forbidden:
        return phrase
    hits = [m for m in NAME_TOKEN.finditer(phrase) if m.group(0).lower().strip("'_") in forbidden]
    if not hits:
        return phrase
    if len(hits) == 1:
        hit = hits[0]
        cut = f"{phrase[: hit.start()]}…{phrase[hit.end() :]}"
        return re.sub(r"\s+", " ", re.sub(r"…(?:[\s,;:]*…)+", "…", cut)).strip()
    marked = NAME_TOKEN.sub(
        lambda m: "…" if m.group(0).lower().strip("'_") in forbidden else m.group(0), phrase
    )
    pieces = [piece.strip(" ,;:.") for piece in marked.split("…")]
    at, longest = max(
        enumerate(pieces), key=lambda item: (len(NAME_TOKEN.findall(item[1])), -item[0])
    )
    text = longest
    if not text:
        return ""
    return f"{'… ' if at > 0 else ''}{text}{' …' if at < len(pieces) - 1 else ''}"


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _ngrams(text: str, stop: frozenset[str], banned: Collection[str]) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    budget = MAX_TOKENS
    for run in _RUN.findall(_PLACEHOLDER.sub(" . ", text)):
        tokens = run.lower().split()[:budget]
        budget -= len(tokens)
        for start in range(len(tokens)):
            if start and _negation(tokens[start - 1]):
                continue
            if tokens[start] in banned or (tokens[start] in stop and not _negation(tokens[start])):
                continue
            for end in range(start + MIN_WORDS, min(start + MAX_WORDS, len(tokens)) + 1):
                gram = tuple(tokens[start:end])
                if gram[-1] in banned:
                    break  # every longer gram holds it too
                if gram[-1] in stop and gram[-1] not in _PARTICLES:
                    continue
                grams.add(gram)
        if budget <= 0:
            break
    return grams


def phrases_of(text: str, banned: Collection[str] = ()) -> set[str]:
    """The candidate key phrases of one text (as :func:`key_phrases` mines them), none
    holding a ``banned`` word.

    >>> sorted(phrases_of("Let me verify the totals now.", {"now"}))
    ['let me verify', 'let me verify the totals', 'verify the totals']
    >>> sorted(phrases_of("So no need to verify."))
    ['no need', 'no need to verify']
    """
    words = {word.lower() for word in banned} | _FRAME
    return {" ".join(gram) for gram in _ngrams(text, _stop_words(), words)}


def spread_sample(items: Sequence[T], size: int = MAX_DOCS) -> list[T]:
    """At most ``size`` items, evenly spaced: the same ones every time.

    >>> spread_sample(list(range(10)), 4)
    [0, 2, 5, 7]
    """
    if len(items) <= size:
        return list(items)
    step = len(items) / size
    return [items[int(i * step)] for i in range(size)]


def key_phrases(
    docs_by_class: Mapping[int, Sequence[str]],
    *,
    exclude: Mapping[int, Collection[str]] | None = None,
    class_sizes: Mapping[int, int] | None = None,
) -> dict[int, str]:
    """The key phrase of each class ("" when none is shared enough), see the module doc
    and :func:`key_phrases_with_shares` for the arguments."""
    found = key_phrases_with_shares(docs_by_class, exclude=exclude, class_sizes=class_sizes)
    return {label: phrase for label, (phrase, _) in found.items()}


def key_phrases_with_shares(
    docs_by_class: Mapping[int, Sequence[str]],
    *,
    exclude: Mapping[int, Collection[str]] | None = None,
    class_sizes: Mapping[int, int] | None = None,
) -> dict[int, tuple[str, float]]:
    """The key phrase of each class and the share of its (sampled) members that say it
    (``("", 0.0)`` when none is shared enough): a name must not pass off a phrase a
    tenth of the members say as what they all do.

    >>> key_phrases_with_shares({0: ["let me verify the totals"] * 3 + ["ok"] * 7})
    {0: ('let me verify the totals', 0.3)}

    ``exclude`` holds, per class, words its phrase must not contain (its members' task
    entities). Classes with negative labels (noise) count for distinctiveness only.
    ``class_sizes`` are the sizes of the classes the docs are a sample of: each doc
    then stands for its share of its class, so a large class sampled down still weighs
    what it holds when a phrase's distinctiveness is counted.
    """
    stop = _stop_words()
    counts: dict[int, Counter[tuple[str, ...]]] = {}
    sizes: dict[int, int] = {}
    overall: dict[tuple[str, ...], float] = defaultdict(float)  # weighted counts
    weight: dict[int, float] = {}
    for label, docs in docs_by_class.items():
        chosen = spread_sample(docs)
        banned = {word.lower() for word in (exclude or {}).get(label, ())} | _FRAME
        counter: Counter[tuple[str, ...]] = Counter()
        for doc in chosen:
            counter.update(_ngrams(doc, stop, banned))
        counts[label] = counter
        sizes[label] = len(chosen)
        stands_for = (class_sizes or {}).get(label, len(chosen)) / max(len(chosen), 1)
        weight[label] = max(stands_for, 1.0)
        for gram, count in counter.items():
            overall[gram] += count * weight[label]
    phrases: dict[int, tuple[str, float]] = {}
    for label, counter in counts.items():
        if label < 0:
            continue
        needed = max(2.0, MIN_MEMBER_SHARE * sizes[label])
        best: tuple[float, tuple[str, ...]] | None = None
        for gram, count in counter.items():
            if count < needed:
                continue
            content = sum(1 for word in gram if word not in stop)
            precision = count * weight[label] / overall[gram]
            score = (count / sizes[label]) * precision * (1 + 0.15 * content)
            candidate = (-round(score, 9), gram)
            if best is None or candidate < best:
                best = candidate
        if best is None:
            phrases[label] = ("", 0.0)
        else:
            share = counter[best[1]] / max(sizes[label], 1)
            phrases[label] = (" ".join(best[1][:PHRASE_WORDS]), round(share, 4))
    return phrases
