"""One module per lesson, each registering its hidden tests (``spec.register``) when ``registry`` imports it."""
