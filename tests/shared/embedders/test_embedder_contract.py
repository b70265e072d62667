"""One contract for every embedder: the tests' fake, the offline model and the OpenAI client (against
the local OpenAI-compatible server), so the fake that pipeline tests use cannot drift from the real ones."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from shared.embedders import Embedder, make_embedder, model_spec
from shared.embedders.local import LocalEmbedder
from shared.embedders.openai_api import OpenAIEmbedder
from shared.errors import EmbeddingRejectedError
from shared.settings import Settings
from tests.conftest import MODEL_CACHE_DIR
from tests.shared.embedders.fakes import FAKE_EMBEDDER, FakeEmbedder
from tests.support.openai_server import OpenAIServer

TEXTS = [
    "The invoice is due within thirty days of delivery.",
    "Grüße aus München: naïve café façades, 東京 and Ελληνικά.",
    "Table 3: revenue 4.2 M€ (2023), 5.1 M€ (2024); margin +12 %.",
    "word " * 40,
    "A",
]
# Three documents and, for each, a question sharing some of its words: the property a pipeline test
# relies on when it searches for the document it uploaded.
DOCUMENTS = [
    "The lighthouse keeper logged the storm, the wind speed and the height of the waves every night.",
    "Quarterly revenue grew by four percent while operating costs fell, lifting the profit margin.",
    "Sourdough bread needs flour, water, salt and a starter left to ferment overnight before baking.",
]
QUESTIONS = [
    "What did the lighthouse keeper log during the storm?",
    "How much did quarterly revenue grow?",
    "What does sourdough bread need before baking?",
]


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder.from_settings(Settings(model_cache_dir=MODEL_CACHE_DIR))


@pytest.fixture(scope="module")
def openai_compatible() -> Iterator[OpenAIEmbedder]:
    with OpenAIServer(api_key="sk-contract") as server:
        yield OpenAIEmbedder("sk-contract", base_url=server.base_url, dimensions=64)


@pytest.fixture(params=["fake", "local", "openai"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    """Each embedder the service can be given."""
    if request.param == "fake":
        return FakeEmbedder()
    if request.param == "local":
        return request.getfixturevalue("local")  # type: ignore[no-any-return]
    return request.getfixturevalue("openai_compatible")  # type: ignore[no-any-return]


@pytest.fixture(params=["fake", "local"])
def text_model(request: pytest.FixtureRequest) -> Embedder:
    """The embedders whose vectors follow the text's words (the OpenAI test server's are random)."""
    if request.param == "fake":
        return FakeEmbedder()
    return request.getfixturevalue("local")  # type: ignore[no-any-return]


def unit(vectors: list[list[float]]) -> np.ndarray:
    array = np.array(vectors, dtype=np.float64)
    assert np.isfinite(array).all()
    np.testing.assert_allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-5)
    return array


def test_it_declares_what_the_chunker_and_the_vector_store_rely_on(embedder: Embedder) -> None:
    # Given an embedder, then it names its model, its width and its window
    assert isinstance(embedder.model_name, str) and embedder.model_name
    assert isinstance(embedder.dimension, int) and embedder.dimension > 0
    assert isinstance(embedder.max_tokens, int) and embedder.max_tokens > 0


def test_one_unit_vector_of_its_dimension_per_text_in_order(embedder: Embedder) -> None:
    # When several texts are embedded in one call
    vectors = unit(embedder.embed(TEXTS))

    # Then each text has one vector of the declared width, and each is the one it gets alone
    assert vectors.shape == (len(TEXTS), embedder.dimension)
    alone = unit([embedder.embed([text])[0] for text in TEXTS])
    assert ((vectors * alone).sum(axis=1) >= 0.995).all()


def test_the_same_text_gives_the_same_vector_and_different_texts_differ(embedder: Embedder) -> None:
    # When the same texts are embedded twice, the second time in the other order
    first = unit(embedder.embed(TEXTS))
    second = unit(embedder.embed(TEXTS[::-1]))[::-1]

    # Then each text's vector is repeated, and no two texts share one
    assert ((first * second).sum(axis=1) >= 0.995).all()
    cosines = first @ first.T
    assert (cosines[~np.eye(len(TEXTS), dtype=bool)] < 0.99).all()


def test_nothing_to_embed_gives_nothing(embedder: Embedder) -> None:
    assert embedder.embed([]) == []


def test_tokens_are_counted_without_special_tokens_and_grow_with_the_text(embedder: Embedder) -> None:
    # Given texts of growing length
    texts = ("", "word", "word " * 10, "word " * (embedder.max_tokens + 1))
    counts = [embedder.count_tokens(text) for text in texts]

    # Then nothing counts nothing, and longer texts count more, beyond the window when long enough
    assert counts[0] == 0
    assert 0 < counts[1] < counts[2] < counts[3]
    assert counts[3] > embedder.max_tokens


def test_the_fake_counts_tokens_and_sizes_its_window_as_the_offline_model(local: LocalEmbedder) -> None:
    # Given the fake and the offline model it stands in for
    fake = FakeEmbedder()

    # Then chunks cut with either count have the same sizes
    assert fake.max_tokens == local.max_tokens
    for text in [*TEXTS, *DOCUMENTS, "", "word " * 1000, "ﬁnal ligature\u00a0and non-breaking space"]:
        assert fake.count_tokens(text) == local.count_tokens(text), text


def test_a_question_is_nearest_to_the_document_it_is_about(text_model: Embedder) -> None:
    # Given three documents on different subjects
    documents = unit(text_model.embed(DOCUMENTS))

    # When a question about each is embedded
    questions = unit(text_model.embed(QUESTIONS))

    # Then each question's nearest document is its own
    assert list((questions @ documents.T).argmax(axis=1)) == [0, 1, 2]


def test_an_empty_text_still_gets_a_unit_vector(text_model: Embedder) -> None:
    vectors = unit(text_model.embed(["", "a"]))
    assert vectors.shape == (2, text_model.dimension)


def test_a_text_longer_than_the_window_is_truncated_to_it(text_model: Embedder) -> None:
    # Given a text of many windows, and its first half
    words = [f"w{i % 97}" for i in range(2000)]
    long_text, head = " ".join(words), " ".join(words[:1000])
    assert text_model.count_tokens(long_text) > 4 * text_model.max_tokens

    # When both are embedded, then only the first window counted
    long_vector, head_vector = unit(text_model.embed([long_text, head]))
    assert float(long_vector @ head_vector) >= 0.995


def test_the_openai_client_refuses_a_text_longer_than_its_window(openai_compatible: OpenAIEmbedder) -> None:
    # Given the provider's rule: it rejects a text beyond the window rather than truncating it
    too_long = "word " * (openai_compatible.max_tokens + 10)

    # Then the client refuses it before sending, permanently
    with pytest.raises(EmbeddingRejectedError):
        openai_compatible.embed([too_long])


def test_settings_select_the_fake_by_name_in_any_process() -> None:
    # Given settings naming the fake, as the tests' settings do
    settings = Settings(embedder=FAKE_EMBEDDER)

    # Then the factory builds it and its model is known without building it
    assert isinstance(make_embedder(settings), FakeEmbedder)
    assert model_spec(settings) == (FakeEmbedder.model_name, FakeEmbedder.dimension)


def test_a_setting_naming_no_class_is_refused() -> None:
    with pytest.raises(ValueError, match="no importable class"):
        make_embedder(Settings(embedder="tests.shared.embedders.fakes:NoSuchEmbedder"))
