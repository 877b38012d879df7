"""The society's prompts, in our own words; the procedure (phases, rights, votes, markets) follows NLSOM.

Each is a `str.format` template named by the turn that sends it; the phases fill them in. The forms a
member fills (`Statement`, `Reply`, the ballots) stay with the phases that read them: their field
descriptions reach the model through the JSON schema. `tests/test_society_prompts.py` holds every
request the organisations send to a recording, byte for byte: a prompt changed here is a change to
what was measured.
"""

from __future__ import annotations

# What every member reads of the task, and of what others said -----------------------------------------------
TASK = "Task: {task}"
VIEW = "{name}:\n{text}"
"""One view of the input as a member perceives it (its text; its media go with the message)."""
BRIEFING = "{perceived}\n\nTask: {task}"
"""A member's views of the input, then the task (`TASK` alone for a member who perceives no view)."""
SAID = "{member}: {reasoning} (answer: {answer})"
"""One contribution as the others read it; `reasoning` is an excerpt, `answer` the member's to the task."""
NO_ANSWER_YET = "none yet"
EXCERPT = "{head} [...] {tail}"
QUESTION_LINE = "Question {round}: {question}"
NOTHING_YET = "(nothing yet)"

# A member who follows the whole discussion as one conversation (the organizer) ---------------------------------
FOLLOW_FIRST = "Task: {task}\n\nDiscussion so far:"
FOLLOW_NEXT = "Said since your last turn:"
FOLLOW = "{opening}\n{transcript}\n\n{instruction}"

# The mindstorm: the organizer's rounds ----------------------------------------------------------------------
ASKED_BEFORE = "\nYou already asked:{earlier}\nAsk about another step."
ASKED_ITEM = "\n- {question}"
ASK_SUB_QUESTION = ("Find the step where the members disagree, or the step most likely to be wrong, and ask them one "
                    "neutral question about it: do not say what you think the right value is. Do not repeat the "
                    "task's own question.{again}")
STANDING_QUESTION = "Check your answer: is every step right?"
"""Asked in a round whose organizer forfeited its question."""
LAST_ROUND = "Last round's answers:\n{answers}\n\n"
LAST_ROUND_ANSWER = "Answer{number} ({member}): {reasoning} (answer: {answer})"
ORGANIZER_ASKS = "{brief}{peers}The organizer asks: {question}"
ROUND_REPLY = "{reasoning} (to the question: {answer})"
"""A member's reply in a round as it is kept, and read by the organizer and (with the right to know) the others."""

# The mindstorm: a debate's rounds ---------------------------------------------------------------------------
DEBATE_SPLIT = "The others may have seen parts of the input you did not; trust them as far as their reasons hold."
DEBATE_SAME = "The others worked on the same task; check their reasoning as you check your own."
NO_STATEMENTS = "(no statements)"
DEBATE_TURN = ("{brief}{lead}\n{others}\n\nSay where you agree or disagree and give your answer to the task again: "
               "{task}")

# A member who answers with a program (`answers: program`) ------------------------------------------------------
PROGRAM_FORM = ("{prompt}\n\nReply with a Python program only, in one ```python block: it computes your answer and "
                "prints it and nothing else (put any remarks in its comments).")
PROGRAM_SAID = "```python\n{program}\n```\nIt prints: {printed}"
"""A program member's turn as it is kept and others read it: the program, then what it printed (its answer)."""
PROGRAM_PRINTED = "\n\nIt prints: {printed}"
PROGRAM_FAILED = "\n\nIt gave no answer: {reason}"
PROGRAM_REPAIR = ("Your program gave no answer: {reason}\n\nReply with the corrected program only, in one ```python "
                  "block: it computes your answer and prints it and nothing else.")
"""A program member's repair turn (`repairs`): the failure shown, the program asked again."""
"""What came of a program member's reply, added to it in its own history: its later turns (a debate's round, a
democracy's change of answer) read its answer, or why it had none, as the others do."""

# The members' distinct answers, lettered, wherever they choose among them ---------------------------------------
OPTION = "({label}) {option}"

# Opinion gathering ------------------------------------------------------------------------------------------
CHANGE = ("The members' answers to the task ({task}):\n{options}\nKeep your answer or change to the one you now find "
          "best.")
SUMMARISE = ("Task: {task}\n\nDiscussion:\n{transcript}\n\nSummarise what the discussion established in a few "
             "sentences. Use your own knowledge to leave out wrong or doubtful claims.")

# Execution --------------------------------------------------------------------------------------------------
LEADER_SUMMARY = "\n\nThe organizer's summary: {summary}"
DECIDE = ("Task: {task}\n\nThe members' latest reasoning:\n{reasoning}{summary}\n\nAnswers proposed:\n{options}\n\n"
          "Who holds each:\n{holders}\n\nDecide the final answer: check the reasoning behind each, and trust sound "
          "reasoning over the number who hold it.")
HOLDERS_LINE = "({label}) {names}"
HOLDER_CONFIDENCE = "{name} ({p:.2f})"
CONFIDENCE_NOTE = ("\n\nIn brackets: each member's own probability that its answer is right, from its model's token "
                   "probabilities.")
HELD_BY_SUMMARY = "the organizer's summary"
HELD_BY_NO_ONE = "no one now"
BALLOT_SUMMARY = "Summary: {summary}\n\n"
VOTE_PLURALITY = "Vote for the final answer"
VOTE_APPROVAL = "List the options you approve of"
VOTE_RANKING = "Rank all the options"
VOTE_ORDERED = "{verb}, best first, as the final answer"
BALLOT = "{context}{ask} to the task ({task}):\n{options}"
BELIEF_QUESTION = "Is your answer to the task, {answer}, correct? Answer Yes or No."
"""A weighted vote's question, asked of each member after its own conversation (its P(True))."""

# The market of an economy of minds ---------------------------------------------------------------------------
MARKET_OTHER = "- {member} (holds {balance:.1f}): current answer {answer}"
MARKET_REPORT = ("You hold {balance:.1f}; rent is {rent:.1f} a round and a member who cannot pay leaves. The "
                 "others:\n{others}")
NO_OTHERS = "(none)"
HIRE = ("Task: {task}\n\n{report}\n\nYou may hire one member to do something that helps you answer better, paying "
        "on delivery.")
ARBITRATE = ("{client} offers {provider} {price:.1f} for this service, due {due}: {service}\n"
             "Is it a genuine, lawful service that can be delivered in that time at a fair price?")
DUE_NOW = "this round"
DUE_LATER = "within {rounds} rounds"
PERFORM = "Task: {task}\n\n{client} pays you {price:.1f} for: {service}\nDo it well; your answer field is your result."
DELIVERED = "{provider} did '{service}': {reasoning} (result: {answer})"
BOUGHT = "You bought this service: {delivered}\n\n"
ANSWER_AGAIN = "{bought}Give your answer to the task again: {task}"
VARIANT_ROLE = "{role} You are a newer variant of {parent}: try approaches it would not."

# Role-play (CAMEL) ------------------------------------------------------------------------------------------
DONE = "<TASK_DONE>"
USER_DUTY = ("You are the user in this collaboration: you give instructions and an assistant carries them out. "
             "Never do the work yourself and never ask the assistant for instructions. Give one instruction at a "
             f"time; when the assistant's work completes the whole task, reply with {DONE} alone.")
"""Told to the user agent with the task. Measured on the role-play benchmark (1.5B model): asked "give me
one instruction at a time", the user agent took the assistant's part in all 10 tasks ("Understood. Please
provide the first instruction.") and later echoed the assistant's code back; the assistant worked from
the task alone."""
SPECIFY = "Make this task specific and concrete in a few sentences, keeping its intent: {task}"
FIRST_INSTRUCTION = "Task: {task}\n\n{duty}\nWrite your first instruction now, starting with \"Instruction:\"."
CARRY_OUT = "The user working with you on this task ({task}) says:\n{instruction}\nCarry it out."
NEXT_INSTRUCTION = ("The assistant's reply:\n{solution}\n\nCheck the reply against the task. If it completes the whole "
                    "task, reply with {done} and nothing else; otherwise write your next instruction, starting with "
                    "\"Instruction:\".")

# Artists and critics ----------------------------------------------------------------------------------------
ANSWERER_ROLE = "You are an artist whose style is {style}. You say what to draw and how, vividly and briefly."
QUESTIONER_ROLE = "You ask an artist questions that sharpen what to draw."
ARTIST_LEADER_ROLE = ("You turn a conversation about a picture in the style of {style} into one proposal: a prompt for "
                      "a painter.")
CRITIC_ROLE = "You are a {profession} judging proposed pictures by what matters in your profession."
COLLECTOR_ROLE = "You report the proposal the critics chose as a precise painting prompt."
PROPOSAL = "({number}) {proposal}"
CRITIC_VOTE = "Theme: {task}\nProposals:\n{proposals}\nVote for the one you find best."
RESTATE = "The critics chose the proposal of {artist}: {proposal}\nRestate it as one clear prompt for a painter."

# A whole society standing as a member -----------------------------------------------------------------------
LATER_QUESTION = "{task}\n\n{question}"
"""A later question (an organizer's sub-question) as it reaches a sub-society, after the task it was first asked."""
