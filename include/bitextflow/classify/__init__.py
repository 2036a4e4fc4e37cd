"""Trained domain classifiers: a tf-idf SVM baseline, a fine-tuned transformer and a linear probe on the
frozen sentence encoder, each giving a full probability distribution over the domain labels per sentence
(docs/classify.md).

They live in the submodules ``data``, ``offline``, ``baseline``, ``transformer``, ``probe``, ``training``,
``evaluation``, ``model``, ``offline_model`` and ``inference``, which are imported on demand, so this package stays free of
scikit-learn and torch. The relevance score from the pair config's weighted terms, which needs no
model, is :meth:`bitextflow.extract.relevance.TermMatcher.sentence_relevance`.
"""
