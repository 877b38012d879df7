"""Classification metrics as the papers report them: accuracy and weighted precision, recall, F1."""

from __future__ import annotations

from typing import Any

NO_ANSWER = "(no answer)"


def classification_report(gold: list[str], predicted: list[str | None], labels: tuple[str, ...]) -> dict[str, Any]:
    """Metrics in percent. A missing prediction counts as wrong and as a miss of the gold class."""
    # imported here: scikit-learn takes about a second to import, and every `noosphere` command imports this module
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    if not gold:
        return {"n": 0}
    predicted_or_none = [p if p is not None else NO_ANSWER for p in predicted]
    precision, recall, f1, _ = precision_recall_fscore_support(
        gold, predicted_or_none, labels=list(labels), average="weighted", zero_division=0)
    matrix = confusion_matrix(gold, predicted_or_none, labels=[*labels, NO_ANSWER])
    return {
        "n": len(gold),
        "accuracy": round(100 * accuracy_score(gold, predicted_or_none), 2),
        "precision": round(100 * float(precision), 2),
        "recall": round(100 * float(recall), 2),
        "f1": round(100 * float(f1), 2),
        "no_answer": predicted_or_none.count(NO_ANSWER),
        "confusion": {"gold": list(labels), "predicted": [*labels, NO_ANSWER],
                      "matrix": matrix[: len(labels)].tolist()},
    }
