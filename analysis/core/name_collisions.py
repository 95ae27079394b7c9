"""No two misbehaviours of a project carry the same name: the one home of that rule.

A name summarises a cluster (:mod:`analysis.core.naming`); two clusters can summarise
the same way ("Calls get_reservation_details") and still be different situations: one
where the agent looks a reservation up right after the user gave its id, one where it
walks through the user's reservations one result after another. When base names
collide, each colliding cluster gets the part that tells it apart, computed from its
members: the **trait** most of its members have and most members of each other
cluster of that name do not (of as many of them as possible). Traits, in the order they are preferred when they
separate equally well:

1. a behaviour signal ("repeating an earlier action", "without the user's confirmation");
2. the error template the members drew ("(flight … not available on date …)");
3. what came just before the step (``WrongStep.preceded_by``: "right after an error",
   "right after the user's message", "right after a get_user_details result");
4. where the tool arguments came from ("with a value the user gave");
5. a masked key phrase the members say ("(“provide your user id”)").

Every trait's wording must pass issue 12's name rule for that cluster (no word that is
rare across the project's tasks but in a member's task text). A cluster no trait sets
apart keeps the bare name if it is the only one; otherwise, as a last resort, all but
the largest of those still sharing a name get a neutral ordinal, "(2)", "(3)", by size. A name that collides with nothing
is never changed.

Example:
    >>> names = distinct_names([
    ...     NamedCluster(1, "Calls search", [{"after:user"}, {"after:user"}], size=2),
    ...     NamedCluster(2, "Calls search", [{"after:error"}, {"after:error"}], size=2),
    ...     NamedCluster(3, "Calls book", [set()], size=1)])
    >>> names[1], names[2], names[3]
    ("Calls search right after the user's message", 'Calls search right after an error', 'Calls book')
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from analysis.core.naming import PHRASES, after_wordings, signal_wordings, template_phrase
from analysis.core.phrases import is_clean, phrases_of, spread_sample
from analysis.core.representation import StepRepresenter
from analysis.core.steps import WrongStep
from attribution.core.provenance import ORIGIN_WORDS

#: A trait describes a cluster when at least this share of its members has it, and
#: fails to describe another when fewer than this share of that one's members do.
DOMINANT = 0.5
NAME_CHARS = 200

SIGNAL, TEMPLATE, AFTER, SOURCE, PHRASE = "signal", "template", "after", "source", "phrase"
PRIORITY = {SIGNAL: 0, TEMPLATE: 1, AFTER: 2, SOURCE: 3, PHRASE: 4}

# attribution.core.provenance's sources, as a clause of a name.
SOURCE_WORDS = {source: f"with a value {words}" for source, words in ORIGIN_WORDS.items()}


@dataclass
class NamedCluster:
    """A cluster's base name, its members' traits (``"kind:value"`` strings, see the
    module doc) and the words its name must not contain."""

    label: int
    name: str
    traits: list[set[str]]
    size: int = 0
    forbidden: frozenset[str] = frozenset()
    # "kind:value" -> its wording, for traits whose wording is not derived from the key
    # (templates and phrases are worded by the caller).
    wording: dict[str, str] = field(default_factory=dict)


def member_traits(
    cluster_steps: Sequence[WrongStep],
    representer: StepRepresenter,
    forbidden: Collection[str] = (),
    banned: Collection[str] = (),
) -> tuple[list[set[str]], dict[str, str]]:
    """The traits of (an even sample of) a cluster's members, and the wording of those
    worded here: error templates, key phrases (signal clauses are naming's). ``forbidden`` are the
    words the cluster's name must not hold; ``banned`` more words no phrase may hold
    (the tool's name, the members' task entities)."""
    traits: list[set[str]] = []
    wording: dict[str, str] = {}
    for step in spread_sample(list(cluster_steps)):
        found = {f"{SIGNAL}:{name}" for name in step.signals if name in PHRASES}
        template = representer.template(step)
        if template:
            found.add(f"{TEMPLATE}:{template}")
            phrase = template_phrase(template, forbidden)
            if phrase:
                wording[f"{TEMPLATE}:{template}"] = f"({phrase})"
        if step.preceded_by:
            found.add(f"{AFTER}:{step.preceded_by}")
        found.update(f"{SOURCE}:{source}" for _, source in step.arg_sources)
        excluded = {*forbidden, *banned} | representer.task_words(step)
        for phrase in phrases_of(representer.phrase_text(step), excluded):
            found.add(f"{PHRASE}:{phrase}")
            wording[f"{PHRASE}:{phrase}"] = f"(“{phrase}”)"
        traits.append(found)
    return traits, wording


def wordings(trait: str, cluster: NamedCluster) -> list[str]:
    """How a trait can be said in a name, the preferred first (only the clean ones)."""
    kind, _, value = trait.partition(":")
    if trait in cluster.wording:
        candidates = [cluster.wording[trait]]
    elif kind == SIGNAL:
        clauses = [clause for _, _, clause in signal_wordings(value)]
        # A name that says the signal in one wording must not say it again in another.
        said = any(clause.lower() in cluster.name.lower() for clause in clauses)
        candidates = [] if said else [", " + clause for clause in clauses]
    elif kind == AFTER:
        candidates = after_wordings(value)
    elif kind == SOURCE:
        candidates = [SOURCE_WORDS[value]] if value in SOURCE_WORDS else []
    else:
        candidates = []
    return [
        text
        for text in candidates
        if text
        and is_clean(text, cluster.forbidden)
        and text not in cluster.name
        and not (kind == PHRASE and _restates(value, cluster.name))
    ]


def _restates(phrase: str, name: str) -> bool:
    """True when a phrase only says again what the name quotes ("gift card balance is
    not enough" beside “gift card balance”), or its words are all in the name already.

    >>> _restates("card balance is not enough", "Calls x (“gift card balance”)")
    True
    >>> _restates("seat map", "Calls x (“gift card balance”)")
    False
    """
    lowered = name.lower()
    pairs = set(zip(phrase.split(), phrase.split()[1:]))
    for quoted in (part.split("”")[0].split() for part in lowered.split("“")[1:]):
        if pairs & set(zip(quoted, quoted[1:])) or (quoted and " ".join(quoted) in phrase):
            return True
    return set(phrase.split()) <= set(lowered.replace("(", " ").replace(")", " ").split())


def _shares(traits: Sequence[set[str]]) -> dict[str, float]:
    counts: Counter[str] = Counter(trait for member in traits for trait in member)
    size = max(len(traits), 1)
    return {trait: count / size for trait, count in counts.items()}


def _qualifier(cluster: NamedCluster, siblings: Sequence[NamedCluster]) -> str:
    """The wording of the trait that best sets ``cluster`` apart from every sibling."""
    own = _shares(cluster.traits)
    others = [_shares(sibling.traits) for sibling in siblings]
    best: tuple[tuple[int, float, int, int, str], str] | None = None
    for trait, share in own.items():
        if share < DOMINANT:
            continue
        # Siblings it sets apart; those it does not are left to the ordinal.
        apart = [other.get(trait, 0.0) for other in others if other.get(trait, 0.0) < DOMINANT]
        if not apart:
            continue
        said = wordings(trait, cluster)
        if not said:
            continue
        kind = trait.partition(":")[0]
        words = len(said[0].split()) if kind == PHRASE else 0  # a fuller phrase wins
        rival = max(apart)
        rank = (
            -len(apart),
            -round(share - rival, 9),
            PRIORITY.get(kind, len(PRIORITY)),
            -words,
            trait,
        )
        if best is None or rank < best[0]:
            best = (rank, said[0])
    return best[1] if best else ""


def qualified(name: str, qualifier: str) -> str:
    """The name with a qualifier: a clause after it, a parenthesis inside its last one.

    >>> qualified("Calls search", "right after an error")
    'Calls search right after an error'
    >>> qualified("Calls search (“no results”)", "right after an error")
    'Calls search (“no results”), right after an error'
    >>> qualified("Calls search", ", repeating an earlier action")
    'Calls search, repeating an earlier action'
    >>> qualified("Calls search (“no results”)", "(flight … not found)")
    'Calls search (“no results”; flight … not found)'
    """
    if qualifier.startswith(", "):
        text = f"{name}{qualifier}"
    elif qualifier.startswith("(") and name.endswith(")"):
        text = f"{name[:-1]}; {qualifier[1:]}"
    elif name.endswith((")", "”")) and not qualifier.startswith("("):
        text = f"{name}, {qualifier}"
    else:
        text = f"{name} {qualifier}"
    if len(text) <= NAME_CHARS:
        return text
    room = max(NAME_CHARS - len(qualifier) - 2, 1)
    return f"{name[:room].rstrip()}… {qualifier}"[:NAME_CHARS]


def _ordinal(name: str, number: int, forbidden: Collection[str]) -> str:
    for suffix in (f"({number})", f"(group {number})", f"(variant {number})"):
        if is_clean(suffix, forbidden):
            return f"{name} {suffix}"
    return f"{name} ({number})"


def _by_name(
    clusters: Iterable[NamedCluster], names: dict[int, str]
) -> dict[str, list[NamedCluster]]:
    groups: dict[str, list[NamedCluster]] = defaultdict(list)
    for cluster in clusters:
        groups[names[cluster.label]].append(cluster)
    return groups


def tell_apart(
    names: Mapping[int, str],
    members: Mapping[int, Sequence[WrongStep]],
    representer: StepRepresenter,
    *,
    forbidden: Mapping[int, Collection[str]],
    exclude: Mapping[int, Collection[str]],
) -> tuple[dict[int, str], dict[int, int]]:
    """Label -> its name, told apart from every other (see the module doc), and the
    clusters only an ordinal told apart (:func:`resolve_names`). The traits are computed
    only for the clusters whose names collide."""
    colliding = collisions(dict(names))
    if not colliding:
        return dict(names), {}
    clusters = []
    for label, name in sorted(names.items()):
        traits: list[set[str]] = []
        wording: dict[str, str] = {}
        if label in colliding:
            traits, wording = member_traits(
                members[label],
                representer,
                forbidden=forbidden.get(label, ()),
                banned=exclude.get(label, ()),
            )
        clusters.append(
            NamedCluster(
                label,
                name,
                traits,
                size=len(members[label]),
                forbidden=frozenset(forbidden.get(label, ())),
                wording=wording,
            )
        )
    return resolve_names(clusters)


# A name's closing aside that quotes what its members say: "(“…”)", "(sometimes “…”)".
_QUOTED_ASIDE = re.compile(r"\s\([^()“”]*“[^()]*”\)$")


def name_stem(name: str) -> str:
    """The name without a closing aside that quotes the members: two misbehaviours whose
    names differ only there read as one ("reporter gives a final answer that no
    observation supports" twice, once with a quote), so they are told apart as if equal.

    >>> name_stem("Reporter gives a final answer (sometimes “if you need a breakdown”)")
    'Reporter gives a final answer'
    >>> name_stem("Calls search (flight … not found)")
    'Calls search (flight … not found)'
    """
    return _QUOTED_ASIDE.sub("", name)


def collisions(names: dict[int, str]) -> set[int]:
    """The labels whose name (its :func:`name_stem`) another label also carries.

    >>> sorted(collisions({1: "a", 2: "a", 3: "b", 4: "b (“x”)", 5: "c (“y”)"}))
    [1, 2, 3, 4]
    """
    counts = Counter(name_stem(name) for name in names.values())
    return {label for label, name in names.items() if counts[name_stem(name)] > 1}


def distinct_names(clusters: Sequence[NamedCluster]) -> dict[int, str]:
    """Label -> a name no other cluster carries (see the module doc)."""
    return resolve_names(clusters)[0]


def resolve_names(clusters: Sequence[NamedCluster]) -> tuple[dict[int, str], dict[int, int]]:
    """:func:`distinct_names`, and for each cluster only an ordinal told apart (no trait
    of its says how it differs) the label of the largest cluster it shares a name with.

    >>> names, untold = resolve_names([NamedCluster(1, "Calls search", [set()], size=3),
    ...     NamedCluster(2, "Calls search", [set()], size=2),
    ...     NamedCluster(3, "Calls book", [set()], size=1)])
    >>> names[2], untold
    ('Calls search (2)', {2: 1})
    """
    names = {cluster.label: cluster.name for cluster in clusters}
    numbered: dict[int, int] = {}
    stems = {label: name_stem(name) for label, name in names.items()}
    for _, group in sorted(_by_name(clusters, stems).items()):
        if len(group) < 2:
            continue
        bare: dict[str, list[NamedCluster]] = defaultdict(list)
        for cluster in group:
            qualifier = _qualifier(cluster, [c for c in group if c is not cluster])
            if qualifier:
                names[cluster.label] = qualified(cluster.name, qualifier)
            else:
                bare[cluster.name].append(cluster)
        # Of those no trait sets apart and still named alike, the largest keeps the name;
        # the rest number (a quote in the name already tells the others apart).
        for name, alike in sorted(bare.items()):
            alike.sort(key=lambda c: (-c.size, c.label))
            for number, cluster in enumerate(alike[1:], start=2):
                names[cluster.label] = _ordinal(name, number, cluster.forbidden)
                numbered[cluster.label] = alike[0].label
    # A qualified name can still meet another cluster's name: number what is left.
    by_label = {cluster.label: cluster for cluster in clusters}
    while True:
        repeated = [group for group in _by_name(clusters, names).values() if len(group) > 1]
        if not repeated:
            return names, numbered
        for group in repeated:
            group.sort(key=lambda c: (-c.size, c.label))
            base = names[group[0].label]
            for number, cluster in enumerate(group[1:], start=2):
                names[cluster.label] = _ordinal(base, number, by_label[cluster.label].forbidden)
                numbered[cluster.label] = numbered.get(group[0].label, group[0].label)
