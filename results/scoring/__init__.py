"""What the record measures: a match's metrics, collusion and deviation figures, sweeps' cells,
the rating fit and the composite score. Pure functions of the record: no database, no output."""
