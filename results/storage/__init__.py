"""The record's input and output: the database (its schema, every SQL statement, the day-log
codec) and the files results are read from. It stores and reads; it computes nothing."""
