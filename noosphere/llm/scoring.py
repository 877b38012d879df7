"""Option scores: how likely the model finds each of a few given continuations of a prompt.

A small model's self-reported numbers ("confidence": 0.9) carry little signal; the probability it
gives to each option as the continuation of the prompt often carries more. `Model.score_options`
returns `OptionScores`, built here from a backend's raw log-probabilities.

Length normalisation, named in `Normalise`:
- `"sum"`: the option's score is the sum of its tokens' log-probabilities, i.e. the probability of
  the whole string. Exact, but a longer option pays for every extra token.
- `"mean"`: the mean log-probability per token (the geometric mean of its token probabilities), so
  options of different lengths compete on the same footing.

Either way the scores are turned into probabilities over the given options by a softmax (the mass
the model puts outside the options is divided out), and the entropy of that distribution is kept.
With one-token options (Yes/No, A/B/C) both normalisations agree.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

from noosphere.errors import ModelError, UsageError

Normalise = Literal["sum", "mean"]
Method = Literal["logprob", "first_token", "samples"]
NORMALISATIONS: tuple[str, ...] = ("sum", "mean")
SCORE_METHODS: tuple[str, ...] = ("logprob", "samples")
"""What `Model.score_options` takes as `method` (`first_token` is what a provider's scores turn out to be)."""
FALLBACKS: tuple[str, ...] = ("error", "samples")
MAX_SAMPLES = 1024
"""Samples are model calls, all asked at once: past this many it is a typo, not a frequency estimate."""
YES, NO = "Yes", "No"


@dataclass(frozen=True)
class OptionScores:
    """Probabilities of the given options (summing to 1), with the raw log-probabilities behind them."""

    options: tuple[str, ...]
    probs: tuple[float, ...]
    logprobs: tuple[float, ...]
    """Summed log-probability of each option's tokens (for `samples`, the log of its frequency)."""
    tokens: tuple[int, ...]
    method: Method
    normalise: Normalise
    entropy: float
    """Entropy of `probs` in nats (0: certain; log(len(options)): no preference)."""

    @property
    def best(self) -> str:
        """The most probable option (the first listed among equals)."""
        return self.options[max(range(len(self.options)), key=lambda i: (self.probs[i], -i))]

    def prob(self, option: str) -> float:
        try:
            return self.probs[self.options.index(option)]
        except ValueError:
            raise UsageError(f"{option!r} is not one of the scored options {list(self.options)}") from None

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.options, self.probs, strict=True))


def check_options(options: tuple[str, ...] | list[str], normalise: str) -> tuple[str, ...]:
    """Refuse, before any call, an option set that cannot be scored."""
    if normalise not in NORMALISATIONS:
        raise UsageError(f"unknown normalisation {normalise!r}; use one of {', '.join(NORMALISATIONS)}")
    if isinstance(options, str | bytes):
        raise UsageError("options must be a list of strings, not one string")
    try:
        options = tuple(options)
    except TypeError:
        raise UsageError(f"options must be a list of strings, not {type(options).__name__}") from None
    if len(options) < 2:
        raise UsageError(f"score at least two options (got {len(options)})")
    for option in options:
        if not isinstance(option, str):
            raise UsageError(f"options must be strings, not {type(option).__name__}: {option!r}")
        if not option.strip():
            raise UsageError(f"option {option!r} is empty: it has no tokens to score")
    seen: set[str] = set()
    for option in options:
        if option in seen:
            raise UsageError(f"option {option!r} is listed twice; options must be distinct")
        seen.add(option)
    return options


def check_scoring_arguments(prefix: object, method: object, fallback: object, samples: object) -> None:
    """Refuse, before any call, what `score_options` takes besides the options that no call could use: a prefix
    that is no string, a method or fallback that is none of the known ones (never read as another), a number of
    samples that is no whole number from 1 to `MAX_SAMPLES` (checked even where no sample is drawn: it is a mistake)."""
    if not isinstance(prefix, str):
        raise UsageError(f"prefix must be a string, not {type(prefix).__name__}: {prefix!r}")
    if method not in SCORE_METHODS:
        raise UsageError(f"unknown scoring method {method!r}; use one of {', '.join(SCORE_METHODS)}")
    if fallback not in FALLBACKS:
        raise UsageError(f"unknown fallback {fallback!r}; use one of {', '.join(FALLBACKS)}")
    if isinstance(samples, bool) or not isinstance(samples, int):
        raise UsageError(f"samples must be a whole number, not {type(samples).__name__}: {samples!r}")
    if not 1 <= samples <= MAX_SAMPLES:
        raise UsageError(f"samples must be at least 1 and at most {MAX_SAMPLES} (each is a model call), not {samples}")


def softmax(scores: list[float]) -> tuple[float, ...]:
    finite = [s for s in scores if math.isfinite(s)]
    if not finite:
        return tuple(1.0 / len(scores) for _ in scores)
    top = max(finite)
    weights = [math.exp(s - top) if math.isfinite(s) else 0.0 for s in scores]
    total = sum(weights)
    return tuple(w / total for w in weights)


def entropy(probs: tuple[float, ...]) -> float:
    return -sum(p * math.log(p) for p in probs if p > 0)


def check_logprobs(model_id: str, options: tuple[str, ...], logprobs: tuple[float, ...]) -> None:
    """A backend's scores are scores only where they can be: none NaN or +inf, and not every one -inf (that would
    make a uniform guess look like a score). Otherwise a `ModelError` naming the option: the turn's fault, forfeited
    like any malformed reply, never turned into probabilities. Finite scores above 0 pass: a backend may give
    log-scores up to one constant (a plugin's, the scripted model's weights), which the softmax takes out; the
    local backend's are log-probabilities in float64, and a provider's first-token ones are checked there."""
    for option, logprob in zip(options, logprobs, strict=False):
        if math.isnan(logprob) or logprob == math.inf:
            raise ModelError(model_id, f"option {option!r} came back with log-probability {logprob}, which no "
                                       "probability has")
    if logprobs and all(logprob == -math.inf for logprob in logprobs):
        raise ModelError(model_id, f"every option of {list(options)} came back with probability 0: the scores "
                                   "cannot tell them apart")


def from_logprobs(options: tuple[str, ...], logprobs: tuple[float, ...], tokens: tuple[int, ...],
                  normalise: Normalise, method: Method) -> OptionScores:
    if len(logprobs) != len(options) or len(tokens) != len(options):
        raise ValueError("one log-probability and one token count per option")
    scores = [lp / max(n, 1) if normalise == "mean" else lp for lp, n in zip(logprobs, tokens, strict=True)]
    probs = softmax(scores)
    return OptionScores(options, probs, logprobs, tokens, method, normalise, entropy(probs))


def from_counts(options: tuple[str, ...], counts: list[int], normalise: Normalise) -> OptionScores:
    """Frequencies of sampled answers as probabilities (no smoothing: an option never drawn gets 0)."""
    total = sum(counts)
    probs = tuple(c / total for c in counts)
    logprobs = tuple(math.log(p) if p > 0 else -math.inf for p in probs)
    return OptionScores(options, probs, logprobs, tuple(1 for _ in options), "samples", normalise, entropy(probs))


SAMPLE_INSTEAD = "(score by sampling where the command offers it: --scores samples, or method='samples' in Python)"
"""What a caller whose provider gives no log-probabilities can do instead."""
NO_LOGPROBS = ("log-probabilities here: asked for them, the provider returned none, and every call would be the same "
               + SAMPLE_INSTEAD)
"""A provider that says it serves logprobs and then sends none cannot be scored on: a usage error that stops the run
at once (one line), not a fault each turn forfeits, which would let the run go on without its scores."""
NO_TOP_LOGPROBS = ("the first token's top alternatives (top_logprobs): the provider returned the reply's logprobs "
                   "without them, and every call would be the same " + SAMPLE_INSTEAD)
"""A server that ignores `top_logprobs` cannot score options by their first token: a usage error, as `NO_LOGPROBS`."""
PREFIX_REFUSED = ("scoring after a prefix (a provider scores only the first token of the reply); put the prefix's "
                  "words in the question instead")


def check_first_tokens(model_id: str, options: tuple[str, ...]) -> None:
    """Options a first token can tell apart, known before the call: none the same once case and surrounding spaces
    are ignored (the first token is matched so), and no two whose first words are the same or one the start of
    the other ("turn left" and "turn right", "1" and "10"): a token does not reach past a word, so theirs could
    be one token, which `first_token_scores` cannot give to either."""
    keys = [option.strip().lower() for option in options]
    same = sorted({option for option, key in zip(options, keys, strict=True) if keys.count(key) > 1})
    if same:
        raise UsageError(f"options {same} are the same once case and spaces are ignored; {model_id} scores only "
                         "their first token, which cannot tell them apart")
    words = [key.split()[0] if key.split() else key for key in keys]
    for i, j in itertools.combinations(range(len(options)), 2):
        if words[i].startswith(words[j]) or words[j].startswith(words[i]):
            raise UsageError(f"options {[options[i], options[j]]} begin alike ({words[i]!r}, {words[j]!r}); "
                             f"{model_id} scores only their first token, so make them differ in their first word "
                             "(letters, Yes/No)")


def choice_instruction(options: tuple[str, ...]) -> str:
    return "Answer with exactly one of: " + " | ".join(options)


def contextual_calibration(probs: tuple[float, ...], prior: tuple[float, ...]) -> tuple[float, ...]:
    """Divide each option's probability by its content-free prior and renormalise (W = diag(p_cf)^-1 of
    "Calibrate Before Use", Zhao et al. 2021): what the input adds to what the model prefers anyway."""
    floor = 1e-6
    adjusted = [p / max(q, floor) for p, q in zip(probs, prior, strict=True)]
    total = sum(adjusted)
    return tuple(a / total for a in adjusted)
