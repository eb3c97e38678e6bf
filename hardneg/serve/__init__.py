"""The search service and web page (FastAPI): query by example, concept search
with relevance feedback, saved models, thumbnails.

``create_app(store_path, ...)`` builds the app; ``hardneg serve STORE`` runs it
with uvicorn. Search modes (:mod:`hardneg.serve._modes`) plug in through
:func:`register_mode`.
"""

from ._app import create_app
from ._modes import MODES, SearchMode, register_mode

__all__ = ["MODES", "SearchMode", "create_app", "register_mode"]
