"""Train a bicleaner-ai lite model; runs INSIDE the bicleaner environment (.venv-bicleaner), by path.

``bicleaner-ai-train`` has no option for the SentencePiece vocabulary size and fixes it at 32,000, more
pieces than a corpus of a few tens of thousands of sentences can fill; this wrapper runs the same
training with ``vocab_size`` set (bicleaner-ai reads it from its arguments when present). Usage:

    python train_model.py VOCAB_SIZE <bicleaner-ai-train arguments...>
"""

import sys

from bicleaner_ai.bicleaner_ai_train import get_arguments, initialization, perform_training


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: train_model.py VOCAB_SIZE <bicleaner-ai-train arguments>", file=sys.stderr)
        return 2
    args = get_arguments(argv[1:])
    initialization(args)
    args.vocab_size = int(argv[0])
    perform_training(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
