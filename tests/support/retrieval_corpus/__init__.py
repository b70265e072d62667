"""A small corpus of eight realistic documents and paraphrased questions whose answer sentences are known."""

from __future__ import annotations

from tests.support.retrieval_corpus.company import COMPANY
from tests.support.retrieval_corpus.everyday import EVERYDAY
from tests.support.retrieval_corpus.policy_and_research import POLICY_AND_RESEARCH
from tests.support.retrieval_corpus.questions import QUESTIONS

# Eight documents of six pages each (about 170 words a page, each page about one chunk), so the
# corpus holds some fifty chunks and most questions have near neighbours in their own document: a search
# that only found the right document, not the right passage, would miss the 90% recall it must reach.
CORPUS: dict[str, list[str]] = {**COMPANY, **EVERYDAY, **POLICY_AND_RESEARCH}

__all__ = ["CORPUS", "QUESTIONS"]
