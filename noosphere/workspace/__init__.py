"""The global workspace (CTM-AI): processors bid chunks, one wins, it is broadcast, links form, fusion."""

from noosphere.observation import Observation, View
from noosphere.workspace.chunk import Chunk, ProcessorOutput, WeightRule
from noosphere.workspace.classify import classifier, classify
from noosphere.workspace.competition import CompetitionResult, compete
from noosphere.workspace.engine import ABLATIONS, Workspace, WorkspaceResult, WorkspaceSettings
from noosphere.workspace.function_processor import Bid, FunctionProcessor
from noosphere.workspace.links import LinkGraph, LinkPolicy
from noosphere.workspace.memory import FusionNote, ProcessorMemory
from noosphere.workspace.motor import Action, MotorProcessor
from noosphere.workspace.processor import FreeProcessor, LLMProcessor, Perception, Processor, cognitive, sensory
from noosphere.workspace.proposer import FunctionProposer, GeneralistProposer
from noosphere.workspace.stm import ShortTermMemory, StmAnswer
from noosphere.workspace.tool_processor import ToolProcessor

__all__ = [
    "ABLATIONS", "Action", "Bid", "Chunk", "CompetitionResult", "FreeProcessor", "FunctionProcessor",
    "FunctionProposer", "FusionNote", "GeneralistProposer", "LLMProcessor", "LinkGraph", "LinkPolicy",
    "MotorProcessor", "Observation", "Perception", "Processor", "ProcessorMemory", "ProcessorOutput",
    "ShortTermMemory", "StmAnswer", "ToolProcessor", "View", "WeightRule", "Workspace", "WorkspaceResult",
    "WorkspaceSettings", "classifier", "classify", "cognitive", "compete", "sensory",
]
