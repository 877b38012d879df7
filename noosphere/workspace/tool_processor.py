"""The tool (extended) processor: one callable or API, which it decides to call or not.

Two model calls per execute, as in CTM-AI's tool setting: first the processor decides whether its
tool helps with the question and with which arguments (a tool call, or none); then, with the
result in view, it writes its scored chunk like any other processor.
"""

from __future__ import annotations

from noosphere.llm import Message, Model
from noosphere.observation import Observation
from noosphere.tools import Tool
from noosphere.workspace.chunk import Chunk, ProcessorOutput, WeightRule
from noosphere.workspace.events import ToolUsed
from noosphere.workspace.processor import LLMProcessor, Perceive, nothing

DECIDE = """You are a processor in a global workspace that owns one tool: {name} - {description}
Call it if its result would help answer the question, even partly or as one step; otherwise call nothing."""


class ToolProcessor(LLMProcessor):
    def __init__(self, name: str, model: Model, tool: Tool, *, role: str = "", perceive: Perceive = nothing,
                 weights: WeightRule | None = None, max_calls: int = 3) -> None:
        super().__init__(name, model, role=role or f"You can use the tool {tool.spec.name}.", perceive=perceive,
                         weights=weights)
        self.tool = tool
        self.max_calls = max_calls

    async def execute(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        perception = self.perceive(observation)
        context = self.user_prompt(query, perception)
        decide = [Message.system(DECIDE.format(name=self.tool.spec.name, description=self.tool.spec.description)),
                  Message("user", context, perception.media)]
        decision = await self.model.complete(decide, tools=[self.tool.spec], agent=self.name)
        reports = []
        for call in decision.tool_calls[: self.max_calls]:
            result = await self.tool.call(call.arguments)
            self.model.trace.emit(ToolUsed(processor=self.name, tool=call.name, arguments=call.arguments,
                                           ok=result.ok, output=result.output[:2000]))
            reports.append(f"You called {call.name}({call.arguments}) and got: {result.render()[:2000]}")
        findings = "\n".join(reports) or "You decided not to call your tool for this question."
        messages = [Message.system(self.system_prompt()),
                    Message("user", f"{context}\n\n{findings}", perception.media)]
        completion = await self.model.complete(messages, output=ProcessorOutput, agent=self.name)
        assert completion.output is not None
        return Chunk.from_output(self.name, tick, completion.output, self.weights)
