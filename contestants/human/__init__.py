"""A person at the table: the form a day asks of a human seat, and that form read into the
decision the market judges as it judges anyone's (form)."""
