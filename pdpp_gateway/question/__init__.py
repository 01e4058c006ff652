"""A question in a person's own words: the words that can find its answer (``words``) and the
passage of a long text that best holds them (``passages``). Pure functions of text."""
