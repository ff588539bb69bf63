"""What every model call of a run shares, whichever contestant kind makes it: the call
coordinator (response cache, endpoint limits, budget, broken models), what a run may spend and
has spent, what goes into a call and comes out, and the error that stops a run's calls. The
tournament layer reads these; a kind that calls models (contestants.llm) makes its calls
through them."""
