"""The model layer: one async interface over embedded llama.cpp, LiteLLM providers and scripts."""

from noosphere.llm.backend import Backend
from noosphere.llm.cache import CallCache
from noosphere.llm.messages import MediaPart, Message
from noosphere.llm.model import Model
from noosphere.llm.registry import (
    DEFAULT_MODEL,
    BackendFactory,
    BackendRequest,
    KnownModel,
    known_models,
    open_model,
    register_backend,
)
from noosphere.llm.scripted import ScriptedBackend
from noosphere.llm.types import (
    Capabilities,
    Completion,
    Reply,
    Request,
    ScoreReply,
    ScoreRequest,
    Settings,
    ToolCall,
    ToolSpec,
    Usage,
)
from noosphere.llm.usage import Budget, UsageLedger

__all__ = [
    "DEFAULT_MODEL", "Backend", "BackendFactory", "BackendRequest", "Budget", "CallCache", "Capabilities", "Completion",
    "KnownModel", "MediaPart", "Message", "Model", "Reply", "Request", "ScoreReply", "ScoreRequest", "ScriptedBackend",
    "Settings", "ToolCall", "ToolSpec", "Usage", "UsageLedger", "known_models", "open_model", "register_backend",
]
