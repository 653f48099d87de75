"""Tiny fixtures for the generalization tests: a ConceptNet database, a WordNet directory, a corpus."""

from __future__ import annotations

from pathlib import Path

# (subterm, term) IsA pairs; "hexe" is German and must never show up as an English subterm.
CONCEPTNET_ISA = [
    ("enchantress", "woman"), ("ballerina", "woman"), ("wizard", "man"), ("archmage", "wizard"),
    ("ambulance", "car"), ("convertible", "car"), ("minibus", "bus"),
]


def make_conceptnet_db(path: Path) -> Path:
    """A ConceptNet database in conceptnet-lite's own schema, built through its peewee models."""
    from conceptnet_lite import db as cndb
    from playhouse.sqlite_ext import SqliteExtDatabase

    database = SqliteExtDatabase(str(path))
    cndb.db.initialize(database)
    tables = [cndb.Relation, cndb.Language, cndb.Label, cndb.Concept, cndb.Edge]
    cndb.db.create_tables(tables)
    is_a = cndb.Relation.create(name="is_a")
    related = cndb.Relation.create(name="related_to")
    english = cndb.Language.create(name="en")
    german = cndb.Language.create(name="de")
    concepts: dict[tuple[str, str], object] = {}

    def concept(text: str, language=english):
        key = (text, language.name)
        if key not in concepts:
            label = cndb.Label.create(text=text, language=language)
            concepts[key] = cndb.Concept.create(label=label, sense_label="n")
        return concepts[key]

    for sub, term in CONCEPTNET_ISA:
        cndb.Edge.create(relation=is_a, start=concept(sub), end=concept(term), etc={"weight": 1.0})
    cndb.Edge.create(relation=is_a, start=concept("hexe", german), end=concept("woman"), etc={})
    cndb.Edge.create(relation=related, start=concept("garage"), end=concept("car"), etc={})
    database.close()
    return path


# WordNet: synset name -> (lemmas, hyponym synset names). "man.n.02" is a second, rarer sense.
WORDNET = {
    "man.n.01": (["man", "adult_male"], ["wizard.n.01", "bachelor.n.01"]),
    "man.n.02": (["man"], ["pawn.n.01"]),
    "wizard.n.01": (["wizard"], ["archmage.n.01"]),
    "archmage.n.01": (["archmage"], []),
    "bachelor.n.01": (["bachelor"], []),
    "pawn.n.01": (["pawn"], []),
    "woman.n.01": (["woman"], ["enchantress.n.01", "ballerina.n.01"]),
    "enchantress.n.01": (["enchantress", "sorceress"], []),
    "ballerina.n.01": (["ballerina"], []),
    "car.n.01": (["car", "auto"], ["ambulance.n.01", "convertible.n.01"]),
    "ambulance.n.01": (["ambulance"], []),
    "convertible.n.01": (["convertible"], []),
    "bus.n.01": (["bus"], ["minibus.n.01"]),
    "minibus.n.01": (["minibus"], []),
    "cave.n.01": (["cave"], []),
    "lascaux.n.01": (["Lascaux"], []),
}
# Instance hyponyms (named individuals, pointer "~i"): Lascaux is a cave, not a kind of cave.
WORDNET_INSTANCES = {"cave.n.01": ["lascaux.n.01"]}


def _data_lines(synsets: dict) -> tuple[dict[str, int], str]:
    """data.noun text; offsets are byte positions, so lengths are computed with dummy offsets."""
    parents = {h: name for name, (_, hypos) in synsets.items() for h in hypos}
    classes = {i: name for name, insts in WORDNET_INSTANCES.items() for i in insts}
    names = list(synsets)

    def line(name: str, offsets: dict[str, int]) -> str:
        lemmas, hypos = synsets[name]
        words = " ".join(f"{lemma} 0" for lemma in lemmas)
        pointers = [("@", parents[name])] if name in parents else []
        pointers += [("@i", classes[name])] if name in classes else []
        pointers += [("~", h) for h in hypos]
        pointers += [("~i", i) for i in WORDNET_INSTANCES.get(name, [])]
        ptrs = " ".join(f"{sym} {offsets[target]:08d} n 0000" for sym, target in pointers)
        return (f"{offsets[name]:08d} 03 n {len(lemmas):02x} {words} {len(pointers):03d}"
                f"{' ' + ptrs if ptrs else ''} | a {name.split('.')[0]}\n")

    header = "  1 This is a tiny handmade WordNet-format file for tests.\n"
    dummy = dict.fromkeys(names, 0)
    offsets, position = {}, len(header.encode())
    for name in names:
        offsets[name] = position
        position += len(line(name, dummy).encode())
    return offsets, header + "".join(line(name, offsets) for name in names)


def make_wordnet_dir(root: Path) -> Path:
    """The smallest WordNet directory nltk's WordNetCorpusReader reads (nouns only)."""
    root.mkdir(parents=True, exist_ok=True)
    offsets, data = _data_lines(WORDNET)
    (root / "data.noun").write_text(data)
    senses: dict[str, list[str]] = {}
    for name, (lemmas, _) in WORDNET.items():
        for lemma in lemmas:
            senses.setdefault(lemma.lower(), []).append(name)  # index lemmas are lower-case
    index = ""
    for lemma in sorted(senses):
        names = sorted(senses[lemma], key=lambda n: int(n.rsplit(".", 1)[1]))
        offs = " ".join(f"{offsets[n]:08d}" for n in names)
        index += f"{lemma} n {len(names)} 1 ~ {len(names)} 0 {offs}\n"
    (root / "index.noun").write_text(index)
    (root / "lexnames").write_text("00\tadj.all\t3\n01\tadj.pert\t3\n02\tadv.all\t4\n03\tnoun.Tops\t1\n")
    for pos in ("verb", "adj", "adv"):
        (root / f"index.{pos}").write_text("")
        (root / f"data.{pos}").write_text("")
    for pos in ("noun", "verb", "adj", "adv"):
        (root / f"{pos}.exc").write_text("")
    return root


def write_corpus(path: Path, sentences: list[str], filler_words: int = 3000) -> Path:
    """A plain-text corpus: filler prose with ``sentences`` planted between paragraphs."""
    filler = " ".join(["the quick brown fox jumps over the lazy dog"] * (filler_words // 9))
    parts = []
    for sentence in sentences:
        parts.append(filler)
        parts.append(sentence)
    parts.append(filler)
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path
