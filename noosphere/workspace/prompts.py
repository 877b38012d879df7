"""The workspace's prompts, in our own words; the facts (fields, scales, bands) follow CTM-AI."""

from __future__ import annotations

# The frame is the same for every processor so that a local backend can reuse its evaluated prefix;
# what makes a processor itself (name, role, memory, input) comes after it, in the user message.
_FRAME_TEXT = """You are one of several specialist processors in a global workspace.
The processors answer the same query in parallel; the most useful answer wins and is shared with all.
You see only your own part of the input. Answer from it as well as you can, even if you must hedge.

Return:
- response: your answer to the query, with the evidence you used (two or three sentences at most).
- additional_question: if you are unsure, one short question that another processor, seeing a different part
  of the input, could answer to help you; never the query itself and never one you already asked. Empty if
  you need nothing."""

# With probability scores the processor writes only its response and question; the scores are asked after.
PROCESSOR_FRAME_TEXT = _FRAME_TEXT

PROCESSOR_FRAME = _FRAME_TEXT + """
- three scores for your response only (not for the question), each a number from 0.0 to 1.0:
  relevance - 1.0 answers the query directly and precisely; 0.8 mostly answers it with useful detail;
    0.6 engages with it but is incomplete or unsure; 0.4 only loosely connected; 0.2 barely connected;
    0.0 off-topic or a refusal. A hedged answer that explains why it is hard still counts as relevant.
  confidence - 1.0 clear and definitive; 0.8 confident with small caveats; 0.6 some doubt; 0.4 noticeable
    hedging; 0.2 mostly guessing; 0.0 "I cannot tell".
  surprise - 1.0 highly novel or unexpected; 0.6 somewhat unexpected; 0.2 predictable; 0.0 common knowledge."""

STM_FRAME = """You are the short-term memory of a global workspace: the one place where the winning
information of many processors arrives. Using the information below, answer the query, then give your
confidence that the answer is correct, from 0.0 (a guess) to 1.0 (certain). Be calibrated: if the
information is thin or contradictory, say so through a low confidence."""

STM_LABELS = "Choose the label from exactly these options: {labels}."

# With probability scores the STM writes no label: each label is scored as the start of its reply.
STM_FRAME_SCORED = """You are the short-term memory of a global workspace: the one place where the winning
information of many processors arrives. Using the information below, answer the query with one label."""

STM_LABEL_PROMPT = "Answer with exactly one of these labels and nothing else: {labels}."


PROCESSOR_IDENTITY = 'You are the processor "{name}". {role}'


def perception_text(view_name: str, content: str) -> str:
    return f"Your input ({view_name}):\n{content}" if content else f"Your input ({view_name}) is attached."
