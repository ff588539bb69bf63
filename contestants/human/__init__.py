"""A person at the table: the `human` kind (seat), which puts each day's form and question
before a person through the run's desk and waits for what they submit; the form a day asks, read
into the decision the market judges as it judges anyone's (form); desks that play in one process
(desk)."""
