"""The lexical vectors both sides of a keyword search share: tokenizer, term hash, BM25 weights."""

from __future__ import annotations

from shared.sparse import document_vector, query_vector, term_index, tokens


def test_words_are_casefolded_normalised_and_split_at_underscores() -> None:
    # Given text with capitals, a ligature, accents and an identifier, then each word is one term
    assert tokens("Straße ﬁle Café snake_case 2024!") == ["strasse", "file", "café", "snake", "case", "2024"]


def test_unspaced_scripts_become_character_pairs() -> None:
    # Given Chinese and Thai runs (no spaces between words), then they are indexed as overlapping pairs
    assert tokens("数据库 x") == ["数据", "据库", "x"]
    assert tokens("ไทย") == ["ไท", "ทย"]


def test_term_indices_are_stable_32_bit_numbers() -> None:
    # Given a term, then its index is the same in every process (pinned) and fits 32 bits
    assert term_index("invoice") == 0x5CD3A7A9
    assert all(0 <= term_index(t) < 2**32 for t in ("a", "ß", "数据", "x" * 500))


def test_document_weights_saturate_and_discount_long_chunks() -> None:
    # Given a term once, thrice and thirty times in chunks of equal length
    def weight(text: str, term: str) -> float:
        vector = document_vector(text)
        return vector.values[vector.indices.index(term_index(term))]

    once, thrice, many = (weight(" ".join(["rare"] * n + ["filler"] * (150 - n)), "rare") for n in (1, 3, 30))
    # Then repeats count for more, but never beyond k1 + 1
    assert once < thrice < many < 2.2
    # And the same count weighs less in a longer chunk
    assert weight("rare " + "filler " * 600, "rare") < weight("rare " + "filler " * 50, "rare")


def test_a_query_weighs_each_distinct_term_once() -> None:
    vector = query_vector("the cat and THE dog")
    assert sorted(vector.indices) == vector.indices and len(vector.indices) == 4
    assert vector.values == [1.0] * 4
