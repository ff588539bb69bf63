"""What the record says of a person's seat. Contestants write it (contestants.human) and results
reads it, two rooms on one floor that may not import each other, so it is named here once."""

PERSON_KIND = "human"
"""The kind of a contestant a person plays, as a tournament file names it and the record keeps
it (each registered contestant's kind): how results tells who sat at a seat."""

PERSON_TIME = "seconds_per_day"
"""The metric a person's seat reports in place of tokens and cost: the mean seconds its day's
pages waited for the person (contestants/human/seat.py)."""
