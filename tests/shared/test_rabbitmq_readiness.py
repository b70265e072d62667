"""Readiness on RabbitMQ: the broker check reaches the node, reports it gone, and recovers with it."""

from __future__ import annotations

from typing import Any

import pytest

from shared.errors import BrokerUnavailableError
from shared.queue import Publisher, make_broker
from shared.settings import Settings

pytestmark = pytest.mark.rabbitmq


def test_the_broker_check_follows_the_rabbitmq_node(
    settings: Settings, rabbitmq_node: Any, rabbitmq_url: str
) -> None:
    # Given a publisher on the private RabbitMQ node, which is up
    publisher = Publisher(make_broker(settings.replace(broker_url=rabbitmq_url)))
    publisher.check()
    try:
        # When the node stops, then the check says the broker is unavailable
        rabbitmq_node.stop()
        with pytest.raises(BrokerUnavailableError):
            publisher.check()
    finally:
        # And once it is back, the check passes again on a fresh connection
        rabbitmq_node.start()
    publisher.check()
