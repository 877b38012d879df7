"""The artist-critic society: a hierarchy where societies of artists propose and critics vote.

Each artist is a small monarchy in its own style: a questioner asks what to draw, an answerer with
the artist's style replies, a leader turns the exchange into one proposal. Critics of different
professions each vote for one proposal; the votes are counted by code; a collector restates the
winning proposal as a prompt; a painter (any image model, optional) draws it. With the paper's 26
artists and 50 critics that is 26 x 3 + 50 + 1 = 129 language-model members.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from noosphere.errors import ModelError, RuntimeFault
from noosphere.llm import Model
from noosphere.llm.forms import choice_form
from noosphere.llm.litellm_backend import import_litellm
from noosphere.society import prompts
from noosphere.society.decisions import hold_vote
from noosphere.society.hierarchy import SubSociety
from noosphere.society.member import Member
from noosphere.society.organisations import monarchy
from noosphere.society.phases import SolveAlone
from noosphere.society.session import Session, Statement
from noosphere.society.society import Society
from noosphere.society.voting import Ballot
from noosphere.trace import Event


class ImagePainted(Event):
    """The painter drew the winning proposal (`location` is a file path or URL), or failed (`error`)."""

    kind: str = "soc_image"
    prompt: str
    location: str = ""
    error: str = ""


class Painter(Protocol):
    async def paint(self, prompt: str) -> str:
        """Draw `prompt`; return where the image is (a file path or a URL)."""
        ...


@dataclass(frozen=True)
class LiteLLMPainter:
    """Any image-generation model LiteLLM reaches (e.g. `openai/dall-e-3`); the image is saved to `folder`,
    fetched when the provider answers with a link (which expires, and is often signed: a credential)."""

    model: str
    folder: Path
    transport: httpx.AsyncBaseTransport | None = None
    """How a linked image is fetched (the network by default)."""

    async def paint(self, prompt: str) -> str:
        """Draw `prompt` and save it; a provider's or the network's fault is a `ModelError` (a runtime fault)."""
        litellm = import_litellm()
        try:
            response: Any = await litellm.aimage_generation(prompt=prompt, model=self.model, n=1)
            image = response.data[0]
            if getattr(image, "b64_json", None):
                picture = base64.b64decode(image.b64_json)
            else:
                async with httpx.AsyncClient(transport=self.transport, timeout=60, follow_redirects=True) as client:
                    fetched = await client.get(str(image.url))
                    fetched.raise_for_status()
                    picture = fetched.content
        except (litellm.OpenAIError, httpx.HTTPError, binascii.Error) as exc:
            raise ModelError(f"litellm:{self.model}", f"{type(exc).__name__}: {exc}") from exc
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"painting-{hashlib.sha256(prompt.encode()).hexdigest()[:12]}.png"
        path.write_bytes(picture)
        return str(path)


@dataclass(frozen=True)
class CriticsVote:
    """Critics, who are not members, each vote for one proposal; code counts."""

    critics: list[Member]
    name: str = "execution"

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 2)
        proposals = session.latest()
        artists = list(proposals)
        if not artists:
            return
        choice = choice_form("CriticVote", "choice", [str(i + 1) for i in range(len(artists))],
                             "the number of the proposal", reason="reasoning", reason_chars=600)
        listing = "\n".join(prompts.PROPOSAL.format(number=i + 1, proposal=r.answer)
                            for i, r in enumerate(proposals.values()))

        async def vote(critic: Member) -> Any:
            return await critic.ask(prompts.CRITIC_VOTE.format(task=session.task, proposals=listing), choice)

        votes = await session.each(self.critics, self.name, round_, vote)
        ballots = session.ballots = [Ballot(name, (artists[int(v.choice) - 1],)) for name, v in votes.items()]
        if not ballots:  # every critic forfeited: a tally of nothing would draw a "winner" nobody chose
            return
        winner = hold_vote(session, ballots, artists)
        if winner is not None:
            session.decided_by, session.answer = winner, proposals[winner].answer


@dataclass(frozen=True)
class Collect:
    """The collector restates the winning proposal as one drawing prompt, then the painter draws it."""

    collector: Member
    painter: Painter | None = None
    name: str = "collect"

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 3)
        if session.answer is None:
            return
        restated = await session.each([self.collector], self.name, round_, lambda m: m.ask(
            prompts.RESTATE.format(artist=session.decided_by, proposal=session.answer), Statement))
        if restated:
            session.answer = restated[self.collector.name].answer
        if self.painter is not None:
            try:
                location = await self.painter.paint(session.answer)
            except RuntimeFault as exc:  # a provider's fault: the decision stands, the picture is missing
                session.trace.emit(ImagePainted(prompt=session.answer, error=f"{type(exc).__name__}: {exc}"[:500]))
            else:
                session.trace.emit(ImagePainted(prompt=session.answer, location=location))


def artist(name: str, style: str, model: Model, rounds: int = 1) -> SubSociety:
    """One artist: a questioner, an answerer in `style` and a leader, run as a monarchy."""
    society = monarchy([Member(f"{name}/answerer", model, prompts.ANSWERER_ROLE.format(style=style))],
                       Member(f"{name}/questioner", model, prompts.QUESTIONER_ROLE),
                       Member(f"{name}/leader", model, prompts.ARTIST_LEADER_ROLE.format(style=style)),
                       rounds=rounds)
    return SubSociety.of(name, society, role=f"an artist society in the style of {style}")


def artist_critic(model: Model, styles: list[str], professions: list[str], *, rounds: int = 1,
                  painter: Painter | None = None, seed: int = 0) -> Society:
    artists = [artist(f"artist-{i + 1}", style, model, rounds) for i, style in enumerate(styles)]
    critics = [Member(f"critic-{i + 1}", model, prompts.CRITIC_ROLE.format(profession=profession))
               for i, profession in enumerate(professions)]
    collector = Member("collector", model, prompts.COLLECTOR_ROLE)
    return Society("artist-critic", list(artists), [SolveAlone(), CriticsVote(critics), Collect(collector, painter)],
                   rounds=rounds, staff=[*critics, collector], seed=seed)
