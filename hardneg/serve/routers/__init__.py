"""One APIRouter per concern."""
