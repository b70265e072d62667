"""The only import-time app: `gunicorn gateway.wsgi:app`."""

from gateway.app import create_app
from shared.logging import setup_logging
from shared.settings import Settings

settings = Settings.from_env()
setup_logging(settings)
app = create_app(settings)
