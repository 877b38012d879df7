"""noosphere: consciousness-inspired societies of mind over language models."""

from noosphere.errors import NoosphereError, RuntimeFault, UsageError
from noosphere.llm import DEFAULT_MODEL, Message, Model, Settings, open_model
from noosphere.runs import Run
from noosphere.trace import Event, Trace

__all__ = ["DEFAULT_MODEL", "Event", "Message", "Model", "NoosphereError", "Run", "RuntimeFault", "Settings",
           "Trace", "UsageError", "open_model"]
__version__ = "0.1.0"
